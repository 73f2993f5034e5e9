package tombstones

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
)

// Reconciler replays tombstones: the entries a ReaderLease keeps for pipelines that are gone
// (deleted while a member could not be emptied, or re-created under a new UID). When such a
// member answers, as the cluster the entry names, it is emptied of everything carrying the gone
// pipeline's UID, and the entry goes; a lease with nothing left whose holder is gone goes too.
// Entries of live pipelines are theirs alone: a terminated pipeline's included. A member that does
// not answer is not polled: its return (members.Monitor) or its registration brings the lease back.
type Reconciler struct {
	// Client reads the hub through its cache; APIReader confirms there what the cache says is gone.
	Client    client.Client
	APIReader client.Reader
	Inventory inventory.Inventory
	// Members are the member connections, shared with the pipeline controller.
	Members *members.Set
	Leases  *lease.Store
	// Recorder emits events on the leases; nil emits none.
	Recorder events.EventRecorder
	// Options are the fan-out options of the work on one lease's members.
	Options func(key types.NamespacedName) members.FanOutOptions
	// TimedOut marks a member whose requests timed out, and says so.
	TimedOut func(member string) string
	// PipelineBusy tells whether a pipeline's own reconciles still have work running on a member.
	PipelineBusy func(key types.NamespacedName) bool
	// Patience bounds the wait for a member's StatefulSet controller (memberwork.CleanupMember).
	Patience time.Duration
	// Name names the controller (required); WaitInterval polls a member while its reader pods go
	// away (DefaultWaitInterval when zero).
	Name         string
	WaitInterval time.Duration
	// queue is the controller's queue, for Requeue.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[mcreconcile.Request]]
}

// Reconcile settles one lease.
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (reconcile.Result, error) {
	l, err := r.Leases.Get(ctx, req.Name)
	if l == nil || err != nil || req.Namespace != r.Leases.Namespace {
		return reconcile.Result{}, err
	}
	gone, err := r.gonePipelines(ctx, l)
	if err != nil || gone.Len() == 0 {
		return reconcile.Result{}, err
	}
	registered, err := r.Inventory.Members(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the cluster inventory: %w", err)
	}
	ids := r.knownIdentities(registered)
	next, draining, busy := lease.FollowRenames(l, nil, ids, unidentified(registered, ids), nil), false, false
	for _, uid := range sets.List(gone) {
		if key, ok := pipelineKey(next, uid); ok && r.PipelineBusy != nil && r.PipelineBusy(key) {
			// The pipeline's last reconcile still applies on a member (work it stopped waiting
			// for): emptying the member now would race that work and miss what it writes after.
			busy = true
			continue
		}
		states := memberwork.CleanEntries(ctx, r.Members, r.Options(types.NamespacedName{Namespace: req.Namespace, Name: req.Name}), lease.OwnEntries(next, uid), registered, r.TimedOut, r.Patience)
		r.reportReplayed(next, uid, states)
		d := lease.PlanRelease(lease.ReleaseInput{Self: uid, Current: next, Observed: states, Now: metav1.Now().Rfc3339Copy()})
		if d.Delete {
			return reconcile.Result{}, r.Leases.Remove(ctx, l)
		}
		next = d.Lease
		draining = draining || anyDraining(states)
	}
	if holderGone(next, gone) && len(next.Spec.Members) == 0 {
		return reconcile.Result{}, r.Leases.Remove(ctx, l)
	}
	if !lease.SpecEqual(l.Spec, next.Spec) {
		if _, err := r.Leases.Write(ctx, l, next); err != nil {
			return reconcile.Result{}, err
		}
	}
	if draining || busy {
		// Pods going away, and work ending in another controller, make no event the hub watches.
		return reconcile.Result{RequeueAfter: orDefault(r.WaitInterval, DefaultWaitInterval)}, nil
	}
	return reconcile.Result{}, nil
}

// pipelineKey names the pipeline uid in lease l, from its entries or as the holder.
func pipelineKey(l *urutauv1alpha1.ReaderLease, uid types.UID) (types.NamespacedName, bool) {
	for _, e := range l.Spec.Members {
		if e.PipelineUID == uid {
			return types.NamespacedName{Namespace: e.PipelineNamespace, Name: e.PipelineName}, true
		}
	}
	if h := l.Spec.Holder; h.UID == uid {
		return types.NamespacedName{Namespace: h.Namespace, Name: h.Name}, true
	}
	return types.NamespacedName{}, false
}

// gonePipelines are the pipelines lease l records that are gone: not found, or found under
// another UID. A cache that says "gone" is confirmed by the API server, since replaying a live
// pipeline's entry would delete what it runs. A pipeline being deleted is not gone: its own
// reconcile empties its members.
func (r *Reconciler) gonePipelines(ctx context.Context, l *urutauv1alpha1.ReaderLease) (sets.Set[types.UID], error) {
	refs := map[types.UID]urutauv1alpha1.PipelineRef{l.Spec.Holder.UID: l.Spec.Holder}
	for _, e := range l.Spec.Members {
		refs[e.PipelineUID] = urutauv1alpha1.PipelineRef{Namespace: e.PipelineNamespace, Name: e.PipelineName, UID: e.PipelineUID}
	}
	gone := sets.New[types.UID]()
	for uid, ref := range refs {
		g, err := r.isGone(ctx, r.Client, ref)
		if err == nil && g {
			g, err = r.isGone(ctx, r.APIReader, ref)
		}
		if err != nil {
			return nil, err
		}
		if g {
			gone.Insert(uid)
		}
	}
	return gone, nil
}

func (r *Reconciler) isGone(ctx context.Context, reader client.Reader, ref urutauv1alpha1.PipelineRef) (bool, error) {
	p := &urutauv1alpha1.CDCPipeline{}
	err := reader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, p)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading CDCPipeline %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return p.UID != ref.UID, nil
}

// reportReplayed emits an event on the lease for each member emptied of a gone pipeline.
func (r *Reconciler) reportReplayed(l *urutauv1alpha1.ReaderLease, uid types.UID, states map[lease.Key]lease.State) {
	for _, e := range lease.OwnEntries(l, uid) {
		if states[lease.KeyOf(e)] != lease.Empty || r.Recorder == nil {
			continue
		}
		r.Recorder.Eventf(l, nil, corev1.EventTypeNormal, EventReplayed, "Cleanup",
			"cluster %q holds nothing of pipeline %s/%s (uid %s) any more", e.Cluster, e.PipelineNamespace, e.PipelineName, uid)
	}
}

// unidentified are the registered members without an identity in ids.
func unidentified(members []inventory.Member, ids map[string]string) sets.Set[string] {
	out := sets.New[string]()
	for _, m := range members {
		if ids[m.Name] == "" {
			out.Insert(m.Name)
		}
	}
	return out
}

// knownIdentities are the identities read from the registered members.
func (r *Reconciler) knownIdentities(members []inventory.Member) map[string]string {
	ids := map[string]string{}
	for _, m := range members {
		if id := r.Members.KnownIdentity(m.Name); id != "" {
			ids[m.Name] = id
		}
	}
	return ids
}

func holderGone(l *urutauv1alpha1.ReaderLease, gone sets.Set[types.UID]) bool {
	return gone.Has(l.Spec.Holder.UID)
}

func anyDraining(states map[lease.Key]lease.State) bool {
	for _, s := range states {
		if s == lease.Holding || s == lease.Draining {
			return true
		}
	}
	return false
}

// LeasesOf lists the leases that record pipeline uid, as holder or in an entry.
func (r *Reconciler) LeasesOf(ctx context.Context, uid types.UID) []types.NamespacedName {
	leases, err := r.Leases.Of(ctx, uid)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing ReaderLeases")
		return nil
	}
	out := make([]types.NamespacedName, 0, len(leases))
	for i := range leases {
		out = append(out, client.ObjectKeyFromObject(&leases[i]))
	}
	return out
}

// LeasesFor lists the leases with an entry on member name, or on a cluster of identity id.
func (r *Reconciler) LeasesFor(ctx context.Context, name, id string) []types.NamespacedName {
	list := &urutauv1alpha1.ReaderLeaseList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.Leases.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing ReaderLeases")
		return nil
	}
	var out []types.NamespacedName
	for i := range list.Items {
		l := &list.Items[i]
		for _, e := range l.Spec.Members {
			if e.Cluster == name || (id != "" && e.ClusterID == id) {
				out = append(out, client.ObjectKeyFromObject(l))
				break
			}
		}
	}
	return out
}

// DefaultWaitInterval polls a member while the reader pods of a gone pipeline go away there.
const DefaultWaitInterval = 5 * time.Second

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
