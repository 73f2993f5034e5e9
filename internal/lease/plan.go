package lease

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// Name is the name of the ReaderLease of source, or of the pipeline uid when its source has
// no reader identity. It is derived from the identity alone, so every hub replica and every
// pipeline of that source meets at the same object. A hash keeps it a valid name whatever the
// value holds; the readable prefix is for people.
func Name(source *urutauv1alpha1.SourceIdentity, uid types.UID) string {
	if source == nil {
		return "pipeline-" + strings.ToLower(string(uid))
	}
	sum := sha256.Sum256([]byte(source.Kind + "\x00" + source.Field + "\x00" + source.Value))
	return dnsLabelPrefix(source.Kind+"-"+source.Value, 40) + "-" + hex.EncodeToString(sum[:])[:12]
}

// dnsLabelPrefix keeps at most n characters of s that a DNS label allows, lowercased, with runs
// of anything else turned into one '-'.
func dnsLabelPrefix(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= n {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "source"
	}
	return out
}

// Key identifies one lease entry: the list-map key of ReaderLeaseSpec.Members.
type Key struct {
	Cluster, ClusterID string
	Pipeline           types.UID
}

func KeyOf(e urutauv1alpha1.LeaseMember) Key {
	return Key{Cluster: e.Cluster, ClusterID: e.ClusterID, Pipeline: e.PipelineUID}
}

// Input is what Plan decides from, for one live pipeline.
type Input struct {
	// Self is the pipeline reconciled; Namespace the member namespace of its objects.
	Self      urutauv1alpha1.PipelineRef
	Namespace string
	// Source is the pipeline's reader identity, nil when its source has none.
	Source *urutauv1alpha1.SourceIdentity
	// Current is the lease as read, nil when there is none.
	Current *urutauv1alpha1.ReaderLease
	// HolderGone: Current's holder is not Self and is deleted, being deleted or re-created.
	HolderGone bool
	// Targets are the members Self is to run on, each with the identity read there (known, and
	// accepted when it changed).
	Targets map[string]string
	// Observed is the state found by this reconcile's cleanup of each entry of Self that is not a
	// target; an entry not observed (its member was not contacted) keeps its state.
	Observed map[Key]State
	// Confirmed are member names a person confirmed gone.
	Confirmed sets.Set[string]
	// Fence is the fence of a fenced placement (its BoundSeconds), recorded on the entries it
	// runs on; nil for an unfenced one (internal/fencelease).
	Fence *urutauv1alpha1.LeaseMemberFence
	// FenceVerified are targets where the hub found every coordinator pod running under the fence.
	FenceVerified sets.Set[string]
	// FenceDrained are departed entries whose fence bound has passed since the hub stopped
	// renewing them, with the reason to record: no coordinator of theirs can run.
	FenceDrained map[Key]string
	Now          metav1.Time
}

// Decision is Plan's answer. Every list is sorted.
type Decision struct {
	// Lease is the lease to record (its Spec; nil when Self must leave it as it is).
	Lease *urutauv1alpha1.ReaderLease
	// Changed: Lease differs from Current and must be written before any member is.
	Changed bool
	// Run are the targets Self runs on now; Wait the targets that must wait.
	Run, Wait []string
	// Holder is set when another pipeline holds the lease and Self may run nowhere; HolderLive
	// tells that it is a live pipeline (the source is in use), not a gone one whose readers
	// have not stopped yet.
	Holder     *urutauv1alpha1.PipelineRef
	HolderLive bool
	// Blocking are the Active entries that keep Wait waiting.
	Blocking []urutauv1alpha1.LeaseMember
	// Departed are Self's entries on members it no longer runs on, after this decision.
	Departed []urutauv1alpha1.LeaseMember
	// Confirmed are the members a person's confirmation turned Gone in this decision.
	Confirmed []string
	// Fenced are the members whose entry the fence's bound turned Gone in this decision.
	Fenced []string
	// Dropped are the members whose entry of Self was removed (emptied).
	Dropped []string
}

// Plan is the stop-before-start decision for a live pipeline, over the whole fleet. It is
// pure: the reconciler writes Lease when Changed, and only then applies to Run.
func Plan(in Input) Decision {
	next := startingLease(in)
	var d Decision
	if next.Spec.Holder.UID != in.Self.UID {
		if holder, blocking := takeOver(next, in); holder != nil {
			d.Holder, d.HolderLive, d.Blocking, d.Wait = holder, !in.HolderGone, blocking, sortedKeys(in.Targets)
			return d
		}
		next.Spec.Holder = in.Self
	}
	d.Confirmed, d.Fenced, d.Dropped = settleDeparted(next, in)
	blocking := blockingEntries(next.Spec.Members, in.Self.UID, in.Targets)
	fresh := sets.New[string]()
	for _, m := range sortedKeys(in.Targets) {
		k := Key{Cluster: m, ClusterID: in.Targets[m], Pipeline: in.Self.UID}
		i := slices.IndexFunc(next.Spec.Members, func(e urutauv1alpha1.LeaseMember) bool { return KeyOf(e) == k })
		switch {
		case i >= 0 && next.Spec.Members[i].State == urutauv1alpha1.LeaseMemberActive:
			d.Run = append(d.Run, m)
		case len(blocking) > 0:
			d.Wait = append(d.Wait, m)
		case i >= 0:
			next.Spec.Members[i].State, next.Spec.Members[i].Reason, next.Spec.Members[i].Since = urutauv1alpha1.LeaseMemberActive, "", in.Now
			d.Run = append(d.Run, m)
			fresh.Insert(m)
		default:
			next.Spec.Members = append(next.Spec.Members, newEntry(in, m))
			d.Run = append(d.Run, m)
			fresh.Insert(m)
		}
	}
	recordFence(next.Spec.Members, in, sets.New(d.Run...), fresh)
	if len(d.Wait) > 0 {
		d.Blocking = blocking
	}
	SortEntries(next.Spec.Members)
	for _, e := range next.Spec.Members {
		if e.PipelineUID == in.Self.UID && in.Targets[e.Cluster] != e.ClusterID {
			d.Departed = append(d.Departed, e)
		}
	}
	d.Lease = next
	d.Changed = in.Current == nil || !SpecEqual(in.Current.Spec, next.Spec)
	return d
}

// startingLease is a copy of the current lease, or a new one held by Self.
func startingLease(in Input) *urutauv1alpha1.ReaderLease {
	if in.Current != nil {
		return in.Current.DeepCopy()
	}
	return &urutauv1alpha1.ReaderLease{
		ObjectMeta: metav1.ObjectMeta{Name: Name(in.Source, in.Self.UID)},
		Spec:       urutauv1alpha1.ReaderLeaseSpec{Source: in.Source.DeepCopy(), Holder: in.Self},
	}
}

// takeOver tells whether Self may take the lease from its holder: only once the holder is gone
// and no entry of another pipeline may still run a reader. Otherwise it returns the holder and
// what blocks.
func takeOver(l *urutauv1alpha1.ReaderLease, in Input) (*urutauv1alpha1.PipelineRef, []urutauv1alpha1.LeaseMember) {
	holder := l.Spec.Holder
	if !in.HolderGone {
		return &holder, activeEntries(l.Spec.Members, func(e urutauv1alpha1.LeaseMember) bool { return e.PipelineUID == holder.UID })
	}
	if blocking := activeEntries(l.Spec.Members, func(e urutauv1alpha1.LeaseMember) bool { return e.PipelineUID != in.Self.UID }); len(blocking) > 0 {
		return &holder, blocking
	}
	return nil, nil
}

// settleDeparted applies what this reconcile's cleanup found to Self's entries on members it no
// longer runs on: emptied ones go, drained ones stop counting as readers, and unanswered ones
// turn Gone when a person confirmed them gone or their fence's bound has passed.
func settleDeparted(l *urutauv1alpha1.ReaderLease, in Input) (confirmed, fenced, dropped []string) {
	kept := l.Spec.Members[:0]
	for _, e := range l.Spec.Members {
		st, observed := in.Observed[KeyOf(e)]
		if e.PipelineUID != in.Self.UID || in.Targets[e.Cluster] == e.ClusterID || !observed {
			kept = append(kept, e)
			continue
		}
		switch {
		case st == Empty:
			dropped = append(dropped, e.Cluster)
			continue
		case st == Draining && e.State == urutauv1alpha1.LeaseMemberActive:
			e.State, e.Since = urutauv1alpha1.LeaseMemberDrained, in.Now
		case st == Holding && e.State == urutauv1alpha1.LeaseMemberDrained:
			// A reader is back where none was: count it again.
			e.State, e.Since = urutauv1alpha1.LeaseMemberActive, in.Now
		case st == Unreachable && e.State == urutauv1alpha1.LeaseMemberActive && in.FenceDrained[KeyOf(e)] != "":
			e.State, e.Since, e.Reason = urutauv1alpha1.LeaseMemberGone, in.Now, in.FenceDrained[KeyOf(e)]
			fenced = append(fenced, e.Cluster)
		case st == Unreachable && e.State == urutauv1alpha1.LeaseMemberActive && in.Confirmed.Has(e.Cluster):
			e.State, e.Since = urutauv1alpha1.LeaseMemberGone, in.Now
			e.Reason = "confirmed gone with " + urutauv1alpha1.AnnotationConfirmGone + " while it did not answer"
			confirmed = append(confirmed, e.Cluster)
		}
		kept = append(kept, e)
	}
	l.Spec.Members = kept
	return sortedUnique(confirmed), sortedUnique(fenced), sortedUnique(dropped)
}

// recordFence keeps each of Self's entries' fence up to date: on the members it runs on (run),
// the fence of a fenced placement, Renewing, its bound never lowered while a coordinator rendered
// with the old one may run, and Verified when the entry starts now (fresh: no reader of the
// pipeline is there, and the one that starts is rendered fenced) or the hub found every
// coordinator pod fenced; none for an unfenced placement. On the members it left, the fence is
// kept but no longer Renewing: the bound runs.
func recordFence(entries []urutauv1alpha1.LeaseMember, in Input, run, fresh sets.Set[string]) {
	for i := range entries {
		e := &entries[i]
		if e.PipelineUID != in.Self.UID {
			continue
		}
		if in.Targets[e.Cluster] != e.ClusterID || !run.Has(e.Cluster) {
			if e.Fence != nil && in.Targets[e.Cluster] != e.ClusterID {
				e.Fence.Renewing = false
			}
			continue
		}
		if in.Fence == nil {
			e.Fence = nil
			continue
		}
		f := urutauv1alpha1.LeaseMemberFence{BoundSeconds: in.Fence.BoundSeconds, Renewing: true}
		if e.Fence != nil {
			f.BoundSeconds = max(f.BoundSeconds, e.Fence.BoundSeconds)
			f.Verified = e.Fence.Verified
		}
		f.Verified = f.Verified || fresh.Has(e.Cluster) || in.FenceVerified.Has(e.Cluster)
		e.Fence = &f
	}
}

// blockingEntries are the Active entries that stop self from starting anywhere: every Active
// entry but self's own on the members it stays on.
func blockingEntries(entries []urutauv1alpha1.LeaseMember, self types.UID, targets map[string]string) []urutauv1alpha1.LeaseMember {
	return activeEntries(entries, func(e urutauv1alpha1.LeaseMember) bool {
		return e.PipelineUID != self || targets[e.Cluster] != e.ClusterID
	})
}

func activeEntries(entries []urutauv1alpha1.LeaseMember, match func(urutauv1alpha1.LeaseMember) bool) []urutauv1alpha1.LeaseMember {
	var out []urutauv1alpha1.LeaseMember
	for _, e := range entries {
		if e.State == urutauv1alpha1.LeaseMemberActive && match(e) {
			out = append(out, e)
		}
	}
	return out
}

func newEntry(in Input, member string) urutauv1alpha1.LeaseMember {
	return urutauv1alpha1.LeaseMember{
		Cluster: member, ClusterID: in.Targets[member], PipelineUID: in.Self.UID,
		PipelineNamespace: in.Self.Namespace, PipelineName: in.Self.Name, Namespace: in.Namespace,
		State: urutauv1alpha1.LeaseMemberActive, Since: in.Now,
	}
}

// ReleaseInput is what PlanRelease decides from, for a pipeline being deleted.
type ReleaseInput struct {
	Self     types.UID
	Current  *urutauv1alpha1.ReaderLease
	Observed map[Key]State
	// Expired: the deletion has waited TombstoneGrace; what is left stays as tombstones.
	Expired bool
	// Reason is recorded on the entries kept as tombstones.
	Reason string
	Now    metav1.Time
}

// ReleaseDecision is PlanRelease's answer.
type ReleaseDecision struct {
	// Lease is the lease to record; nil with Delete when nothing is left to record.
	Lease   *urutauv1alpha1.ReaderLease
	Changed bool
	Delete  bool
	// Done: the pipeline's finalizer may go (nothing of it left, or the rest is tombstoned).
	Done bool
	// Left are the entries of Self still there.
	Left []urutauv1alpha1.LeaseMember
}

// PlanRelease settles a deleted pipeline's entries (or a gone one's, for the tombstone replay, internal/tombstones):
// emptied members leave the lease, drained ones stop counting as readers, and once the deletion
// has waited long enough the rest stay as tombstones. A lease with no entry left whose holder is
// this pipeline is deleted.
func PlanRelease(in ReleaseInput) ReleaseDecision {
	if in.Current == nil {
		return ReleaseDecision{Done: true}
	}
	next := in.Current.DeepCopy()
	kept := next.Spec.Members[:0]
	var left []urutauv1alpha1.LeaseMember
	for _, e := range next.Spec.Members {
		if e.PipelineUID != in.Self {
			kept = append(kept, e)
			continue
		}
		switch st, observed := in.Observed[KeyOf(e)]; {
		case observed && st == Empty:
			continue
		case observed && st == Draining && e.State == urutauv1alpha1.LeaseMemberActive:
			e.State, e.Since = urutauv1alpha1.LeaseMemberDrained, in.Now
		}
		if in.Expired && e.Reason == "" {
			e.Reason = in.Reason
		}
		kept = append(kept, e)
		left = append(left, e)
	}
	next.Spec.Members = kept
	d := ReleaseDecision{Left: left, Done: len(left) == 0 || in.Expired}
	if len(kept) == 0 && next.Spec.Holder.UID == in.Self {
		d.Delete = true
		return d
	}
	d.Lease = next
	d.Changed = !SpecEqual(in.Current.Spec, next.Spec)
	return d
}

func SpecEqual(a, b urutauv1alpha1.ReaderLeaseSpec) bool {
	a, b = *a.DeepCopy(), *b.DeepCopy()
	SortEntries(a.Members)
	SortEntries(b.Members)
	if len(a.Members) == 0 {
		a.Members = nil
	}
	if len(b.Members) == 0 {
		b.Members = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

func SortEntries(es []urutauv1alpha1.LeaseMember) {
	slices.SortFunc(es, func(a, b urutauv1alpha1.LeaseMember) int {
		return strings.Compare(a.Cluster+"\x00"+a.ClusterID+"\x00"+string(a.PipelineUID), b.Cluster+"\x00"+b.ClusterID+"\x00"+string(b.PipelineUID))
	})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return sets.List(sets.New(s...))
}

// State is what a member that holds objects of a pipeline it no longer runs (departed
// from the placement, or the pipeline is deleted) holds after a cleanup pass.
type State int

const (
	// Holding: a coordinator StatefulSet or a reader pod is still there. It is the zero
	// value, so a member nobody observed is treated as the unsafe case.
	Holding State = iota
	// Draining: no reader left, but other objects of the pipeline remain (e.g. a
	// ScaledObject waiting on KEDA's finalizer). It no longer blocks a move.
	Draining
	// Empty: nothing of the pipeline is left.
	Empty
	// Unreachable: the member did not answer, or the hub cannot reach that cluster.
	Unreachable
)
