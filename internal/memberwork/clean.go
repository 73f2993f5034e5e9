package memberwork

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
)

// DefaultControllerPatience bounds the wait for a member's StatefulSet controller to see a
// coordinator scaled to zero before it is deleted (scaledDown).
const DefaultControllerPatience = 2 * time.Minute

// Departed is the outcome of cleaning one member.
type Departed struct {
	State   lease.State
	Deleted int
	Message string
	// TimedOut: a request to the member ran out of time.
	TimedOut bool
	// Failed: the pass did not finish (an error other than unreachable, or no answer in time),
	// so State is the unsafe default rather than what the member holds.
	Failed bool
	// FencedUntil, for an unreachable member whose coordinator is fenced, is when the fence's
	// bound passes and the move completes by itself (internal/fencelease).
	FencedUntil time.Time
}

// CleanJob empties one member of one pipeline's objects and says what is left.
type CleanJob struct {
	Conn *members.Conn
	// Entry names the pipeline (UID, name) and the member namespace.
	Entry urutauv1alpha1.LeaseMember
	// Liveness tells whether a write the member left unanswered may still land (fenceLateWrites).
	Liveness *members.Liveness
	// Patience bounds the wait for the member's StatefulSet controller (scaledDown).
	Patience time.Duration
}

func (j *CleanJob) Run(ctx context.Context) Departed {
	start := time.Now()
	defer func() { memberDuration.WithLabelValues(j.Conn.Name).Observe(time.Since(start).Seconds()) }()
	res, err := CleanupMember(ctx, j.Conn.Live, j.Conn.Cached, j.Entry, j.Patience)
	switch {
	case members.IsUnreachable(err):
		memberErrors.WithLabelValues(j.Conn.Name, "unreachable").Inc()
		return Departed{State: lease.Unreachable, Deleted: res.Deleted, TimedOut: members.IsTimeout(err), Message: "cluster does not answer: " + err.Error()}
	case err != nil:
		memberErrors.WithLabelValues(j.Conn.Name, "error").Inc()
		return Departed{State: lease.Holding, Failed: true, Deleted: res.Deleted, Message: err.Error()}
	}
	out := Departed{State: res.state(), Deleted: res.Deleted}
	switch out.State {
	case lease.Holding:
		out.Message = fmt.Sprintf("removing: waiting for %d coordinator StatefulSet(s)/reader pod(s) to go", res.readers)
		if len(res.stray) > 0 {
			out.Message += fmt.Sprintf(" (deleted reader pod(s) no StatefulSet controls, made by hand or orphaned: %s)", strings.Join(res.stray, ", "))
		}
	case lease.Draining:
		out.Message = fmt.Sprintf("removing: %d object(s) left", res.others)
	}
	return fenceLateWrites(out, j.Conn.Name, j.Liveness, j.Conn.Host(), time.Now())
}

// fenceLateWrites keeps a member that looks empty counted as holding while a write the hub sent
// it without an answer may still be committed (Liveness.WriteMayLand): a coordinator StatefulSet
// created by it would start a reader after this pass found none.
func fenceLateWrites(d Departed, member string, l *members.Liveness, host string, now time.Time) Departed {
	if d.State != lease.Empty && d.State != lease.Draining {
		return d
	}
	until, ok := l.WriteMayLand(host, now)
	if !ok {
		return d
	}
	d.State = lease.Holding
	d.Message = fmt.Sprintf("removing: cluster %q left a write unanswered, which it may still commit until %s; it counts as holding a reader until then", member, until.UTC().Format(time.RFC3339))
	return d
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
		// The fence Lease of a fenced placement: without it, a fenced coordinator stops.
		&coordinationv1.LeaseList{},
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

// CleanupResult is what is left of a pipeline in a member after a cleanup pass.
type CleanupResult struct {
	// readers counts coordinator StatefulSets and reader pods left; others everything else.
	readers, others int
	// Deleted counts delete requests that removed something; Scaled the coordinator
	// StatefulSets kept at zero replicas until their controller has seen the scale.
	Deleted, Scaled int
	// stray names the reader pods no StatefulSet controlled, deleted by this pass.
	stray []string
}

func (c CleanupResult) state() lease.State {
	switch {
	case c.readers > 0:
		return lease.Holding
	case c.others > 0:
		return lease.Draining
	}
	return lease.Empty
}

// CleanupMember deletes, in the entry's namespace of a member, every object the hub wrote for the
// entry's pipeline, then counts what is left, reader pods included. Objects are found by the UID
// label and deleted with a UID and resourceVersion precondition, never by name alone: an object
// re-labelled for a re-created pipeline of the same name in the meantime is left alone. The
// StatefulSet is deleted with background propagation (its pods go through the garbage collector;
// foreground would leave it in place until they are gone, and forever where no collector runs).
// Reader pods that no StatefulSet controls (made by hand, or left by a StatefulSet deleted with
// --cascade=orphan) are deleted too: no collector ever will. Reads go to the API server, never a
// cache, so an unreachable member shows as an error. A StatefulSet its controller has seen is
// scaled to zero first and deleted once the controller has seen that (scaledDown).
func CleanupMember(ctx context.Context, reader client.Reader, writer client.Client, e urutauv1alpha1.LeaseMember, patience time.Duration) (CleanupResult, error) {
	var res CleanupResult
	sel := client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: string(e.PipelineUID)}
	for _, list := range cleanupLists() {
		if err := reader.List(ctx, list, client.InNamespace(e.Namespace), sel); err != nil {
			// Only ScaledObjects may not be served: a member without KEDA holds none of them.
			if _, scaledObjects := list.(*unstructured.UnstructuredList); scaledObjects && kedaMissing(err) {
				continue
			}
			return res, fmt.Errorf("listing %T in namespace %q: %w", list, e.Namespace, err)
		}
		if err := deleteListed(ctx, writer, list, e.Namespace, &res, patience); err != nil {
			return res, err
		}
	}
	if err := deleteUnlabelled(ctx, reader, writer, e, &res, patience); err != nil {
		return res, err
	}
	pods, err := readerPods(ctx, reader, e)
	if err != nil {
		return res, err
	}
	res.readers += len(pods.counted)
	for i := range pods.stray {
		if err := DeleteStrayPod(ctx, writer, &pods.stray[i]); err != nil {
			return res, err
		}
		res.Deleted++
		res.stray = append(res.stray, pods.stray[i].Name)
	}
	return res, nil
}

// deleteUnlabelled deletes the entry's pipeline's coordinator StatefulSet when a person removed
// its pipeline-UID label, by which the pass above finds what to delete: it still carries the
// hub's other labels for that pipeline (managed-by, hub namespace and name), and its pod, which
// readerPods counts, would otherwise hold the member forever (a move that never completes, a
// tombstone never replayed). Without the UID label it cannot be told from a re-created pipeline
// of the same name placed there: deleting it then only restarts that pipeline's coordinator,
// which its own reconcile makes again, while keeping it would keep a reader no one stops. One
// that carries any UID label, or not the hub's labels (a single-cluster operator's, or one
// stripped of every label, which the hub cannot tell from one it never wrote), is left alone.
func deleteUnlabelled(ctx context.Context, reader client.Reader, writer client.Client, e urutauv1alpha1.LeaseMember, res *CleanupResult, patience time.Duration) error {
	sts := &appsv1.StatefulSet{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: coordinator.CoordinatorName(e.PipelineName)}, sts)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the coordinator StatefulSet of %s in namespace %q: %w", e.PipelineName, e.Namespace, err)
	}
	l := sts.Labels
	if _, labelled := l[urutauv1alpha1.LabelHubPipelineUID]; labelled || l[urutauv1alpha1.LabelManagedBy] != urutauv1alpha1.ManagedByFleet ||
		l[urutauv1alpha1.LabelHubName] != e.PipelineName || l[urutauv1alpha1.LabelHubNamespace] != e.PipelineNamespace {
		return nil
	}
	list := &appsv1.StatefulSetList{Items: []appsv1.StatefulSet{*sts}}
	return deleteListed(ctx, writer, list, e.Namespace, res, patience)
}

// DeleteStrayPod deletes a reader pod no StatefulSet controls, with a UID precondition: a pod of
// that name made since is not ours to judge.
func DeleteStrayPod(ctx context.Context, writer client.Client, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	uid := pod.UID
	err := writer.Delete(ctx, pod, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting reader pod %s/%s, which no StatefulSet controls: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// deleteListed deletes the listed objects not being deleted yet and counts those left.
func deleteListed(ctx context.Context, writer client.Client, list client.ObjectList, ns string, res *CleanupResult, patience time.Duration) error {
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
		if sts, ok := o.(*appsv1.StatefulSet); ok && !scaledDown(sts, time.Now(), patience) {
			refused, err := scaleToZero(ctx, writer, sts, time.Now())
			if err != nil {
				return err
			}
			if !refused {
				res.readers++
				res.Scaled++
				continue
			}
			// The member will not have it scaled (an admission policy): deleted as before.
		}
		if o.GetDeletionTimestamp() == nil {
			uid, rv := o.GetUID(), o.GetResourceVersion()
			err := writer.Delete(ctx, o, client.Preconditions{UID: &uid, ResourceVersion: &rv},
				client.PropagationPolicy(metav1.DeletePropagationBackground))
			switch {
			case err == nil:
				res.Deleted++
				// Without finalizers the object is gone now; one with finalizers shows up next
				// pass with a deletionTimestamp. A StatefulSet deleted now still counts in this
				// pass; the next pass counts its pods.
				left = isSTS || len(o.GetFinalizers()) > 0
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

// scaledDown tells whether a coordinator StatefulSet may be deleted: scaled to zero and the
// scale seen by its controller (status.observedGeneration), or the controller silent for patience
// since the hub scaled it down (a member whose controller manager is down, or that runs none:
// its pods go then as pods no StatefulSet controls).
//
// Why not delete it at once (chaos case-5-stale-confirm-cluster-gone): a StatefulSet controller
// whose watch of StatefulSets lags (its API server just restarted) still holds the deleted
// StatefulSet at one replica when the garbage collector deletes pod-0, and makes pod-0 again, a
// reader that appears after a pass found the member empty. A controller that has seen the scale
// to zero makes no pod from any later state of its cache. kubectl deleted StatefulSets the same
// way, before garbage collection did it. An observedGeneration of 0 proves nothing: the
// controller makes pods before it writes its status.
func scaledDown(sts *appsv1.StatefulSet, now time.Time, patience time.Duration) bool {
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 0 {
		return false
	}
	if sts.Status.ObservedGeneration >= sts.Generation {
		return true
	}
	at, ok := scaledDownAt(sts, now)
	return ok && !now.Before(at.Add(patience))
}

// scaledDownAt reads AnnotationScaledDownAt, "<generation>/<RFC 3339 time>": when the hub scaled
// the StatefulSet to zero, making that generation. A value of another generation (the StatefulSet
// changed since, or the annotation outlived an earlier placement), one that does not parse, or a
// time to come counts as none.
func scaledDownAt(sts *appsv1.StatefulSet, now time.Time) (time.Time, bool) {
	gen, at, ok := strings.Cut(sts.Annotations[urutauv1alpha1.AnnotationScaledDownAt], "/")
	if !ok || gen != strconv.FormatInt(sts.Generation, 10) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil || t.After(now.Add(time.Minute)) {
		return time.Time{}, false
	}
	return t, true
}

// scaleToZero sets a coordinator StatefulSet's replicas to zero and records when and at which
// generation (AnnotationScaledDownAt), with the resourceVersion it was read at as a precondition
// (a conflict is looked at again next pass). refused tells that the member will not have it
// scaled: an admission policy forbids or undoes the write.
func scaleToZero(ctx context.Context, writer client.Client, sts *appsv1.StatefulSet, now time.Time) (refused bool, err error) {
	zero := sts.Spec.Replicas != nil && *sts.Spec.Replicas == 0
	if _, recorded := scaledDownAt(sts, now); zero && recorded {
		return false, nil // waiting for its controller to see it
	}
	gen := sts.Generation
	if !zero {
		gen++ // the API server counts the change of spec.replicas
	}
	patch := client.MergeFromWithOptions(sts.DeepCopy(), client.MergeFromWithOptimisticLock{})
	sts.Spec.Replicas = ptr.To[int32](0)
	metav1.SetMetaDataAnnotation(&sts.ObjectMeta, urutauv1alpha1.AnnotationScaledDownAt, fmt.Sprintf("%d/%s", gen, now.UTC().Format(time.RFC3339)))
	err = writer.Patch(ctx, sts, patch)
	if err == nil && sts.Generation > gen && sts.Spec.Replicas != nil && *sts.Spec.Replicas == 0 {
		// A mutating webhook changed more of the spec than the replicas: record the generation the
		// API server counted, or the patience would never start on a member without a controller.
		err = recordScaledDownAt(ctx, writer, sts, now)
	}
	switch {
	case err == nil:
		return sts.Spec.Replicas == nil || *sts.Spec.Replicas != 0, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return true, nil
	}
	return false, fmt.Errorf("scaling StatefulSet %s/%s to zero before deleting it: %w", sts.Namespace, sts.Name, err)
}

// recordScaledDownAt rewrites AnnotationScaledDownAt with the StatefulSet's own generation. A
// metadata change counts no generation, unless a webhook changes the spec on every write: then
// the value is off again, and the member holds until a controller sees the scale.
func recordScaledDownAt(ctx context.Context, writer client.Client, sts *appsv1.StatefulSet, now time.Time) error {
	patch := client.MergeFromWithOptions(sts.DeepCopy(), client.MergeFromWithOptimisticLock{})
	metav1.SetMetaDataAnnotation(&sts.ObjectMeta, urutauv1alpha1.AnnotationScaledDownAt, fmt.Sprintf("%d/%s", sts.Generation, now.UTC().Format(time.RFC3339)))
	return writer.Patch(ctx, sts, patch)
}

// podsOfPipeline are the pods of a pipeline that may read its source, in any phase, terminating
// ones included: what reads a source is a pod, and a StatefulSet is deleted long before its pod
// stops. counted are every one that counts as a reader; stray those of them that no
// StatefulSet controls (the hub deletes those: no garbage collector ever will).
type podsOfPipeline struct {
	counted, stray []corev1.Pod
}

// readerPods finds the entry's pipeline's reader pods. Coordinator pods carry no pipeline UID,
// only the selector labels of the pipeline's name, so a pod owned by a StatefulSet of another
// pipeline of that name (a re-created one) is not counted; any other pod with those labels is (the
// unsafe case counts).
func readerPods(ctx context.Context, reader client.Reader, e urutauv1alpha1.LeaseMember) (podsOfPipeline, error) {
	var out podsOfPipeline
	var all []corev1.Pod
	for _, sel := range readerSelectors(e.PipelineName) {
		pods := &corev1.PodList{}
		if err := reader.List(ctx, pods, client.InNamespace(e.Namespace), client.MatchingLabels(sel)); err != nil {
			return out, fmt.Errorf("listing the pods of pipeline %s in namespace %q: %w", e.PipelineName, e.Namespace, err)
		}
		all = append(all, pods.Items...)
	}
	successor, err := nameTakenByAnother(ctx, reader, e)
	if err != nil {
		return out, err
	}
	for i := range all {
		pod := all[i]
		if pod.Labels[urutauv1alpha1.LabelApp] == coordinator.AppWorker {
			// A worker belongs to a coordinator pod (its owner); one left behind still counts,
			// unless a pipeline of the same name runs there now: the workers are its own.
			if !successor {
				out.counted = append(out.counted, pod)
			}
			continue
		}
		owner, err := ControllerOf(ctx, reader, &pod)
		if err != nil {
			return out, err
		}
		switch {
		case owner.other(e.PipelineUID):
		case !owner.Exists && !owner.Foreign:
			out.counted = append(out.counted, pod)
			out.stray = append(out.stray, pod)
		default:
			out.counted = append(out.counted, pod)
		}
	}
	return out, nil
}

// PodOwner is what controls a coordinator pod: Exists when a StatefulSet of that UID does, and
// pipeline is the UID label that StatefulSet carries; Foreign when a controller of another kind
// does (its pod is counted, never deleted: that controller would only make it again).
type PodOwner struct {
	Exists, Foreign bool
	pipeline        string
}

// other tells whether the owner is a StatefulSet of another pipeline (a re-created one).
func (o PodOwner) other(uid types.UID) bool {
	return o.Exists && o.pipeline != "" && o.pipeline != string(uid)
}

// ControllerOf reads the StatefulSet that controls pod, if any.
func ControllerOf(ctx context.Context, reader client.Reader, pod *corev1.Pod) (PodOwner, error) {
	ref := metav1.GetControllerOf(pod)
	switch {
	case ref == nil:
		return PodOwner{}, nil
	case ref.Kind != "StatefulSet" || ref.APIVersion != appsv1.SchemeGroupVersion.String():
		return PodOwner{Foreign: true}, nil
	}
	sts := &appsv1.StatefulSet{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, sts)
	switch {
	case apierrors.IsNotFound(err):
		return PodOwner{}, nil
	case err != nil:
		return PodOwner{}, fmt.Errorf("reading the owner of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if sts.UID != ref.UID {
		return PodOwner{}, nil
	}
	return PodOwner{Exists: true, pipeline: sts.Labels[urutauv1alpha1.LabelHubPipelineUID]}, nil
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

// CleanEntries empties, concurrently, the member each entry names when it can be reached as the
// cluster the entry names (registered, answering, same identity), and says what each holds; the
// others are unreachable. timedOut is told of a member whose requests timed out.
func CleanEntries(ctx context.Context, s *members.Set, opts members.FanOutOptions, entries []urutauv1alpha1.LeaseMember, registeredMembers []inventory.Member, timedOut func(member string) string, patience time.Duration) map[lease.Key]lease.State {
	registered := map[string]bool{}
	for _, m := range registeredMembers {
		registered[m.Name] = true
	}
	out := map[lease.Key]lease.State{}
	byMember := map[string]urutauv1alpha1.LeaseMember{}
	for _, e := range entries {
		out[lease.KeyOf(e)] = lease.Unreachable
		if down, _ := s.Down(e.Cluster); registered[e.Cluster] && !down {
			byMember[e.Cluster] = e
		}
	}
	done, _ := members.FanOut(ctx, opts, slices.Sorted(maps.Keys(byMember)), func(ctx context.Context, m string) Departed {
		e := byMember[m]
		c, err := s.Conn(ctx, m)
		if err != nil {
			return Departed{State: lease.Unreachable, Message: err.Error()}
		}
		// The member must still be the cluster the entry names.
		if err := s.SameCluster(ctx, c, e.ClusterID); err != nil {
			return Departed{State: lease.Unreachable, Message: err.Error()}
		}
		d := (&CleanJob{Conn: c, Entry: e, Liveness: s.Liveness, Patience: patience}).Run(ctx)
		if d.TimedOut {
			timedOut(m)
		}
		return d
	}, func(string, error) Departed { return Departed{State: lease.Holding} })
	for m, d := range done {
		out[lease.KeyOf(byMember[m])] = d.State
	}
	return out
}
