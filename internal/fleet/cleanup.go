package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
)

// scaledObjectListGVK is listed unstructured: the member may not have KEDA's CRD, and the
// member's scheme need not know KEDA's types.
var scaledObjectListGVK = kedav1alpha1.SchemeGroupVersion.WithKind("ScaledObjectList")

// cleanupLists are the kinds the hub writes into a member, coordinator first: it is what must
// stop before anything else goes.
func cleanupLists() []client.ObjectList {
	so := &unstructured.UnstructuredList{}
	so.SetGroupVersionKind(scaledObjectListGVK)
	return []client.ObjectList{
		&appsv1.StatefulSetList{},
		so,
		&corev1.ConfigMapList{},
		&corev1.ServiceList{},
		&rbacv1.RoleBindingList{},
		&rbacv1.RoleList{},
		&policyv1.PodDisruptionBudgetList{},
		&corev1.ServiceAccountList{},
	}
}

// cleanupResult is what is left of a pipeline in a member after a cleanup pass.
type cleanupResult struct {
	// coordinator counts coordinator StatefulSets and pods left; others everything else.
	coordinator, others int
	// deleted counts delete requests that removed something.
	deleted int
}

func (c cleanupResult) state() DepartedState {
	switch {
	case c.coordinator > 0:
		return DepartedHolding
	case c.others > 0:
		return DepartedDraining
	}
	return DepartedEmpty
}

// cleanupMember deletes, in namespace ns of a member, every object the hub wrote for the
// pipeline with uid, then counts what is left. Objects are found by the UID label and deleted
// with a UID and resourceVersion precondition, never by name alone: an object re-labelled for a
// re-created pipeline of the same name in the meantime is left alone. The StatefulSet is deleted
// with background propagation (its pods go through the garbage collector; foreground would leave
// it in place until they are gone, and forever where no collector runs); "empty" then waits for
// the pods itself when pipelineName is set. Reads go to the API server, never a cache, so an
// unreachable member shows as an error.
func cleanupMember(ctx context.Context, reader client.Reader, writer client.Client, ns string, uid types.UID, pipelineName string) (cleanupResult, error) {
	var res cleanupResult
	sel := client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: string(uid)}
	for _, list := range cleanupLists() {
		if err := reader.List(ctx, list, client.InNamespace(ns), sel); err != nil {
			// Only ScaledObjects may not be served: a member without KEDA holds none of them.
			if _, scaledObjects := list.(*unstructured.UnstructuredList); scaledObjects && kedaMissing(err) {
				continue
			}
			return res, fmt.Errorf("listing %T in namespace %q: %w", list, ns, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return res, err
		}
		_, isSTS := list.(*appsv1.StatefulSetList)
		for _, it := range items {
			o, ok := it.(client.Object)
			if !ok {
				continue
			}
			left := true
			if o.GetDeletionTimestamp() == nil {
				uidp, rv := o.GetUID(), o.GetResourceVersion()
				err := writer.Delete(ctx, o, client.Preconditions{UID: &uidp, ResourceVersion: &rv},
					client.PropagationPolicy(metav1.DeletePropagationBackground))
				switch {
				case err == nil:
					res.deleted++
					// Without finalizers the object is gone now; one with finalizers shows up
					// next pass with a deletionTimestamp.
					left = len(o.GetFinalizers()) > 0
				case apierrors.IsNotFound(err):
					left = false
				case apierrors.IsConflict(err):
					// Changed since listed (maybe re-labelled): look again next pass.
				default:
					return res, fmt.Errorf("deleting %s %s/%s: %w", o.GetObjectKind().GroupVersionKind().Kind, ns, o.GetName(), err)
				}
			}
			if !left {
				continue
			}
			if isSTS {
				res.coordinator++
			} else {
				res.others++
			}
		}
	}
	if pipelineName != "" {
		pods := &corev1.PodList{}
		if err := reader.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(coordinator.SelectorLabels(pipelineName))); err != nil {
			return res, fmt.Errorf("listing coordinator pods in namespace %q: %w", ns, err)
		}
		res.coordinator += len(pods.Items)
	}
	return res, nil
}

// isUnreachable tells an error that says "the member did not answer" from one the member
// answered with.
func isUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, multicluster.ErrClusterNotFound) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errHeldOff) ||
		errors.Is(err, syscall.ECONNREFUSED) || utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) {
		return true
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}
