package fleet

import (
	"context"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/hubindex"
	"github.com/urutau-io/fleet/internal/ssa"
)

// handlers are the pipeline controller's event handlers: what brings a pipeline back to the
// queue. Member objects map back to their hub pipeline by label (except the echoes of our own
// applies), our own hub writes are filtered out (ssa.EchoFilter), inventory changes bring back
// the pipelines they concern, and lease changes bring back the pipelines that wait on that lease.
// They read the hub's cache (lookup) and the reconciler's echo filters, and write nothing.
type handlers struct {
	lookup  hubindex.Lookup
	applier *ssa.Applier
	// hubEchoes and leaseEchoes hold the resourceVersions of our writes to pipelines and leases.
	hubEchoes, leaseEchoes *ssa.EchoFilter
	health                 healthChecks
	// forgetMember drops what is kept about a member that left the inventory.
	forgetMember func(member string)
}

// mapMemberObject maps an object in a member to the hub pipeline that wrote it, or, for an object
// that is not the fleet's, to the pipeline its name would belong to (<cr>-coordinator,
// <cr>-worker in the pipeline's namespace): a foreign object a pipeline waits for (handed over,
// or deleted) brings it back.
func mapMemberObject(o client.Object) []mcreconcile.Request {
	l := o.GetLabels()
	ns, name := l[urutauv1alpha1.LabelHubNamespace], l[urutauv1alpha1.LabelHubName]
	if l[urutauv1alpha1.LabelManagedBy] != urutauv1alpha1.ManagedByFleet {
		return foreignObjectRequests(o)
	}
	if ns == "" || name == "" {
		return nil
	}
	return []mcreconcile.Request{localRequest(types.NamespacedName{Namespace: ns, Name: name})}
}

// foreignObjectRequests is the pipeline an object of another owner is named after.
func foreignObjectRequests(o client.Object) []mcreconcile.Request {
	for _, suffix := range []string{"-coordinator", "-worker"} {
		if cr, ok := strings.CutSuffix(o.GetName(), suffix); ok && cr != "" {
			return []mcreconcile.Request{localRequest(types.NamespacedName{Namespace: o.GetNamespace(), Name: cr})}
		}
	}
	return nil
}

func localRequest(key types.NamespacedName) mcreconcile.Request {
	return mcreconcile.Request{Request: reconcile.Request{NamespacedName: key}, ClusterName: mcmanager.LocalCluster}
}

type queue = workqueue.TypedRateLimitingInterface[mcreconcile.Request]

// members maps member events to the hub pipeline, except the echoes of our own
// applies: an object whose resourceVersion is the one our last apply to it returned holds exactly
// what we wrote. Anything else, a foreign edit, a deletion, a status change, is reconciled.
func (h *handlers) members(name multicluster.ClusterName, _ cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	member := string(name)
	// The provider engages a member by building these handlers: check it at once, so that a
	// member found not engaged a moment ago is taken up without waiting for its next check.
	if h.health != nil {
		h.health.CheckSoon(member)
	}
	enqueue := func(q queue, objs ...client.Object) {
		for _, o := range objs {
			for _, req := range mapMemberObject(o) {
				q.Add(req)
			}
		}
	}
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if !h.applier.IsEcho(member, e.Object) {
				enqueue(q, e.Object)
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			if deletionStarted(e.ObjectOld, e.ObjectNew) || !h.applier.IsEcho(member, e.ObjectNew) {
				enqueue(q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			h.applier.Forget(member, e.Object)
			enqueue(q, e.Object)
		},
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[client.Object], q queue) {
			enqueue(q, e.Object)
		},
	}
}

// notOurEcho filters the hub watch of CDCPipelines (see ssa.EchoFilter): the events of our own
// finalizer and status writes. Writes by anyone else (a spec change, a person setting
// status.terminated) carry another resourceVersion and are reconciled. A change none of our
// writes makes (othersChange) passes whatever its resourceVersion: a write of ours that changed
// nothing answers with the resourceVersion of the latest change, which may be someone else's: a
// status patch computed from a stale cache, sent just after a deletion, answers with the
// deletion's. The likely cause of chaos seed 70071, where a deletion waited 100 s for a reconcile.
func (h *handlers) notOurEcho() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return othersChange(e.ObjectOld, e.ObjectNew) || !h.hubEchoes.IsEcho(hubKey(e.ObjectNew), e.ObjectNew.GetResourceVersion())
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			h.hubEchoes.Forget(hubKey(e.Object))
			return true
		},
	}
}

// othersChange tells that a hub pipeline's update is not ours alone: the hub writes its status,
// its finalizer and the removal of the confirm-cluster-gone annotation, never its spec (the
// generation), a deletion, labels or other annotations. The removal of the annotation counts
// too, which costs one reconcile after a confirmation is consumed.
func othersChange(before, after client.Object) bool {
	return before.GetGeneration() != after.GetGeneration() || deletionStarted(before, after) ||
		!maps.Equal(before.GetLabels(), after.GetLabels()) || !maps.Equal(before.GetAnnotations(), after.GetAnnotations())
}

// deletionStarted tells that an update set the object's deletion timestamp, which no write of
// the hub does.
func deletionStarted(before, after client.Object) bool {
	return before.GetDeletionTimestamp() == nil && after.GetDeletionTimestamp() != nil
}

// inventory re-places every pipeline when a member joins, leaves, or changes its
// labels or annotations (selectors, per-member settings, an accepted identity). Any other change
// of an entry (a new kubeconfig, a ClusterProfile's status) can only change how the hub reaches
// that member: it brings back the pipelines placed there, not every pipeline (hack/bench:
// pointing one member's Secret elsewhere queued all 2,000 pipelines of the hub for 10 s). A member
// that leaves takes everything kept about it (members.Set.Forget) along.
func (h *handlers) inventory(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	enqueue := func(ctx context.Context, q queue, entry client.Object, all bool) {
		for _, key := range h.lookup.ForEntry(ctx, entry.GetName(), all) {
			q.Add(localRequest(key))
		}
	}
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			enqueue(ctx, q, e.Object, true)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			relabelled := !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
				!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
			if !relabelled {
				// A new way to reach it: worth checking at once.
				h.health.CheckSoon(e.ObjectNew.GetName())
			}
			enqueue(ctx, q, e.ObjectNew, relabelled)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			h.forgetMember(e.Object.GetName())
			enqueue(ctx, q, e.Object, true)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[client.Object], q queue) {
			enqueue(ctx, q, e.Object, true)
		},
	}
}

// healthChecks is what the inventory's events ask of the member health checks (members.Monitor).
type healthChecks interface {
	// CheckSoon has member checked at the next round; Forget drops its schedule.
	CheckSoon(member string)
	Forget(member string)
}

// leases brings back the pipelines a lease concerns when someone else changed it (our
// own writes are echoes): its holder, the pipelines of its entries, and every pipeline that
// reads its source, which may be waiting for it.
func (h *handlers) leases(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	enqueue := func(ctx context.Context, q queue, o client.Object) {
		for _, key := range h.lookup.OfLease(ctx, o) {
			q.Add(localRequest(key))
		}
	}
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if !h.leaseEchoes.IsEcho(hubKey(e.Object), e.Object.GetResourceVersion()) {
				enqueue(ctx, q, e.Object)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			if !h.leaseEchoes.IsEcho(hubKey(e.ObjectNew), e.ObjectNew.GetResourceVersion()) {
				enqueue(ctx, q, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			h.leaseEchoes.Forget(hubKey(e.Object))
			enqueue(ctx, q, e.Object)
		},
	}
}

// policies brings every pipeline back when a PlacementPolicy changes: it may open or
// close any member to any namespace.
func (h *handlers) policies(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc[client.Object, mcreconcile.Request](func(ctx context.Context, _ client.Object) []mcreconcile.Request {
		var out []mcreconcile.Request
		for _, k := range h.lookup.ForEntry(ctx, "", true) {
			out = append(out, localRequest(k))
		}
		return out
	})
}

// hubNamespaces brings back the pipelines of a hub namespace whose labels changed (the
// boundary selects namespaces by them).
func (h *handlers) hubNamespaces(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc[client.Object, mcreconcile.Request](func(ctx context.Context, ns client.Object) []mcreconcile.Request {
		var out []mcreconcile.Request
		for _, k := range h.lookup.In(ctx, ns.GetName()) {
			out = append(out, localRequest(k))
		}
		return out
	})
}
