package hubindex

import (
	"context"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/failover"
)

// PipelineLease indexes CDCPipelines by the name of their ReaderLease, so a lease that changes
// finds the pipelines that wait for it.
const PipelineLease = "urutau.io/reader-lease"

// Lookup finds, in the hub's cache, the pipelines a change concerns.
type Lookup struct {
	// Hub is the hub's cache; LeaseNamespace holds the ReaderLeases.
	Hub            client.Reader
	LeaseNamespace string
}

// ForEntry lists the pipelines to reconcile after a change of member's inventory entry:
// every pipeline, or only those placed there.
func (l Lookup) ForEntry(ctx context.Context, member string, all bool) []types.NamespacedName {
	if !all {
		return l.On(ctx, member)
	}
	list := &urutauv1alpha1.CDCPipelineList{}
	if err := l.Hub.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing CDCPipelines after an inventory change")
		return nil
	}
	out := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, client.ObjectKeyFromObject(&list.Items[i]))
	}
	return out
}

// On lists the live pipelines placed on member, or holding objects there: those whose
// status says so, and those a lease records there. The lease is written before anything is
// applied and the status only after, so a pipeline whose first apply there is still running is
// found by its lease entry alone.
func (l Lookup) On(ctx context.Context, member string) []types.NamespacedName {
	list := &urutauv1alpha1.CDCPipelineList{}
	if err := l.Hub.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing CDCPipelines placed on a member", "cluster", member)
		return nil
	}
	leased := l.leasedOn(ctx, member)
	var out []types.NamespacedName
	for i := range list.Items {
		p := &list.Items[i]
		if leased.Has(p.UID) || slices.Contains(p.Status.Inventory, member) || slices.ContainsFunc(p.Status.Clusters, func(c urutauv1alpha1.ClusterStatus) bool { return c.Name == member }) ||
			failover.Named(p, member) {
			out = append(out, client.ObjectKeyFromObject(p))
		}
	}
	return out
}

// leasedOn lists the pipelines that a lease entry records on member.
func (l Lookup) leasedOn(ctx context.Context, member string) sets.Set[types.UID] {
	out := sets.New[types.UID]()
	list := &urutauv1alpha1.ReaderLeaseList{}
	if err := l.Hub.List(ctx, list, client.InNamespace(l.LeaseNamespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing ReaderLeases with entries on a member", "cluster", member)
		return out
	}
	for i := range list.Items {
		for _, e := range list.Items[i].Spec.Members {
			if e.Cluster == member {
				out.Insert(e.PipelineUID)
			}
		}
	}
	return out
}

// OfLease lists the pipelines lease o concerns.
func (l Lookup) OfLease(ctx context.Context, o client.Object) []types.NamespacedName {
	rl, ok := o.(*urutauv1alpha1.ReaderLease)
	if !ok {
		return nil
	}
	keys := map[types.NamespacedName]bool{{Namespace: rl.Spec.Holder.Namespace, Name: rl.Spec.Holder.Name}: true}
	for _, e := range rl.Spec.Members {
		keys[types.NamespacedName{Namespace: e.PipelineNamespace, Name: e.PipelineName}] = true
	}
	list := &urutauv1alpha1.CDCPipelineList{}
	if err := l.Hub.List(ctx, list, client.MatchingFields{PipelineLease: rl.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the CDCPipelines of a reader lease", "readerLease", rl.Name)
	}
	for i := range list.Items {
		keys[client.ObjectKeyFromObject(&list.Items[i])] = true
	}
	return slices.Collect(maps.Keys(keys))
}

// In lists the pipelines of hub namespace ns.
func (l Lookup) In(ctx context.Context, ns string) []types.NamespacedName {
	list := &urutauv1alpha1.CDCPipelineList{}
	if err := l.Hub.List(ctx, list, client.InNamespace(ns)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the CDCPipelines of a namespace", "namespace", ns)
		return nil
	}
	out := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, client.ObjectKeyFromObject(&list.Items[i]))
	}
	return out
}
