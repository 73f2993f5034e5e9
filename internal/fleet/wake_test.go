package fleet

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/urutau-io/fleet/internal/members"
)

// A member that answers again brings back every reconcile that skipped it, each in its own
// controller: a ReaderLease's key in the pipeline controller's queue would be lost.
func TestWakeRoutesEachKeyToItsController(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]())
	defer q.ShutDown()
	r := &CoordinatorReconciler{}
	r.queue.Store(&q)
	var leases []types.NamespacedName
	r.wakeLease = func(keys ...types.NamespacedName) { leases = append(leases, keys...) }
	n := types.NamespacedName{Namespace: "urutau-system", Name: "mysql-1101-abc"}
	r.wake(members.WakeKey{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}}, members.WakeKey{NamespacedName: n, Lease: true})
	if q.Len() != 1 {
		t.Fatalf("pipeline queue holds %d keys, want 1 (the pipeline)", q.Len())
	}
	got, _ := q.Get()
	if got.Name != "p" {
		t.Fatalf("pipeline queue got %v", got)
	}
	if !slices.Equal(leases, []types.NamespacedName{n}) {
		t.Fatalf("lease controller woken for %v, want [%v]", leases, n)
	}
}
