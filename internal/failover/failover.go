// Package failover decides where a failover placement (spec.placement.failover) runs, and what
// its status, condition, events and metrics say: functions of the candidates, their health and
// the status before. The move itself is the reconciler's, under the reader lease.
package failover

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/status"
)

// A failover placement (spec.placement.failover) runs the pipeline on one member at a time: the
// first healthy candidate when it is first placed, the same member for as long as it is not lost
// for the threshold, then the next healthy candidate in preference order. It never moves back by
// itself; a person moves it with urutau.io/failover-to. The move itself is an ordinary placement
// move under the reader lease (stop before start): what makes it complete while the lost member
// does not answer is the fence (internal/fencelease), since a failover placement is
// always fenced.
//
// The member it runs on is a decision, not an observation, so it is kept in
// status.failover.member; without it (a new pipeline, a status lost), the member the pipeline's
// lease entry records Active is where it runs.

// Event reasons of failover placements.
const (
	EventStarted   = "FailoverStarted"
	EventCompleted = "FailoverCompleted"
	EventRequested = "FailoverRequested"
	EventStuck     = "FailoverNoCandidate"
)

// ConditionFailingOver is present (and True) only while a failover placement moves to another
// member and the coordinator there is not ready yet.
const ConditionFailingOver = "FailingOver"

// Candidates are the members a failover placement may run on, most preferred first:
// spec.placement.failover.candidates in their order, then the members whose inventory labels
// match candidateSelector, by name. Members the inventory lacks are left out.
func Candidates(p *urutauv1alpha1.CDCPipeline, members []inventory.Member) ([]string, error) {
	fo := p.Spec.Placement.Failover
	if fo == nil {
		return nil, nil
	}
	known := map[string]inventory.Member{}
	for _, m := range members {
		known[m.Name] = m
	}
	var out []string
	for _, c := range fo.Candidates {
		if _, ok := known[c]; ok && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if fo.CandidateSelector == nil {
		return out, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(fo.CandidateSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.placement.failover.candidateSelector: %w", err)
	}
	if sel.Empty() {
		return out, nil
	}
	for _, name := range slices.Sorted(maps.Keys(known)) {
		if sel.Matches(labels.Set(known[name].Labels)) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// Health is what the hub's health checks know of one candidate.
type Health struct {
	// Known: checked at least once by this hub; Up: answered its last check.
	Known, Up bool
	// LostSince is when it was last known answering, while it does not.
	LostSince time.Time
}

// Input is what Choose decides from.
type Input struct {
	Candidates []string
	// Current is where the pipeline runs or is moving to, "" when nowhere yet.
	Current string
	// Requested is the member urutau.io/failover-to names, "" when none.
	Requested string
	Health    map[string]Health
	Threshold time.Duration
	Now       time.Time
}

// Decision is Choose's answer.
type Decision struct {
	// Target is the member to run on, "" when there is none to run on.
	Target string
	// Reason is why Target differs from Current (urutauv1alpha1.Failover*), "" when it does not.
	Reason string
	// LostSince is when Current was last known answering, when it is lost.
	LostSince time.Time
	// Message says what a person should know: why it moved, or why it cannot.
	Message string
	// RecheckAt is when Current's loss reaches the threshold, while it is lost but not for long.
	RecheckAt time.Time
	// RequestIgnored says why Requested was not taken.
	RequestIgnored string
}

// Choose decides which candidate a failover placement runs on. It is pure.
func Choose(in Input) Decision {
	healthy := func(m string) bool { h := in.Health[m]; return h.Known && h.Up }
	notDown := func(m string) bool { h := in.Health[m]; return !h.Known || h.Up }
	var d Decision
	if in.Requested != "" {
		switch {
		case !slices.Contains(in.Candidates, in.Requested):
			d.RequestIgnored = fmt.Sprintf("%s names %q, which is not a candidate of spec.placement.failover", urutauv1alpha1.AnnotationFailoverTo, in.Requested)
		case !notDown(in.Requested):
			d.RequestIgnored = fmt.Sprintf("%s names %q, which does not answer the hub", urutauv1alpha1.AnnotationFailoverTo, in.Requested)
		case in.Requested == in.Current:
			d.RequestIgnored = fmt.Sprintf("%s names %q, where the pipeline runs already", urutauv1alpha1.AnnotationFailoverTo, in.Requested)
		default:
			d.Target, d.Reason = in.Requested, urutauv1alpha1.FailoverRequested
			d.Message = fmt.Sprintf("moving from %q to %q as asked (%s)", in.Current, in.Requested, urutauv1alpha1.AnnotationFailoverTo)
			return d
		}
	}
	first := func(ok func(string) bool) string {
		for _, m := range in.Candidates {
			if m != in.Current && ok(m) {
				return m
			}
		}
		return ""
	}
	switch {
	case in.Current == "":
		d.Target = first(healthy)
		if d.Target == "" {
			d.Target = first(notDown)
		}
		if d.Target == "" {
			d.Message = "no candidate of spec.placement.failover answers the hub"
		}
		return d
	case !slices.Contains(in.Candidates, in.Current):
		d.Target, d.Reason = first(healthy), urutauv1alpha1.FailoverCandidateRemoved
		d.Message = fmt.Sprintf("cluster %q is no longer a candidate: moving to %q", in.Current, d.Target)
		if d.Target == "" {
			d.Reason, d.Message = "", fmt.Sprintf("cluster %q is no longer a candidate, and no other candidate answers the hub", in.Current)
		}
		return d
	}
	d.Target = in.Current
	h := in.Health[in.Current]
	if !h.Known || h.Up {
		return d
	}
	d.LostSince = h.LostSince
	if lost := in.Now.Sub(h.LostSince); lost < in.Threshold {
		d.RecheckAt = h.LostSince.Add(in.Threshold)
		d.Message = fmt.Sprintf("cluster %q has not answered for %s; the pipeline moves after %s", in.Current, lost.Round(time.Second), in.Threshold)
		return d
	}
	next := first(healthy)
	if next == "" {
		d.Message = fmt.Sprintf("cluster %q has not answered for %s, and no other candidate answers the hub: the pipeline stays", in.Current, in.Now.Sub(h.LostSince).Round(time.Second))
		return d
	}
	d.Target, d.Reason = next, urutauv1alpha1.FailoverMemberLost
	d.Message = fmt.Sprintf("cluster %q has not answered since %s (threshold %s): moving to %q", in.Current, h.LostSince.UTC().Format(time.RFC3339), in.Threshold, next)
	return d
}

// Threshold is the placement's threshold, or the default.
func Threshold(fo *urutauv1alpha1.FailoverPlacement) time.Duration {
	if fo.Threshold != nil && fo.Threshold.Duration > 0 {
		return fo.Threshold.Duration
	}
	return urutauv1alpha1.DefaultFailoverThreshold
}

// View is what a reconcile decided for a failover placement.
type View struct {
	Decision  Decision
	Current   string
	Requested string
}

// statusAfter is status.failover after a reconcile: prev, with the member chosen now, the move
// when it is one, and when the new member became ready. ready tells that the coordinator on the
// target is ready now. It is pure.
func statusAfter(prev *urutauv1alpha1.FailoverStatus, v *View, ready bool, now metav1.Time) *urutauv1alpha1.FailoverStatus {
	if v == nil {
		return nil
	}
	out := &urutauv1alpha1.FailoverStatus{}
	if prev != nil {
		out = prev.DeepCopy()
	}
	d := v.Decision
	switch {
	case d.Target == "" || d.Target == out.Member:
	case out.Member == "" && d.Reason == "":
		out.Member, out.Since = d.Target, now
	default:
		out.Member, out.Since = d.Target, now
		move := &urutauv1alpha1.FailoverMove{From: v.Current, To: d.Target, Reason: d.Reason, DecidedAt: now}
		if !d.LostSince.IsZero() {
			lost := metav1.NewTime(d.LostSince.Truncate(time.Second))
			move.LostSince = &lost
		}
		out.Last = move
		if d.Reason == urutauv1alpha1.FailoverMemberLost {
			out.Failovers++
		}
	}
	if l := out.Last; l != nil && l.To == out.Member && l.ReadyAt == nil && ready {
		at := now
		l.ReadyAt = &at
		from := l.DecidedAt
		if l.LostSince != nil {
			from = *l.LostSince
		}
		l.ReaderGapSeconds = int64(at.Sub(from.Time).Seconds())
	}
	return out
}

// Report sets status.failover and the FailingOver condition of p, emits the events of a move
// and counts it. v is this reconcile's decision (nil: not a failover placement), ready tells that
// the coordinator on its target is ready now, orig is p as the reconcile read it.
func Report(emit Emit, p, orig *urutauv1alpha1.CDCPipeline, v *View, ready bool) {
	if v == nil {
		p.Status.Failover = nil
		meta.RemoveStatusCondition(&p.Status.Conditions, ConditionFailingOver)
		return
	}
	p.Status.Failover = statusAfter(orig.Status.Failover, v, ready, metav1.Now().Rfc3339Copy())
	setCondition(p, v)
	events(emit, p, orig.Status.Failover, orig.Status.Conditions, v)
}

// FailingOver tells whether a move of status st is in progress: decided, not ready yet.
func FailingOver(st *urutauv1alpha1.FailoverStatus) bool {
	return st != nil && st.Last != nil && st.Last.To == st.Member && st.Last.ReadyAt == nil
}

// Reasons of the FailingOver condition.
const (
	ReasonNoCandidate = "NoHealthyCandidate"
)

// setCondition sets FailingOver while a move is in progress, or while the member the
// pipeline runs on is lost past the threshold and no candidate can take it; removes it otherwise.
func setCondition(p *urutauv1alpha1.CDCPipeline, v *View) {
	st, d := p.Status.Failover, v.Decision
	c := status.Conditions{Into: &p.Status.Conditions, Generation: p.Generation, Now: status.Now()}
	switch {
	case FailingOver(st):
		msg := fmt.Sprintf("moving from %q to %q (%s); the coordinator there is not ready yet", st.Last.From, st.Last.To, st.Last.Reason)
		c.Set(ConditionFailingOver, metav1.ConditionTrue, st.Last.Reason, msg)
	case Stuck(d):
		c.Set(ConditionFailingOver, metav1.ConditionTrue, ReasonNoCandidate, d.Message)
	default:
		c.PresentWhen(ConditionFailingOver, false, "", "")
	}
}

// Stuck tells a decision that should move the pipeline and cannot: no candidate answers.
func Stuck(d Decision) bool {
	return d.Target == "" || (d.Reason == "" && !d.LostSince.IsZero() && d.RecheckAt.IsZero())
}

// events reports a move when it is decided and when it completes, a failover that finds
// no candidate (once, when it starts), and a request that was not taken.
func events(emit Emit, p *urutauv1alpha1.CDCPipeline, prev *urutauv1alpha1.FailoverStatus, prevConds []metav1.Condition, v *View) {
	st := p.Status.Failover
	if v.Decision.RequestIgnored != "" {
		emit(p, corev1.EventTypeWarning, EventRequested, "Failover", "%s: ignored and removed", v.Decision.RequestIgnored)
	}
	var prevLast *urutauv1alpha1.FailoverMove
	if prev != nil {
		prevLast = prev.Last
	}
	if l := st.Last; l != nil && (prevLast == nil || !l.DecidedAt.Equal(&prevLast.DecidedAt) || l.To != prevLast.To) {
		reason := EventStarted
		if l.Reason == urutauv1alpha1.FailoverRequested {
			reason = EventRequested
		}
		emit(p, corev1.EventTypeWarning, reason, "Failover", "%s", v.Decision.Message)
		failovers.WithLabelValues(l.Reason).Inc()
	}
	if l := st.Last; l != nil && l.ReadyAt != nil && (prevLast == nil || prevLast.ReadyAt == nil || prevLast.To != l.To) {
		emit(p, corev1.EventTypeNormal, EventCompleted, "Failover",
			"the coordinator runs on %q (from %q, %s); the pipeline had no reader for about %ds", l.To, l.From, l.Reason, l.ReaderGapSeconds)
		failoverReaderGap.Observe(float64(l.ReaderGapSeconds))
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, ConditionFailingOver); c != nil && c.Reason == ReasonNoCandidate {
		if o := meta.FindStatusCondition(prevConds, ConditionFailingOver); o == nil || o.Reason != c.Reason {
			emit(p, corev1.EventTypeWarning, EventStuck, "Failover", "%s", c.Message)
		}
	}
}

// Named tells whether member is named a candidate of p's failover placement: its
// health matters to where p runs (a member selected by candidateSelector is not told here; the
// retry interval covers it).
func Named(p *urutauv1alpha1.CDCPipeline, member string) bool {
	fo := p.Spec.Placement.Failover
	return fo != nil && slices.Contains(fo.Candidates, member)
}

// Emit records an event about p (the reconciler's recorder).
type Emit func(p *urutauv1alpha1.CDCPipeline, eventType, reason, action, note string, args ...any)
