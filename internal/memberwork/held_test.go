package memberwork

import (
	"strings"
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
// member shows it: its controller saw the scale and no pod of the pipeline is left, one that
// no StatefulSet controls included. Anything else says it is being scaled to zero, and why.
func TestHeldNote(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	seen, unseen := heldSTS(0, true), heldSTS(0, false)
	for _, tc := range []struct {
		name string
		sts  *appsv1.StatefulSet
		pods []client.Object
		want string
	}{
		{"seen, no pod left: stopped", seen, nil, stoppedNote},
		{"not seen by its controller yet", unseen, nil, stoppingNote + notSeenYet},
		{"its pod still terminating", seen, []client.Object{coordinatorPod("p-coordinator-0", seen)},
			stoppingNote + ": 1 pod(s) of it still run (p-coordinator-0)"},
		{"re-made at zero over an orphaned pod", seen, []client.Object{coordinatorPod("p-coordinator-0", nil)},
			stoppingNote + ": 1 pod(s) of it still run (p-coordinator-0)"},
		{"many pods: the first three named", seen, []client.Object{coordinatorPod("a", nil), coordinatorPod("b", nil), coordinatorPod("c", nil), coordinatorPod("d", nil)},
			stoppingNote + ": 4 pod(s) of it still run (a, b, c, and 1 more)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(tc.pods, tc.sts.DeepCopy())...).Build()
			j := &ApplyJob{Pipeline: &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p", UID: types.UID("uid-p")}},
				Conn: &members.Conn{Name: "a", Live: live}}
			if got := j.heldNote(t.Context(), tc.sts); got != tc.want {
				t.Errorf("note %q, want %q", got, tc.want)
			}
		})
	}
}

// The StatefulSet stopCoordinator decides on is the member's own, not the cache's: a cache one
// pass behind that still shows it at zero (the Secret closed, reopened, closed again) must not
// make a running coordinator look stopped; it is scaled again (here refused by a leader fence
// never renewed, so nothing is written and nothing is said).
func TestStopCoordinatorReadsTheMember(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(heldSTS(0, true)).Build()
	running := heldSTS(1, true)
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(running, coordinatorPod("p-coordinator-0", running)).Build()
	p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p", UID: types.UID("uid-p")}}
	p.Spec.Definition.Inline = &runtime.RawExtension{Raw: []byte(`{"pipeline":"p","source":{"kind":"mysql","serverId":"2001"},` +
		`"sink":{"type":"iceberg+rest","namespace":"raw","warehouse":"s3://lake/p"},"tables":[{"source":"web.clicks","target":"raw.clicks","primaryKey":["id"]}]}`)}
	p.Spec.Secrets = urutauv1alpha1.Secrets{Source: "src", Catalog: "cat"}
	w, err := coordinator.Render(p, coordinator.Settings{DefaultImage: "coordinator:test"})
	if err != nil {
		t.Fatal(err)
	}
	j := &ApplyJob{Pipeline: p, Conn: &members.Conn{Name: "a", Cached: cached, Live: live}, Applier: &ssa.Applier{}, Leader: &LeaderFence{}}
	res := Result{Obs: status.MemberObservation{Name: "a", Message: "denied"}}
	j.stopCoordinator(t.Context(), &res, w)
	if strings.Contains(res.Obs.Message, "scaled to zero") {
		t.Errorf("message %q: the member runs the coordinator at one replica", res.Obs.Message)
	}
	if res.Wrote != 0 {
		t.Errorf("%d writes past a leader fence never renewed", res.Wrote)
	}
}
