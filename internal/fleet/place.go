package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fencelease"
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

// placer decides where a pipeline runs under its reader lease (lease.Plan) and records that
// decision in the lease before anything starts, once the members it left are cleaned.
type placer struct {
	reads    *memberReads
	fence    *fencelease.Hub
	members  *members.Set
	fanOut   *fanOut
	writes   *hubWrites
	book     *memberBook
	liveness *members.Liveness
	emit     emitFunc
	// patience is ControllerPatience.
	patience time.Duration
}

// place cleans the members the pipeline left, decides where it runs, and writes the lease.
func (pc *placer) place(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world) (*placed, error) {
	targets := w.targets()
	current := lease.FollowRenames(w.lease, targets, w.ids, w.unidentifiedNames(), w.accepted)
	w.held = pc.reads.holdSharedReaders(ctx, p, w, current, targets)
	pl := &placed{departed: pc.cleanDeparted(ctx, p, w, lease.DepartedEntries(current, p.UID, targets))}
	fi := pc.fence.Prepare(ctx, p, current, targets, pl.departed)
	confirmed := ConfirmedGone(p).Union(lease.AcceptedGone(w.accepted, lease.OwnEntries(current, p.UID), w.ids))
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
		Fence: fi.Fence, FenceVerified: fi.Verified, FenceDrained: fi.Drained,
	})
	pl.lease = w.lease
	if pl.decision.Lease != nil && (pl.decision.Changed || (w.lease != nil && current != w.lease)) {
		written, err := pc.writes.lease(ctx, w.lease, pl.decision.Lease)
		if err != nil {
			return nil, err
		}
		pl.lease, pl.wrote = written, true
	}
	pc.fence.AfterLeaseWritten(p, pl.lease, pl.decision)
	for _, m := range pl.decision.Fenced {
		pc.emit(p, corev1.EventTypeNormal, EventFenceDrained, "Move",
			"cluster %q does not answer, but its coordinator is fenced and the fence's bound has passed since the last renewal: it no longer holds the move (no %s needed); it is emptied if it ever answers again", m, urutauv1alpha1.AnnotationConfirmGone)
	}
	return pl, pc.consumeRequests(ctx, p, w, pl.decision.Confirmed)
}

// cleanDeparted empties, concurrently, every member an entry of the pipeline names that it no
// longer runs on, and says what each holds. A member the hub cannot reach as the cluster the
// entry names (it left the inventory, or its entry points at another cluster now) is not asked.
func (pc *placer) cleanDeparted(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, entries []urutauv1alpha1.LeaseMember) map[lease.Key]memberwork.Departed {
	out := map[lease.Key]memberwork.Departed{}
	reachable := map[string]urutauv1alpha1.LeaseMember{}
	for _, e := range entries {
		if why := pc.unreachableEntry(e, w); why != "" {
			out[lease.KeyOf(e)] = memberwork.Departed{State: lease.Unreachable, Message: why}
			continue
		}
		reachable[e.Cluster] = e
	}
	done, late := members.FanOut(ctx, pc.fanOut.options(members.PipelineWakeKey(p), "clean"), sortedKeys(reachable), func(ctx context.Context, m string) memberwork.Departed {
		return pc.cleanOn(ctx, m, reachable[m])
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
func (pc *placer) unreachableEntry(e urutauv1alpha1.LeaseMember, w *world) string {
	if _, ok := w.inventory[e.Cluster]; !ok {
		return fmt.Sprintf("cluster %q left the cluster inventory while it may hold this pipeline's objects: the hub leaves them as they are until it is registered again (under any name) or a person confirms it gone (annotate the CDCPipeline %s=%s)",
			e.Cluster, urutauv1alpha1.AnnotationConfirmGone, e.Cluster)
	}
	if down, msg := pc.members.Down(e.Cluster); down {
		return msg
	}
	if id, ok := w.ids[e.Cluster]; ok && id != e.ClusterID {
		return lease.IdentityMoved(e, id, w.ids)
	}
	return ""
}

// cleanOn runs a memberwork.CleanJob on member, unless it is slow; a timeout marks it down.
func (pc *placer) cleanOn(ctx context.Context, member string, e urutauv1alpha1.LeaseMember) memberwork.Departed {
	c, err := pc.members.Conn(ctx, member)
	if err == nil {
		err = pc.members.SameCluster(ctx, c, e.ClusterID)
	}
	if err != nil {
		return memberwork.Departed{State: lease.Unreachable, Message: err.Error()}
	}
	d := (&memberwork.CleanJob{Conn: c, Entry: e, Liveness: pc.liveness, Patience: pc.patience}).Run(ctx)
	if d.TimedOut {
		d.Message = pc.book.timedOut(member)
	}
	return d
}

// consumeRequests removes, in one write, the annotations a person gives for one move once the hub
// has read them: urutau.io/confirm-cluster-gone (each name reported as acted on, or ignored when
// that cluster was not holding anything back) and urutau.io/failover-to. Each applies to the move
// it was given for, never to a later one.
func (pc *placer) consumeRequests(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, acted []string) error {
	var consumed []string
	if given := ConfirmedGone(p); given.Len() > 0 {
		actedOn := sets.New(acted...)
		for _, m := range sets.List(given) {
			if actedOn.Has(m) {
				pc.emit(p, corev1.EventTypeWarning, EventConfirmedGone, "Move",
					"cluster %q confirmed gone by %s: it no longer holds the move; it is emptied if it ever answers again", m, urutauv1alpha1.AnnotationConfirmGone)
			} else {
				pc.emit(p, corev1.EventTypeNormal, EventConfirmationIgnored, "Move",
					"%s named cluster %q, which was not holding a move back (it answers, or holds no reader of this pipeline): ignored and removed", urutauv1alpha1.AnnotationConfirmGone, m)
			}
		}
		consumed = append(consumed, urutauv1alpha1.AnnotationConfirmGone)
	}
	if w.failover != nil && w.failover.Requested != "" {
		consumed = append(consumed, urutauv1alpha1.AnnotationFailoverTo)
	}
	if len(consumed) == 0 {
		return nil
	}
	orig := p.DeepCopy()
	for _, a := range consumed {
		delete(p.Annotations, a)
	}
	if err := pc.writes.patch(ctx, orig, p); err != nil {
		return fmt.Errorf("removing %s once read: %w", strings.Join(consumed, " and "), err)
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
