package fleet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/status"
)

// reconcileDelete empties every member a ReaderLease records for the pipeline, selected or not,
// terminated or not (deletion comes first). A member not emptied within TombstoneGrace of the
// deletion keeps its entry as a tombstone, so the CR still goes away in bounded time and the
// member is emptied when it answers (LeaseReconciler).
func (r *CoordinatorReconciler) reconcileDelete(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(p, urutauv1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	// A deleted pipeline holds no placement: its fenced coordinators stop by themselves too.
	r.fence.StopRenewing(p.UID)
	members, err := r.Inventory.Members(ctx)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the cluster inventory: %w", err)
	}
	leases, err := r.leasesOfDeleted(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	elapsed := time.Since(p.DeletionTimestamp.Time)
	var left []leftEntry
	for i := range leases {
		l, err := r.release(ctx, p, &leases[i], members, elapsed >= r.TombstoneGrace)
		if err != nil {
			return ctrl.Result{}, err
		}
		for _, e := range l {
			left = append(left, leftEntry{lease: leases[i].Name, LeaseMember: e})
		}
	}
	if len(left) == 0 || elapsed >= r.TombstoneGrace {
		r.tombstoned(p, left)
		return ctrl.Result{}, r.removeFinalizer(ctx, p)
	}
	showDeleting(p, left, r.members.Down)
	after := min(r.WaitInterval, r.RetryInterval)
	if rest := r.TombstoneGrace - elapsed; rest > 0 && rest < after {
		after = rest
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// release empties the members lease l records for the deleted pipeline p, and records what is
// left. It returns the entries left.
func (r *CoordinatorReconciler) release(ctx context.Context, p *urutauv1alpha1.CDCPipeline, l *urutauv1alpha1.ReaderLease, registered []inventory.Member, expired bool) ([]urutauv1alpha1.LeaseMember, error) {
	states := memberwork.CleanEntries(ctx, &r.members, r.fanOut.options(members.PipelineWakeKey(p), "clean"), ownEntries(l, p.UID), registered, r.markTimedOut, r.ControllerPatience)
	d := lease.PlanRelease(lease.ReleaseInput{
		Self: p.UID, Current: l, Observed: states, Expired: expired, Now: metav1.Now().Rfc3339Copy(),
		Reason: fmt.Sprintf("CDCPipeline %s/%s was deleted while this cluster could not be emptied within %s", p.Namespace, p.Name, r.TombstoneGrace),
	})
	for _, e := range ownEntries(l, p.UID) {
		if states[lease.KeyOf(e)] == lease.Empty {
			r.event(p, corev1.EventTypeNormal, EventRemoved, "Delete", "removed from cluster %q", e.Cluster)
		}
	}
	var err error
	switch {
	case d.Delete:
		err = r.leases.Remove(ctx, l)
	case d.Changed:
		_, err = r.writeLease(ctx, l, d.Lease, func(cur, next *urutauv1alpha1.ReaderLease) (*urutauv1alpha1.ReaderLease, error) {
			return r.leases.Write(ctx, cur, next)
		})
	}
	return d.Left, err
}

// leasesOfDeleted lists the leases that record p: from the cache, and its own lease read from
// the API server, which a cache that lags behind a write just made may not show yet.
func (r *CoordinatorReconciler) leasesOfDeleted(ctx context.Context, p *urutauv1alpha1.CDCPipeline) ([]urutauv1alpha1.ReaderLease, error) {
	cached, err := r.leases.Of(ctx, p.UID)
	if err != nil {
		return nil, err
	}
	own, err := r.leases.GetLive(ctx, lease.Name(sourceIdentity(parseInline(p)), p.UID))
	if err != nil || own == nil || !recordsPipeline(own, p.UID) {
		return cached, err
	}
	out := []urutauv1alpha1.ReaderLease{*own}
	for _, l := range cached {
		if l.Name != own.Name {
			out = append(out, l)
		}
	}
	return out, nil
}

// leftEntry is an entry of a deleted pipeline still in lease.
type leftEntry struct {
	lease string
	urutauv1alpha1.LeaseMember
}

// tombstoned reports the entries a deleted pipeline leaves behind as tombstones.
func (r *CoordinatorReconciler) tombstoned(p *urutauv1alpha1.CDCPipeline, left []leftEntry) {
	for _, e := range left {
		tombstonesWritten.Inc()
		r.event(p, corev1.EventTypeWarning, EventTombstoned, "Delete",
			"cluster %q not emptied within %s: its entry in ReaderLease %s/%s stays as a tombstone and empties it when it answers",
			e.Cluster, r.TombstoneGrace, r.leases.Namespace, e.lease)
	}
}

// showDeleting sets the status of a pipeline being deleted: what each member still holds.
func showDeleting(p *urutauv1alpha1.CDCPipeline, left []leftEntry, down func(member string) (bool, string)) {
	var shown []status.MemberObservation
	var inv []string
	for _, e := range left {
		phase, msg := urutauv1alpha1.ClusterDeleting, "removing"
		if gone, why := down(e.Cluster); gone {
			phase, msg = urutauv1alpha1.ClusterUnreachable, why
		}
		shown = append(shown, status.MemberObservation{Name: e.Cluster, ClusterID: e.ClusterID, Phase: phase, Message: msg})
		inv = append(inv, e.Cluster)
	}
	p.Status.Inventory = sortedUnique(inv)
	p.Status.Clusters = status.Clusters(p.Status.Clusters, status.Observation{Now: status.Now(), Members: dedupByName(shown)})
}

// removeFinalizer lets the CR go.
func (r *CoordinatorReconciler) removeFinalizer(ctx context.Context, p *urutauv1alpha1.CDCPipeline) error {
	orig := p.DeepCopy()
	controllerutil.RemoveFinalizer(p, urutauv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(r.FieldManager)); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// dedupByName keeps the first observation of each member name.
func dedupByName(obs []status.MemberObservation) []status.MemberObservation {
	seen := map[string]bool{}
	var out []status.MemberObservation
	for _, o := range obs {
		if !seen[o.Name] {
			seen[o.Name] = true
			out = append(out, o)
		}
	}
	return out
}
