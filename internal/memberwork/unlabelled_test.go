package memberwork

import (
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
	"github.com/urutau-io/fleet/internal/lease"
)

// hubLabels are the labels the hub writes on pipeline hub/p's objects, less the UID label.
func hubLabels(hubNS, name string) map[string]string {
	return map[string]string{urutauv1alpha1.LabelManagedBy: urutauv1alpha1.ManagedByFleet,
		urutauv1alpha1.LabelHubName: name, urutauv1alpha1.LabelHubNamespace: hubNS,
		urutauv1alpha1.LabelApp: coordinator.AppCoordinator, urutauv1alpha1.LabelPipeline: name}
}

// stoppedSpec and stoppedStatus are a coordinator StatefulSet scaled to zero and seen so by its
// controller: the cleanup deletes it (scaledDown).
var (
	stoppedSpec   = appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0)}
	stoppedStatus = appsv1.StatefulSetStatus{ObservedGeneration: 0}
)

func cleanScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A person removed the pipeline-UID label from the coordinator StatefulSet (seed 260020 of the
// chaos suite: then the placement left the member, and the hub, which finds what to delete by
// that label, never deleted it; its pod held the member forever). It still carries the hub's other
// labels for the pipeline: it is deleted, and counts as a reader in that pass. StatefulSets of
// that name that carry a UID label, or are not the hub's for this pipeline, are left alone.
func TestDeleteUnlabelledCoordinator(t *testing.T) {
	entry := urutauv1alpha1.LeaseMember{PipelineUID: "u1", PipelineName: "p", PipelineNamespace: "hub-ns", Namespace: "cdc"}
	with := func(labels map[string]string, change func(map[string]string)) map[string]string {
		out := map[string]string{}
		for k, v := range labels {
			out[k] = v
		}
		change(out)
		return out
	}
	for name, tc := range map[string]struct {
		labels  map[string]string
		deleted bool
	}{
		"the hub's, its UID label removed": {labels: hubLabels("hub-ns", "p"), deleted: true},
		"its UID label there": {labels: with(hubLabels("hub-ns", "p"), func(l map[string]string) {
			l[urutauv1alpha1.LabelHubPipelineUID] = "u1"
		})},
		"another pipeline's UID label": {labels: with(hubLabels("hub-ns", "p"), func(l map[string]string) {
			l[urutauv1alpha1.LabelHubPipelineUID] = "u2"
		})},
		"not the hub's": {labels: coordinator.SelectorLabels("p")},
		"the hub's for a pipeline of another hub": {labels: hubLabels("other-ns", "p")},
	} {
		t.Run(name, func(t *testing.T) {
			sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: coordinator.CoordinatorName("p"), UID: "sts-1", Labels: tc.labels},
				Spec: stoppedSpec, Status: stoppedStatus}
			c := fake.NewClientBuilder().WithScheme(cleanScheme(t)).WithObjects(sts).Build()
			var res CleanupResult
			if err := deleteUnlabelled(t.Context(), c, c, entry, &res, DefaultControllerPatience); err != nil {
				t.Fatal(err)
			}
			err := c.Get(t.Context(), client.ObjectKeyFromObject(sts), &appsv1.StatefulSet{})
			if gone := err != nil; gone != tc.deleted {
				t.Fatalf("deleted: %v (%v), want %v", gone, err, tc.deleted)
			}
			if tc.deleted && (res.Deleted != 1 || res.readers != 1) {
				t.Fatalf("deleted %d, readers %d; want 1 and 1 (a StatefulSet deleted this pass still counts)", res.Deleted, res.readers)
			}
		})
	}
}

// The whole cleanup of a member: the unlabelled StatefulSet goes in the first pass, and with it
// its pod, which no StatefulSet controls any more (no garbage collector runs here); the pass
// counts both, and the next finds the member empty. Before the fix every pass counted the pod
// and deleted nothing.
func TestCleanupEmptiesAMemberWhoseCoordinatorLostItsLabel(t *testing.T) {
	entry := urutauv1alpha1.LeaseMember{PipelineUID: "u1", PipelineName: "p", PipelineNamespace: "hub-ns", Namespace: "cdc"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: coordinator.CoordinatorName("p"), UID: "sts-1",
		Labels: hubLabels("hub-ns", "p")}, Spec: stoppedSpec, Status: stoppedStatus}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: coordinator.CoordinatorName("p") + "-0", UID: "pod-1",
		Labels: coordinator.SelectorLabels("p"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: types.UID("sts-1"),
			Controller: ptr.To(true)}}}}
	c := fake.NewClientBuilder().WithScheme(cleanScheme(t)).WithObjects(sts, pod).Build()
	var states []lease.State
	for range 3 {
		res, err := CleanupMember(t.Context(), c, c, entry, DefaultControllerPatience)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, res.state())
	}
	want := []lease.State{lease.Holding, lease.Empty, lease.Empty}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("passes ended %v, want %v", states, want)
		}
	}
}
