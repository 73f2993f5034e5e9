package orphans

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
)

// strayPods deletes, in member, the coordinator pods of live pipelines that no StatefulSet
// controls: a second reader beside the one the hub runs, or one where it runs none. One list per
// namespace that holds live pipelines; a namespace the hub may not read there is not open to the
// fleet, and holds nothing of it.
func (o *Scanner) strayPods(ctx context.Context, member string, c *members.Conn, rec records) {
	names := map[string]sets.Set[string]{}
	for _, p := range rec.live {
		if names[p.Namespace] == nil {
			names[p.Namespace] = sets.New[string]()
		}
		names[p.Namespace].Insert(p.Name)
	}
	for _, ns := range slices.Sorted(maps.Keys(names)) {
		pods := &corev1.PodList{}
		err := c.Live.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{urutauv1alpha1.LabelApp: coordinator.AppCoordinator})
		if err != nil {
			if !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("stray pod scan failed", "cluster", member, "namespace", ns, "error", err.Error())
			}
			continue
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if name := pod.Labels[urutauv1alpha1.LabelPipeline]; names[ns].Has(name) {
				o.judgePod(ctx, member, c, pod, rec.placed[types.NamespacedName{Namespace: ns, Name: name}])
			}
		}
	}
}

// judgePod deletes pod when no StatefulSet controls it; placed is the UID of the pipeline an
// Active entry runs there under the pod's name ("" when none).
func (o *Scanner) judgePod(ctx context.Context, member string, c *members.Conn, pod *corev1.Pod, placed types.UID) {
	owner, err := memberwork.ControllerOf(ctx, c.Live, pod)
	if err != nil || owner.Exists || owner.Foreign {
		return
	}
	if err := memberwork.DeleteStrayPod(ctx, c.Cached, pod); err != nil {
		ctrl.LoggerFrom(ctx).Info("deleting a stray reader pod failed", "cluster", member, "pod", client.ObjectKeyFromObject(pod).String(), "error", err.Error())
		return
	}
	strayPodsDeleted.WithLabelValues(member).Inc()
	ctrl.LoggerFrom(ctx).Info("deleted a coordinator pod no StatefulSet controls (made by hand, or orphaned): a second reader",
		"cluster", member, "pod", client.ObjectKeyFromObject(pod).String(), "placedHere", placed != "")
}
