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
	"github.com/urutau-io/fleet/internal/fencelease"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/status"
)

// deletion empties the members of a deleted pipeline: every member a ReaderLease records for it,
// selected or not, terminated or not (deletion comes first).
type deletion struct {
	inventory inventory.Inventory
	leases    *lease.Store
	members   *members.Set
	fanOut    *fanOut
	fence     *fencelease.Hub
	writes    *hubWrites
	book      *memberBook
	emit      emitFunc
	// grace is TombstoneGrace, patience ControllerPatience; wait and retry space the looks.
	grace, patience, wait, retry time.Duration
}

// run empties p's members. A member not emptied within grace of the deletion keeps its entry as
// a tombstone, so the CR still goes away in bounded time and the member is emptied when it
// answers (internal/tombstones).
func (d *deletion) run(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(p, urutauv1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	// A deleted pipeline holds no placement: its fenced coordinators stop by themselves too.
	d.fence.StopRenewing(p.UID)
	registered, err := d.inventory.Members(ctx)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the cluster inventory: %w", err)
	}
	leases, err := d.leasesOf(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	elapsed := time.Since(p.DeletionTimestamp.Time)
	var left []leftEntry
	for i := range leases {
		l, err := d.release(ctx, p, &leases[i], registered, elapsed >= d.grace)
		if err != nil {
			return ctrl.Result{}, err
		}
		for _, e := range l {
			left = append(left, leftEntry{lease: leases[i].Name, LeaseMember: e})
		}
	}
	if len(left) == 0 || elapsed >= d.grace {
		d.tombstoned(p, left)
		return ctrl.Result{}, d.removeFinalizer(ctx, p)
	}
	showDeleting(p, left, d.members.Down)
	after := min(d.wait, d.retry)
	if rest := d.grace - elapsed; rest > 0 && rest < after {
		after = rest
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// release empties the members lease l records for the deleted pipeline p, and records what is
// left. It returns the entries left.
func (d *deletion) release(ctx context.Context, p *urutauv1alpha1.CDCPipeline, l *urutauv1alpha1.ReaderLease, registered []inventory.Member, expired bool) ([]urutauv1alpha1.LeaseMember, error) {
	states := memberwork.CleanEntries(ctx, d.members, d.fanOut.options(members.PipelineWakeKey(p), "clean"), lease.OwnEntries(l, p.UID), registered, d.book.timedOut, d.patience)
	plan := lease.PlanRelease(lease.ReleaseInput{
		Self: p.UID, Current: l, Observed: states, Expired: expired, Now: metav1.Now().Rfc3339Copy(),
		Reason: fmt.Sprintf("CDCPipeline %s/%s was deleted while this cluster could not be emptied within %s", p.Namespace, p.Name, d.grace),
	})
	for _, e := range lease.OwnEntries(l, p.UID) {
		if states[lease.KeyOf(e)] == lease.Empty {
			d.emit(p, corev1.EventTypeNormal, EventRemoved, "Delete", "removed from cluster %q", e.Cluster)
		}
	}
	var err error
	switch {
	case plan.Delete:
		err = d.leases.Remove(ctx, l)
	case plan.Changed:
		_, err = d.writes.lease(ctx, l, plan.Lease)
	}
	return plan.Left, err
}

// leasesOf lists the leases that record p: from the cache, and its own lease read from the API
// server, which a cache that lags behind a write just made may not show yet.
func (d *deletion) leasesOf(ctx context.Context, p *urutauv1alpha1.CDCPipeline) ([]urutauv1alpha1.ReaderLease, error) {
	cached, err := d.leases.Of(ctx, p.UID)
	if err != nil {
		return nil, err
	}
	own, err := d.leases.GetLive(ctx, lease.Name(sourceIdentity(parseInline(p)), p.UID))
	if err != nil || own == nil || !lease.Records(own, p.UID) {
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
func (d *deletion) tombstoned(p *urutauv1alpha1.CDCPipeline, left []leftEntry) {
	for _, e := range left {
		tombstonesWritten.Inc()
		d.emit(p, corev1.EventTypeWarning, EventTombstoned, "Delete",
			"cluster %q not emptied within %s: its entry in ReaderLease %s/%s stays as a tombstone and empties it when it answers",
			e.Cluster, d.grace, d.leases.Namespace, e.lease)
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

// removeFinalizer lets the CR go. Not echo-filtered: the pipeline's next event is its removal.
func (d *deletion) removeFinalizer(ctx context.Context, p *urutauv1alpha1.CDCPipeline) error {
	orig := p.DeepCopy()
	controllerutil.RemoveFinalizer(p, urutauv1alpha1.Finalizer)
	if err := d.writes.client.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(d.writes.fieldManager)); err != nil {
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
