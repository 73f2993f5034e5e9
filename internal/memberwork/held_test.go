package memberwork

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/status"
)

// heldSTS is pipeline p's coordinator StatefulSet in namespace cdc at replicas, its scale seen by
// its controller or not.
func heldSTS(replicas int32, seen bool) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: coordinator.CoordinatorName("p"), UID: "sts-1", Generation: 3,
			Labels: map[string]string{urutauv1alpha1.LabelHubPipelineUID: "uid-p"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)},
	}
	if seen {
		sts.Status.ObservedGeneration = 3
	}
	return sts
}

// coordinatorPod is a pod with p's coordinator selector labels, controlled by owner (nil: none,
// as after a delete with --cascade=orphan).
func coordinatorPod(name string, owner *appsv1.StatefulSet) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: name, Labels: coordinator.SelectorLabels("p")}}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
	}
	return pod
}

// A coordinator held at zero (a Secret it mounts closed) is said to be stopped only when the
// member shows it: its controller saw the scale and no pod with the coordinator's or its workers'
// labels is left, one that no StatefulSet controls included. Anything else says it is being
// scaled to zero, and why, in a fixed text: a namespace full of pods costs two LISTs of one item.
func TestHeldNote(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	seen, unseen := heldSTS(0, true), heldSTS(0, false)
	many := []client.Object{}
	for i := range 50 {
		many = append(many, coordinatorPod(fmt.Sprintf("p-coordinator-%d", i), nil))
	}
	for _, tc := range []struct {
		name  string
		sts   *appsv1.StatefulSet
		pods  []client.Object
		want  string
		lists int
	}{
		{"seen, no pod left: stopped", seen, nil, stoppedNote, 2},
		{"not seen by its controller yet", unseen, nil, stoppingNote + notSeenYet, 0},
		{"its pod still terminating", seen, []client.Object{coordinatorPod("p-coordinator-0", seen)}, stoppingNote + podsLeft, 1},
		{"re-made at zero over an orphaned pod", seen, []client.Object{coordinatorPod("p-coordinator-0", nil)}, stoppingNote + podsLeft, 1},
		{"a worker pod left", seen, []client.Object{workerPod("p-orders-0")}, stoppingNote + podsLeft, 2},
		{"fifty pods: the same two requests at most, the same text", seen, many, stoppingNote + podsLeft, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := newCountingMember(scheme, append(tc.pods, tc.sts.DeepCopy())...)
			// The fake member ignores limits: how the pods are asked for is checked instead.
			var asked []string
			listed := live.Client
			live.Client = interceptor.NewClient(listed.(client.WithWatch), interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					o := (&client.ListOptions{}).ApplyOptions(opts)
					asked = append(asked, fmt.Sprintf("%T limit %d", list, o.Limit))
					return c.List(ctx, list, opts...)
				}})
			j := &ApplyJob{Pipeline: &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p", UID: types.UID("uid-p")}},
				Conn: &members.Conn{Name: "a", Live: live}}
			if got := j.heldNote(t.Context(), tc.sts); got != tc.want {
				t.Errorf("note %q, want %q", got, tc.want)
			}
			if live.lists != tc.lists || live.gets != 0 {
				t.Errorf("%d LISTs and %d GETs of the member, want %d and 0", live.lists, live.gets, tc.lists)
			}
			for _, a := range asked {
				if a != "*v1.PartialObjectMetadataList limit 1" {
					t.Errorf("pods asked for as %s, want metadata, one at most", a)
				}
			}
		})
	}
}

// workerPod is a worker pod of pipeline p (the workers' selector labels).
func workerPod(name string) *corev1.Pod {
	labels := coordinator.SelectorLabels("p")
	labels[urutauv1alpha1.LabelApp] = coordinator.AppWorker
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: name, Labels: labels}}
}

// The StatefulSet stopCoordinator decides on is the member's own, not the cache's: a cache one
// pass behind that still shows it at zero (the Secret closed, reopened, closed again) must not
// make a running coordinator look stopped; it is scaled to zero again, and the status says it
// is being scaled.
func TestStopCoordinatorReadsTheMember(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	running := heldSTS(1, true)
	open := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cdc", Labels: map[string]string{
		urutauv1alpha1.LabelFleetManaged: "true", "pod-security.kubernetes.io/enforce": "restricted"}}}
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(open, running, coordinatorPod("p-coordinator-0", running)).Build()
	// The member's cached client (its writes go to the member) holds the StatefulSet a pass
	// behind; what it is asked to apply is recorded (the fake client's apply does not merge
	// into objects it was built with).
	var sent []byte
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(heldSTS(0, true)).
		WithInterceptorFuncs(interceptor.Funcs{Apply: func(_ context.Context, _ client.WithWatch, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
			var err error
			sent, err = json.Marshal(obj)
			return err
		}}).Build()
	p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p", UID: types.UID("uid-p")}}
	p.Spec.Definition.Inline = &runtime.RawExtension{Raw: []byte(`{"pipeline":"p","source":{"kind":"mysql","serverId":"2001"},` +
		`"sink":{"type":"iceberg+rest","namespace":"raw","warehouse":"s3://lake/p"},"tables":[{"source":"web.clicks","target":"raw.clicks","primaryKey":["id"]}]}`)}
	p.Spec.Secrets = urutauv1alpha1.Secrets{Source: "src", Catalog: "cat"}
	w, err := coordinator.Render(p, coordinator.Settings{DefaultImage: "coordinator:test"})
	if err != nil {
		t.Fatal(err)
	}
	j := &ApplyJob{Pipeline: p, Conn: &members.Conn{Name: "a", Cached: cached, Live: live}, Applier: &ssa.Applier{}, Manager: "urutau-operator@a"}
	res := Result{Obs: status.MemberObservation{Name: "a", Message: "denied"}}
	j.stopCoordinator(t.Context(), &res, w)
	if want := "denied" + stoppingNote + notSeenYet; res.Obs.Message != want {
		t.Errorf("message %q, want %q", res.Obs.Message, want)
	}
	got := &appsv1.StatefulSet{}
	if err := json.Unmarshal(sent, got); err != nil {
		t.Fatalf("the member was asked to apply %q: %v", sent, err)
	}
	if got.Name != running.Name || got.Spec.Replicas == nil || *got.Spec.Replicas != 0 || res.Wrote != 1 {
		t.Errorf("applied %s at %v replicas in %d writes, want %s at 0 in 1", got.Name, ptr.Deref(got.Spec.Replicas, -1), res.Wrote, running.Name)
	}
}
