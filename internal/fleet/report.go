package fleet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/failover"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/status"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// report sets what the reconcile found in the status, emits the events of what changed, and
// says when to look again.
func (r *CoordinatorReconciler) report(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, pl *placed, results map[string]memberwork.Result) ctrl.Result {
	obs := observation(p, w, pl, results)
	orig := p.DeepCopy()
	p.Status = status.Compute(p.Status, obs)
	reportFailover(r.event, p, orig, w, results)
	for m, d := range w.denied {
		if _, ok := results[m]; !ok {
			results[m] = memberwork.Denied(m, w.ids[m], d)
		}
	}
	emitEvents(r.event, p, orig, results, pl)
	if obs.Terminated != nil {
		ctrl.LoggerFrom(ctx).Info("terminated", "reason", obs.Terminated.Reason, "cluster", obs.Terminated.Cluster)
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: r.looks.nextLook(p, w, obs, pl, results)}
}

// observation gathers what the status is computed from.
func observation(p *urutauv1alpha1.CDCPipeline, w *world, pl *placed, results map[string]memberwork.Result) status.Observation {
	d := pl.decision
	obs := status.Observation{
		Generation: p.Generation, Now: status.Now(), Selected: w.selected, Unknown: w.unknown,
		Waiting: d.Wait, SpecHash: w.specHash, LeaseName: w.leaseName, Refused: w.refused, Held: w.held,
		Deregistered: pl.deregistered, Terminated: firstTerminal(p, d.Run, results),
		Lease: status.LeaseView{Known: true, Name: w.leaseName, Source: w.source, Holder: d.Holder, HolderLive: d.HolderLive, Blocking: d.Blocking, Namespace: p.Namespace},
	}
	shown := sets.New[string]()
	for _, m := range d.Run {
		obs.Members = append(obs.Members, results[m].Obs)
		shown.Insert(m)
	}
	for _, m := range d.Wait {
		obs.Members = append(obs.Members, status.MemberObservation{Name: m, ClusterID: w.ids[m], Phase: urutauv1alpha1.ClusterPending,
			Message: "waiting for " + status.BlockingMessage(obs.Lease) + " before starting here"})
		shown.Insert(m)
	}
	show := func(o status.MemberObservation) {
		if !shown.Has(o.Name) {
			obs.Members = append(obs.Members, o)
			shown.Insert(o.Name)
		}
	}
	for _, m := range sortedKeys(w.denied) {
		show(memberwork.Denied(m, w.ids[m], w.denied[m]).Obs)
	}
	for _, m := range sortedKeys(w.refused) {
		show(status.MemberObservation{Name: m, ClusterID: w.ids[m], Phase: urutauv1alpha1.ClusterPending, Message: w.refused[m]})
	}
	for _, m := range sortedKeys(w.held) {
		if !slicesContains(departedNames(d.Departed), m) {
			show(status.MemberObservation{Name: m, ClusterID: w.ids[m], Phase: urutauv1alpha1.ClusterPending, Message: w.held[m]})
		}
	}
	for _, m := range sortedKeys(w.unidentified) {
		phase := urutauv1alpha1.ClusterPending
		if members.IsUnreachable(w.unidentified[m]) {
			phase = urutauv1alpha1.ClusterUnreachable
		}
		show(status.MemberObservation{Name: m, Phase: phase, Message: w.unidentified[m].Error()})
	}
	inventory := sets.New(d.Run...)
	for _, e := range d.Departed {
		inventory.Insert(e.Cluster)
		if !shown.Has(e.Cluster) {
			shown.Insert(e.Cluster)
			obs.Members = append(obs.Members, departedObservation(e, pl.departed[lease.KeyOf(e)], &obs))
			continue
		}
		if e.State != urutauv1alpha1.LeaseMemberActive {
			continue // nothing a person can clear would ever take it out of the row
		}
		// The name reaches another cluster now (an entry pointed elsewhere and accepted): the
		// cluster it reached before may still run a reader, which holds the start here.
		m := departedObservation(e, pl.departed[lease.KeyOf(e)], &obs)
		if i := slices.IndexFunc(obs.Members, func(o status.MemberObservation) bool { return o.Name == e.Cluster }); i >= 0 && m.Message != "" {
			obs.Members[i].Message += "; identity " + e.ClusterID + ", where this name pointed before: " + m.Message
		}
	}
	obs.Inventory = sets.List(inventory)
	return obs
}

// departedObservation is how a member the pipeline left shows, and what it holds back.
func departedObservation(e urutauv1alpha1.LeaseMember, d memberwork.Departed, obs *status.Observation) status.MemberObservation {
	m := status.MemberObservation{Name: e.Cluster, ClusterID: e.ClusterID, Phase: urutauv1alpha1.ClusterDeleting, Message: d.Message}
	switch {
	case e.State == urutauv1alpha1.LeaseMemberGone:
		m.Message = "confirmed gone: emptied if it ever answers again"
	case d.State == lease.Unreachable && slicesContains(obs.Deregistered, e.Cluster):
		m.Phase = urutauv1alpha1.ClusterOrphaned
	case d.State == lease.Unreachable && !d.FencedUntil.IsZero():
		m.Phase = urutauv1alpha1.ClusterUnreachable
		m.Message = fmt.Sprintf("no longer placed here and does not answer; its coordinator is fenced and stops by itself: the move completes at about %s without a person (%s)",
			d.FencedUntil.UTC().Truncate(time.Second).Format(time.RFC3339), d.Message)
	case d.State == lease.Unreachable:
		m.Phase = urutauv1alpha1.ClusterUnreachable
		m.Message = "no longer placed here, but the coordinator cannot be removed: " + d.Message
	}
	if d.State == lease.Unreachable && e.State == urutauv1alpha1.LeaseMemberActive && len(obs.Waiting) > 0 && d.FencedUntil.IsZero() {
		obs.BlockedBy = appendUnique(obs.BlockedBy, e.Cluster)
	} else if e.State != urutauv1alpha1.LeaseMemberGone {
		obs.Removing = appendUnique(obs.Removing, e.Cluster)
	}
	return m
}

// firstTerminal is the first member's termination, stamped for this generation.
func firstTerminal(p *urutauv1alpha1.CDCPipeline, run []string, results map[string]memberwork.Result) *urutauv1alpha1.Terminated {
	for _, m := range run {
		if t := results[m].Terminal; t != nil {
			out := t.DeepCopy()
			out.At = nowRFC3339()
			out.ObservedGeneration = p.Generation
			return out
		}
	}
	return nil
}

// lookIntervals are the reconciler's retry (RetryInterval), wait (WaitInterval) and Secret
// recheck (SecretRecheckInterval) intervals.
type lookIntervals struct {
	retry, wait, secretRecheck time.Duration
}

// nextLook is when to reconcile again without an event: soon while departed members drain, at
// the retry interval while something outside the hub is awaited, at the earliest backoff of a
// failing member; never while all is done (idle is quiet).
func (li lookIntervals) nextLook(p *urutauv1alpha1.CDCPipeline, w *world, obs status.Observation, pl *placed, results map[string]memberwork.Result) time.Duration {
	var after time.Duration
	soonest := func(d time.Duration) {
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	// Lease changes and members answering again bring the pipeline back on their own; this is
	// the safety net. How soon a departed member is looked at again is its own (below).
	if len(obs.Removing) > 0 || len(obs.Waiting) > 0 || len(obs.BlockedBy) > 0 || len(pl.deregistered) > 0 || len(obs.Refused) > 0 || len(w.unidentified) > 0 || len(w.held) > 0 {
		soonest(li.retry)
	}
	if len(pl.decision.Run) > 0 && (len(tenancy.SecretRefs(&p.Spec)) > 0 || (w.source != nil && len(w.selected) > 1)) {
		// Members' Secrets make no event the hub watches: a Secret closed to the fleet, or one
		// repointed at the database another member reads, is found within this interval.
		soonest(li.secretRecheck)
	}
	for _, d := range pl.departed {
		switch {
		case d.Failed || d.State == lease.Draining:
			// A pass that failed (a member refusing, or too slow), or objects waiting on
			// someone else's finalizer: nothing the hub does sooner helps, and a member that
			// keeps failing must not cost its LISTs every WaitInterval.
			soonest(li.retry)
		case d.State == lease.Holding:
			// A member that answers and still holds a reader, an entry confirmed gone included
			// (not in Removing), or a write it may still commit (fenceLateWrites): pods going
			// away make no event the hub watches, and a move waits on them.
			soonest(min(li.wait, li.retry))
		}
		if !d.FencedUntil.IsZero() {
			// The fence's bound passes with no event: look then.
			soonest(max(time.Until(d.FencedUntil), 0) + 100*time.Millisecond)
		}
	}
	if fo := w.failover; fo != nil {
		if !fo.Decision.RecheckAt.IsZero() {
			soonest(max(time.Until(fo.Decision.RecheckAt), 0) + 100*time.Millisecond)
		}
		if failover.Stuck(fo.Decision) || failover.FailingOver(p.Status.Failover) {
			soonest(li.retry)
		}
	}
	for _, res := range results {
		switch {
		case res.RetryIn > 0:
			soonest(res.RetryIn)
		case res.Retry, res.Unreachable:
			soonest(li.retry)
		}
	}
	return after
}

func departedNames(es []urutauv1alpha1.LeaseMember) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Cluster)
	}
	return out
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func appendUnique(s []string, v string) []string {
	if slicesContains(s, v) {
		return s
	}
	return append(s, v)
}
