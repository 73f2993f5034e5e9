package fleet

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// A termination is acknowledged (status.terminated.observedGeneration, after which the hub
// promises no member write) only once no work of an earlier reconcile is still running on a
// member: found by the randomized history checker (seed 20052), where a slow member's cleanup
// went on deleting after the acknowledgement.
func TestGateWaitsForRunningWorkBeforeAcknowledging(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := urutauv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "cdc", Name: "p"}
	p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Generation: 2},
		Status: urutauv1alpha1.CDCPipelineStatus{Terminated: &urutauv1alpha1.Terminated{Reason: "manual-stop"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(p).WithStatusSubresource(p).Build()
	r := &CoordinatorReconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
	acknowledged := func() bool {
		got := &urutauv1alpha1.CDCPipeline{}
		if err := c.Get(t.Context(), key, got); err != nil {
			t.Fatal(err)
		}
		return got.Status.Terminated.ObservedGeneration != 0
	}
	gate := func() {
		t.Helper()
		got := &urutauv1alpha1.CDCPipeline{}
		if err := c.Get(t.Context(), key, got); err != nil {
			t.Fatal(err)
		}
		stop, err := r.gate(t.Context(), got, &world{})
		if err != nil || !stop {
			t.Fatalf("gate of a terminated pipeline: stop %v, err %v", stop, err)
		}
	}

	late := workKey{pipeline: key, member: "slow"}
	r.running.begin(late)
	r.running.begin(workKey{pipeline: types.NamespacedName{Namespace: "cdc", Name: "other"}, member: "slow"})
	gate()
	if acknowledged() {
		t.Fatal("the termination was acknowledged while work on member slow still ran")
	}
	r.running.end(late)
	gate()
	if !acknowledged() {
		t.Fatal("the termination was not acknowledged once the work ended (another pipeline's work must not hold it)")
	}
}
