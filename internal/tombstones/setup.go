package tombstones

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// EventReplayed is the reason of the event on a lease for each member emptied of a gone pipeline.
const EventReplayed = "TombstoneReplayed"

type queue = workqueue.TypedRateLimitingInterface[mcreconcile.Request]

// SetupWithManager registers the controller: ReaderLeases in the hub's namespace; the inventory
// entries, which bring back the leases that name a member that (re)joins; and the CDCPipelines,
// whose removal from the hub turns their entries into tombstones. The last write a deletion makes
// to a lease precedes the CR's removal, so the lease's own event would find the pipeline still
// there and leave its tombstones waiting for an unrelated event.
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager) error {
	if r.Name == "" {
		return errors.New("tombstones: the Reconciler needs a Name")
	}
	local, members := mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false)
	entries := func(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
		return handler.TypedFuncs[client.Object, mcreconcile.Request]{
			CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
				for _, k := range r.LeasesFor(ctx, e.Object.GetName(), "") {
					q.Add(localRequest(k))
				}
			},
		}
	}
	pipelines := func(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
		return handler.TypedFuncs[client.Object, mcreconcile.Request]{
			DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
				for _, k := range r.LeasesOf(ctx, e.Object.GetUID()) {
					q.Add(localRequest(k))
				}
			},
		}
	}
	inLeaseNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Leases.Namespace })
	return mcbuilder.ControllerManagedBy(mgr).
		Named(r.Name).
		For(&urutauv1alpha1.ReaderLease{}, local, members, mcbuilder.WithPredicates(inLeaseNamespace)).
		Watches(r.Inventory.EntryType(), entries, local, members, mcbuilder.WithPredicates(predicate.NewPredicateFuncs(r.Inventory.IsEntry))).
		Watches(&urutauv1alpha1.CDCPipeline{}, pipelines, local, members).
		WatchesRawSource(source.TypedFunc[mcreconcile.Request](func(_ context.Context, q queue) error {
			r.queue.Store(&q)
			return nil
		})).
		WithClusterNotFoundWrapper(false).
		WithOptions(mccontroller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// Requeue has leases reconciled again.
func (r *Reconciler) Requeue(keys ...types.NamespacedName) {
	q := r.queue.Load()
	if q == nil {
		return
	}
	for _, k := range keys {
		(*q).Add(localRequest(k))
	}
}

func localRequest(key types.NamespacedName) mcreconcile.Request {
	return mcreconcile.Request{Request: reconcile.Request{NamespacedName: key}, ClusterName: mcmanager.LocalCluster}
}
