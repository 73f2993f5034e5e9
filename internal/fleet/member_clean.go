package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
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

// DepartedState is what a member that holds objects of a pipeline it no longer runs (departed
// from the placement, or the pipeline is deleted) holds after a cleanup pass.
type DepartedState int

const (
	// DepartedHolding: a coordinator StatefulSet or a reader pod is still there. It is the zero
	// value, so a member nobody observed is treated as the unsafe case.
	DepartedHolding DepartedState = iota
	// DepartedDraining: no reader left, but other objects of the pipeline remain (e.g. a
	// ScaledObject waiting on KEDA's finalizer). It no longer blocks a move.
	DepartedDraining
	// DepartedEmpty: nothing of the pipeline is left.
	DepartedEmpty
	// DepartedUnreachable: the member did not answer, or the hub cannot reach that cluster.
	DepartedUnreachable
)

// departedResult is the outcome of cleaning one member.
type departedResult struct {
	state   DepartedState
	deleted int
	message string
	// timedOut: a request to the member ran out of time.
	timedOut bool
}

// cleanJob empties one member of one pipeline's objects and says what is left.
type cleanJob struct {
	conn *memberConn
	// entry names the pipeline (UID, name) and the member namespace.
	entry urutauv1alpha1.LeaseMember
}

func (j *cleanJob) run(ctx context.Context) departedResult {
	start := time.Now()
	defer func() { memberDuration.WithLabelValues(j.conn.name).Observe(time.Since(start).Seconds()) }()
	res, err := cleanupMember(ctx, j.conn.live, j.conn.cached, j.entry)
	switch {
	case isUnreachable(err):
		memberErrors.WithLabelValues(j.conn.name, "unreachable").Inc()
		return departedResult{state: DepartedUnreachable, deleted: res.deleted, timedOut: isTimeout(err), message: "cluster does not answer: " + err.Error()}
	case err != nil:
		memberErrors.WithLabelValues(j.conn.name, "error").Inc()
		return departedResult{state: DepartedHolding, deleted: res.deleted, message: err.Error()}
	}
	out := departedResult{state: res.state(), deleted: res.deleted}
	switch out.state {
	case DepartedHolding:
		out.message = fmt.Sprintf("removing: waiting for %d coordinator StatefulSet(s)/reader pod(s) to go", res.readers)
	case DepartedDraining:
		out.message = fmt.Sprintf("removing: %d object(s) left", res.others)
	}
	return out
}

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
		&networkingv1.NetworkPolicyList{},
		&corev1.ServiceAccountList{},
	}
}

// cleanupResult is what is left of a pipeline in a member after a cleanup pass.
type cleanupResult struct {
	// readers counts coordinator StatefulSets and reader pods left; others everything else.
	readers, others int
	// deleted counts delete requests that removed something.
	deleted int
}

func (c cleanupResult) state() DepartedState {
	switch {
	case c.readers > 0:
		return DepartedHolding
	case c.others > 0:
		return DepartedDraining
	}
	return DepartedEmpty
}

// cleanupMember deletes, in the entry's namespace of a member, every object the hub wrote for the
// entry's pipeline, then counts what is left, reader pods included. Objects are found by the UID
// label and deleted with a UID and resourceVersion precondition, never by name alone: an object
// re-labelled for a re-created pipeline of the same name in the meantime is left alone. The
// StatefulSet is deleted with background propagation (its pods go through the garbage collector;
// foreground would leave it in place until they are gone, and forever where no collector runs).
// Reads go to the API server, never a cache, so an unreachable member shows as an error.
func cleanupMember(ctx context.Context, reader client.Reader, writer client.Client, e urutauv1alpha1.LeaseMember) (cleanupResult, error) {
	var res cleanupResult
	sel := client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: string(e.PipelineUID)}
	for _, list := range cleanupLists() {
		if err := reader.List(ctx, list, client.InNamespace(e.Namespace), sel); err != nil {
			// Only ScaledObjects may not be served: a member without KEDA holds none of them.
			if _, scaledObjects := list.(*unstructured.UnstructuredList); scaledObjects && kedaMissing(err) {
				continue
			}
			return res, fmt.Errorf("listing %T in namespace %q: %w", list, e.Namespace, err)
		}
		if err := deleteListed(ctx, writer, list, e.Namespace, &res); err != nil {
			return res, err
		}
	}
	pods, err := readerPods(ctx, reader, e)
	if err != nil {
		return res, err
	}
	res.readers += pods
	return res, nil
}

// deleteListed deletes the listed objects not being deleted yet and counts those left.
func deleteListed(ctx context.Context, writer client.Client, list client.ObjectList, ns string, res *cleanupResult) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	_, isSTS := list.(*appsv1.StatefulSetList)
	for _, it := range items {
		o, ok := it.(client.Object)
		if !ok {
			continue
		}
		left := true
		if o.GetDeletionTimestamp() == nil {
			uid, rv := o.GetUID(), o.GetResourceVersion()
			err := writer.Delete(ctx, o, client.Preconditions{UID: &uid, ResourceVersion: &rv},
				client.PropagationPolicy(metav1.DeletePropagationBackground))
			switch {
			case err == nil:
				res.deleted++
				// Without finalizers the object is gone now; one with finalizers shows up next
				// pass with a deletionTimestamp.
				left = len(o.GetFinalizers()) > 0
			case apierrors.IsNotFound(err):
				left = false
			case apierrors.IsConflict(err):
				// Changed since listed (maybe re-labelled): look again next pass.
			default:
				return fmt.Errorf("deleting %s %s/%s: %w", o.GetObjectKind().GroupVersionKind().Kind, ns, o.GetName(), err)
			}
		}
		switch {
		case !left:
		case isSTS:
			res.readers++
		default:
			res.others++
		}
	}
	return nil
}

// readerPods counts the pods of the entry's pipeline that may read its source, in any phase,
// terminating ones included: what reads a source is a pod, and a StatefulSet is deleted long
// before its pod stops. Coordinator pods carry no pipeline UID, only the selector labels of the
// pipeline's name, so a pod owned by a StatefulSet of another pipeline of that name (a re-created
// one) is not counted; any other pod with those labels is (the unsafe case counts).
func readerPods(ctx context.Context, reader client.Reader, e urutauv1alpha1.LeaseMember) (int, error) {
	var all []corev1.Pod
	for _, sel := range readerSelectors(e.PipelineName) {
		pods := &corev1.PodList{}
		if err := reader.List(ctx, pods, client.InNamespace(e.Namespace), client.MatchingLabels(sel)); err != nil {
			return 0, fmt.Errorf("listing the pods of pipeline %s in namespace %q: %w", e.PipelineName, e.Namespace, err)
		}
		all = append(all, pods.Items...)
	}
	successor, err := nameTakenByAnother(ctx, reader, e)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range all {
		pod := &all[i]
		if pod.Labels[urutauv1alpha1.LabelApp] == coordinator.AppWorker {
			// A worker belongs to a coordinator pod (its owner); one left behind still counts,
			// unless a pipeline of the same name runs there now: the workers are its own.
			if !successor {
				n++
			}
			continue
		}
		owned, err := ownedByAnother(ctx, reader, pod, e.PipelineUID)
		if err != nil {
			return 0, err
		}
		if !owned {
			n++
		}
	}
	return n, nil
}

// readerSelectors select the pods of pipeline cr that may read its source: its coordinator, and
// its workers (a Kafka source's workers consume the topic themselves; the others write what the
// coordinator read, and a worker outliving its coordinator is counted all the same).
func readerSelectors(cr string) []map[string]string {
	workers := coordinator.SelectorLabels(cr)
	workers[urutauv1alpha1.LabelApp] = coordinator.AppWorker
	return []map[string]string{coordinator.SelectorLabels(cr), workers}
}

// nameTakenByAnother tells whether the coordinator StatefulSet of the entry's pipeline name in
// its namespace carries another pipeline's UID: a pipeline re-created under that name runs there.
func nameTakenByAnother(ctx context.Context, reader client.Reader, e urutauv1alpha1.LeaseMember) (bool, error) {
	sts := &appsv1.StatefulSet{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: coordinator.CoordinatorName(e.PipelineName)}, sts)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the coordinator StatefulSet of %s in namespace %q: %w", e.PipelineName, e.Namespace, err)
	}
	other := sts.Labels[urutauv1alpha1.LabelHubPipelineUID]
	return other != "" && other != string(e.PipelineUID), nil
}

// ownedByAnother tells whether pod is controlled by a StatefulSet that carries another
// pipeline's UID label.
func ownedByAnother(ctx context.Context, reader client.Reader, pod *corev1.Pod, uid types.UID) (bool, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "StatefulSet" {
		return false, nil
	}
	sts := &appsv1.StatefulSet{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, sts)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the owner of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	other := sts.Labels[urutauv1alpha1.LabelHubPipelineUID]
	return sts.UID == ref.UID && other != "" && other != string(uid), nil
}

// isUnreachable tells an error that says "the member did not answer" from one the member
// answered with.
func isUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, multicluster.ErrClusterNotFound) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errMemberDown) || errors.Is(err, errOtherCluster) ||
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
