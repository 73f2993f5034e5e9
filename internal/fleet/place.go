package fleet

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
)

// placed is what one reconcile decided: where the pipeline runs now under its reader lease,
// and what became of the members it left.
type placed struct {
	decision lease.Decision
	// lease is the lease as recorded (written by this reconcile, or read unchanged).
	lease *urutauv1alpha1.ReaderLease
	// wrote: this reconcile wrote the lease, so its decision stands on a fresh read.
	wrote bool
	// departed is what cleaning each entry of the pipeline it no longer runs on found.
	departed map[lease.Key]memberwork.Departed
	// deregistered are departed members that left the cluster inventory.
	deregistered []string
}

// place cleans the members the pipeline left, decides where it runs under its reader lease
// (lease.Plan), and records that decision in the lease before anything starts.
func (r *CoordinatorReconciler) place(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world) (*placed, error) {
	targets := w.targets()
	current := followRenames(w.lease, targets, w.ids, w.unidentifiedNames(), w.accepted)
	w.held = r.reads.holdSharedReaders(ctx, p, w, current, targets)
	pl := &placed{departed: r.cleanDeparted(ctx, p, w, departedEntries(current, p.UID, targets))}
	fi := r.fence.prepare(ctx, p, current, targets, pl.departed)
	confirmed := ConfirmedGone(p).Union(acceptedGone(w.accepted, ownEntries(current, p.UID), w.ids))
	observed := map[lease.Key]lease.State{}
	for k, d := range pl.departed {
		observed[k] = d.State
		if _, registered := w.inventory[k.Cluster]; d.State == lease.Unreachable && !registered {
			pl.deregistered = append(pl.deregistered, k.Cluster)
		}
	}
	pl.deregistered = sortedUnique(pl.deregistered)
	pl.decision = lease.Plan(lease.Input{
		Self:      urutauv1alpha1.PipelineRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Namespace: p.Namespace, Source: w.source, Current: current, HolderGone: w.holderGone,
		Targets: targets, Observed: observed, Confirmed: confirmed, Now: metav1.Now().Rfc3339Copy(),
		Fence: fi.fence, FenceVerified: fi.verified, FenceDrained: fi.drained,
	})
	pl.lease = w.lease
	if pl.decision.Lease != nil && (pl.decision.Changed || (w.lease != nil && current != w.lease)) {
		written, err := r.writeLease(ctx, w.lease, pl.decision.Lease, func(cur, next *urutauv1alpha1.ReaderLease) (*urutauv1alpha1.ReaderLease, error) {
			return r.leases.Write(ctx, cur, next)
		})
		if err != nil {
			return nil, err
		}
		pl.lease, pl.wrote = written, true
	}
	r.fence.afterLeaseWritten(p, pl.lease, pl.decision)
	for _, m := range pl.decision.Fenced {
		r.event(p, corev1.EventTypeNormal, EventFenceDrained, "Move",
			"cluster %q does not answer, but its coordinator is fenced and the fence's bound has passed since the last renewal: it no longer holds the move (no %s needed); it is emptied if it ever answers again", m, urutauv1alpha1.AnnotationConfirmGone)
	}
	if err := r.consumeFailoverRequest(ctx, p, w); err != nil {
		return nil, err
	}
	return pl, r.consumeConfirmations(ctx, p, pl.decision.Confirmed)
}

// writeLease writes next over current through write, telling the lease echo filter about it. The
// filter holds the lease's watch events while the write is in flight; one that was not ours (the
// orphan scan recording a stray, another hub replica) brings the lease's pipelines back here, as
// its event would have.
func (r *CoordinatorReconciler) writeLease(ctx context.Context, current, next *urutauv1alpha1.ReaderLease, write func(cur, next *urutauv1alpha1.ReaderLease) (*urutauv1alpha1.ReaderLease, error)) (*urutauv1alpha1.ReaderLease, error) {
	key := r.leases.Namespace + "/" + next.Name
	r.leaseEchoes.Begin(key)
	written, err := write(current, next)
	rv := ""
	if err == nil {
		rv = written.ResourceVersion
	}
	if r.leaseEchoes.End(key, rv) {
		r.requeue(r.lookup.pipelinesOfLease(ctx, next)...)
	}
	return written, err
}

// departedEntries are the entries of pipeline uid on members it no longer runs on.
func departedEntries(l *urutauv1alpha1.ReaderLease, uid types.UID, targets map[string]string) []urutauv1alpha1.LeaseMember {
	var out []urutauv1alpha1.LeaseMember
	for _, e := range ownEntries(l, uid) {
		if targets[e.Cluster] != e.ClusterID {
			out = append(out, e)
		}
	}
	return out
}

// cleanDeparted empties, concurrently, every member an entry of the pipeline names that it no
// longer runs on, and says what each holds. A member the hub cannot reach as the cluster the
// entry names (it left the inventory, or its entry points at another cluster now) is not asked.
func (r *CoordinatorReconciler) cleanDeparted(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, entries []urutauv1alpha1.LeaseMember) map[lease.Key]memberwork.Departed {
	out := map[lease.Key]memberwork.Departed{}
	reachable := map[string]urutauv1alpha1.LeaseMember{}
	for _, e := range entries {
		if why := r.unreachableEntry(e, w); why != "" {
			out[lease.KeyOf(e)] = memberwork.Departed{State: lease.Unreachable, Message: why}
			continue
		}
		reachable[e.Cluster] = e
	}
	done, late := members.FanOut(ctx, r.fanOut.options(members.PipelineWakeKey(p), "clean"), sortedKeys(reachable), func(ctx context.Context, m string) memberwork.Departed {
		return r.cleanOn(ctx, m, reachable[m])
	}, func(_ string, err error) memberwork.Departed {
		return memberwork.Departed{State: lease.Holding, Failed: true, Message: err.Error()}
	})
	for m, d := range done {
		out[lease.KeyOf(reachable[m])] = d
	}
	for _, m := range late {
		out[lease.KeyOf(reachable[m])] = memberwork.Departed{State: lease.Holding, Failed: true, Message: fmt.Sprintf("removing: waiting for cluster %q to answer", m)}
	}
	return out
}

// unreachableEntry says why the member an entry names cannot be cleaned now, "" when it can.
func (r *CoordinatorReconciler) unreachableEntry(e urutauv1alpha1.LeaseMember, w *world) string {
	if _, ok := w.inventory[e.Cluster]; !ok {
		return fmt.Sprintf("cluster %q left the cluster inventory while it may hold this pipeline's objects: the hub leaves them as they are until it is registered again (under any name) or a person confirms it gone (annotate the CDCPipeline %s=%s)",
			e.Cluster, urutauv1alpha1.AnnotationConfirmGone, e.Cluster)
	}
	if down, msg := r.members.Down(e.Cluster); down {
		return msg
	}
	if id, ok := w.ids[e.Cluster]; ok && id != e.ClusterID {
		return identityMoved(e, id, w.ids)
	}
	return ""
}

// identityMoved says why an entry whose name reaches another cluster (identity id) now is not
// emptied: its own cluster answers under no registered name, or under names this pipeline is not
// placed on. With one such name the entry follows its cluster there once a platform admin
// accepts the new identity of its name while the placement selects it (renamedTo); with more,
// nothing tells which to empty. ids are the identities answering, by name.
func identityMoved(e urutauv1alpha1.LeaseMember, id string, ids map[string]string) string {
	msg := fmt.Sprintf("cluster %q now answers as identity %s; this pipeline's objects went to identity %s", e.Cluster, id, e.ClusterID)
	names := answeringAs(ids, e.ClusterID)
	switch len(names) {
	case 0:
		return msg + ", which the hub cannot reach"
	case 1:
		return msg + fmt.Sprintf(", which answers as cluster %q, where this pipeline is not placed: they are left as they are, and the move waits, until a platform admin accepts the new identity of %q (annotate its inventory entry %s=%s) while the placement selects %q; they are removed from %q then",
			names[0], e.Cluster, urutauv1alpha1.AnnotationClusterID, id, e.Cluster, names[0])
	}
	return msg + fmt.Sprintf(", which answers as clusters %s, where this pipeline is not placed: the hub cannot tell which of them to empty, and the move waits; remove them from that cluster by hand (objects labelled %s=%s, and pods labelled %s=%s: wait until none is left), then confirm %q gone (%s)",
		quoted(names), urutauv1alpha1.LabelHubPipelineUID, e.PipelineUID, urutauv1alpha1.LabelPipeline, e.PipelineName, e.Cluster, urutauv1alpha1.AnnotationConfirmGone)
}

// answeringAs are the registered names answering with identity id, sorted.
func answeringAs(ids map[string]string, id string) []string {
	var out []string
	for _, n := range sortedKeys(ids) {
		if ids[n] == id {
			out = append(out, n)
		}
	}
	return out
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// acceptedGone are the names of accepted (a new identity accepted under that name) whose old
// clusters count as gone for this pipeline, whose entries are own: accepting a new cluster under
// a name says nothing of the old one when it still answers under other registered names, where
// followRenames could not take the entry (more than one such name). Such an Active entry keeps
// holding the move: the old cluster may still run a reader. Entries in other states, or of other
// pipelines, are not settled by a confirmation (lease.Plan) and change nothing here.
func acceptedGone(accepted sets.Set[string], own []urutauv1alpha1.LeaseMember, ids map[string]string) sets.Set[string] {
	out := accepted.Clone()
	for _, e := range own {
		if e.State == urutauv1alpha1.LeaseMemberActive && out.Has(e.Cluster) && ids[e.Cluster] != e.ClusterID && len(answeringAs(ids, e.ClusterID)) > 0 {
			out.Delete(e.Cluster)
		}
	}
	return out
}

// cleanOn runs a memberwork.CleanJob on member, unless it is slow; a timeout marks it down.
func (r *CoordinatorReconciler) cleanOn(ctx context.Context, member string, e urutauv1alpha1.LeaseMember) memberwork.Departed {
	c, err := r.members.Conn(ctx, member)
	if err == nil {
		err = r.members.SameCluster(ctx, c, e.ClusterID)
	}
	if err != nil {
		return memberwork.Departed{State: lease.Unreachable, Message: err.Error()}
	}
	d := (&memberwork.CleanJob{Conn: c, Entry: e, Liveness: r.Liveness, Patience: r.ControllerPatience}).Run(ctx)
	if d.TimedOut {
		d.Message = r.markTimedOut(member)
	}
	return d
}

// followRenames returns l with every entry moved to the name its cluster is registered under
// now (a renamed inventory entry: the same cluster), or l itself when none moved. An entry goes to
// the target of that identity when the pipeline has one (one cluster, one set of objects, whatever
// its names), else to the one registered name with that identity; two entries that become one
// keep the state that counts more (Active over Drained over Gone). accepted are names whose new
// identity a person accepted: their entries of the old identity follow it to where it is
// registered now, to be emptied there. unknown are registered names whose identity is not known
// (they have not answered since this hub started): their entries stay where they are.
func followRenames(l *urutauv1alpha1.ReaderLease, targets, ids map[string]string, unknown, accepted sets.Set[string]) *urutauv1alpha1.ReaderLease {
	if l == nil {
		return nil
	}
	next := l.DeepCopy()
	moved := false
	for i, e := range next.Spec.Members {
		if name := renamedTo(e, targets, ids, unknown.Has(e.Cluster), accepted.Has(e.Cluster)); name != "" && name != e.Cluster {
			next.Spec.Members[i].Cluster, moved = name, true
		}
	}
	if !moved {
		return l
	}
	next.Spec.Members = mergeEntries(next.Spec.Members)
	return next
}

// renamedTo is the name entry e's cluster goes by now, "" when it cannot be told. A live
// pipeline (targets set) follows its cluster only to a member it is placed on: an entry whose
// name left the inventory is never moved to another registration of that cluster the pipeline is
// not placed on, where it would be emptied (removing an inventory entry never deletes anything).
// A gone pipeline's entries (targets nil) follow their cluster to its one registered name, to be
// emptied there, and so do the entries of a name whose new identity a person accepted (replaced):
// accepting a new cluster under that name means leaving the old one, and the old one answers
// under its other name.
//
// An entry never leaves a registered name whose identity is unknown (it has not answered since
// this hub started): an identity is what a member's API server says, and a member that answers
// with another's while that other cannot be asked is not told apart from an impostor. Moving the
// entry there would have the impostor emptied in its stead and free the source while the real
// cluster may still run a reader. (Both names answering with one identity is the documented
// rename, new entry first and old one deleted after: the entry follows the target, so the
// cluster is neither emptied nor restarted.)
func renamedTo(e urutauv1alpha1.LeaseMember, targets, ids map[string]string, unknown, replaced bool) string {
	if unknown && !replaced {
		return e.Cluster
	}
	for _, t := range sortedKeys(targets) {
		if targets[t] == e.ClusterID {
			return t
		}
	}
	if (targets != nil && !replaced) || ids[e.Cluster] == e.ClusterID {
		return e.Cluster
	}
	var names []string
	for _, n := range sortedKeys(ids) {
		if ids[n] == e.ClusterID {
			names = append(names, n)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return ""
}

// mergeEntries keeps one entry per key, the one whose state counts more.
func mergeEntries(entries []urutauv1alpha1.LeaseMember) []urutauv1alpha1.LeaseMember {
	rank := map[urutauv1alpha1.LeaseMemberState]int{urutauv1alpha1.LeaseMemberActive: 3, urutauv1alpha1.LeaseMemberDrained: 2, urutauv1alpha1.LeaseMemberGone: 1}
	at := map[lease.Key]int{}
	var out []urutauv1alpha1.LeaseMember
	for _, e := range entries {
		if i, dup := at[lease.KeyOf(e)]; dup {
			if rank[e.State] > rank[out[i].State] {
				out[i] = e
			}
			continue
		}
		at[lease.KeyOf(e)] = len(out)
		out = append(out, e)
	}
	return out
}

// consumeConfirmations removes the confirm-cluster-gone annotation once the hub has read it: a
// confirmation applies to the move it was given for, never to a later one. Each name is reported
// as acted on, or ignored when that cluster was not holding anything back.
func (r *CoordinatorReconciler) consumeConfirmations(ctx context.Context, p *urutauv1alpha1.CDCPipeline, acted []string) error {
	given := ConfirmedGone(p)
	if given.Len() == 0 {
		return nil
	}
	actedOn := sets.New(acted...)
	for _, m := range sets.List(given) {
		if actedOn.Has(m) {
			r.event(p, corev1.EventTypeWarning, EventConfirmedGone, "Move",
				"cluster %q confirmed gone by %s: it no longer holds the move; it is emptied if it ever answers again", m, urutauv1alpha1.AnnotationConfirmGone)
		} else {
			r.event(p, corev1.EventTypeNormal, EventConfirmationIgnored, "Move",
				"%s named cluster %q, which was not holding a move back (it answers, or holds no reader of this pipeline): ignored and removed", urutauv1alpha1.AnnotationConfirmGone, m)
		}
	}
	orig := p.DeepCopy()
	delete(p.Annotations, urutauv1alpha1.AnnotationConfirmGone)
	if err := r.writeHub(p, func() error {
		return r.Client.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(r.FieldManager))
	}); err != nil {
		return fmt.Errorf("removing the %s annotation once acted on: %w", urutauv1alpha1.AnnotationConfirmGone, err)
	}
	return nil
}

// ConfirmedGone is the set of members a person confirmed gone with the annotation
// urutau.io/confirm-cluster-gone: "<name>[,<name>...]" on the CDCPipeline.
func ConfirmedGone(p *urutauv1alpha1.CDCPipeline) sets.Set[string] {
	out := sets.New[string]()
	for _, n := range strings.Split(p.Annotations[urutauv1alpha1.AnnotationConfirmGone], ",") {
		if n = strings.TrimSpace(n); n != "" {
			out.Insert(n)
		}
	}
	return out
}
