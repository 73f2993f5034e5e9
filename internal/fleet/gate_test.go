package fleet

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/members"
)

// A termination is acknowledged (status.terminated.observedGeneration, after which the hub
// promises no member write) only once no work of an earlier reconcile is still running on a
// member: found by the randomized history checker (seed 20052), where a slow member's cleanup
// went on deleting after the acknowledgement.
func TestGateWaitsForRunningWorkBeforeAcknowledging(t *testing.T) {
	key := types.NamespacedName{Namespace: "cdc", Name: "p"}
	stored := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Generation: 2},
		Status: urutauv1alpha1.CDCPipelineStatus{Terminated: &urutauv1alpha1.Terminated{Reason: "manual-stop"}}}
	r := &CoordinatorReconciler{Recorder: events.NewFakeRecorder(10)}
	// acknowledged runs the gate on the pipeline as stored and tells whether the status it sets
	// acknowledges the termination.
	acknowledged := func() bool {
		t.Helper()
		p := stored.DeepCopy()
		if !r.gate(p, &world{}) {
			t.Fatal("the gate let a terminated pipeline through")
		}
		return p.Status.Terminated.ObservedGeneration != 0
	}

	late := members.WorkKey{Pipeline: key, Member: "slow"}
	r.running.Begin(late)
	r.running.Begin(members.WorkKey{Pipeline: types.NamespacedName{Namespace: "cdc", Name: "other"}, Member: "slow"})
	if acknowledged() {
		t.Fatal("the termination was acknowledged while work on member slow still ran")
	}
	r.running.End(late)
	if !acknowledged() {
		t.Fatal("the termination was not acknowledged once the work ended (another pipeline's work must not hold it)")
	}
	if stored.Status.Terminated.ObservedGeneration != 0 {
		t.Fatal("the gate changed the pipeline it was not given")
	}
}
