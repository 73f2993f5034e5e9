package fleet

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/status"
)

func TestCoordinatorReady(t *testing.T) {
	sts := func(gen, observed int64, ready, updated int32, cur, upd string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{}
		s.Generation = gen
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated,
			CurrentRevision: cur, UpdateRevision: upd}
		return s
	}
	for _, tc := range []struct {
		name string
		sts  *appsv1.StatefulSet
		want bool
	}{
		{"rolled out and ready", sts(2, 2, 1, 1, "r2", "r2"), true},
		{"no revisions reported", sts(1, 1, 1, 1, "", ""), true},
		{"new spec not observed: the ready pod is the old one", sts(3, 2, 1, 1, "r2", "r2"), false},
		{"rolling: the ready pod is still the old revision", sts(3, 3, 1, 0, "r2", "r3"), false},
		{"updated but revision not switched", sts(3, 3, 1, 1, "r2", "r3"), false},
		{"updated pod not ready", sts(3, 3, 0, 1, "r3", "r3"), false},
	} {
		if got := coordinatorReady(tc.sts); got != tc.want {
			t.Errorf("%s: coordinatorReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPrefetch(t *testing.T) {
	release := make(chan struct{})
	calls := 0
	wait := prefetch(func() (int, error) {
		<-release
		calls++
		return 7, errors.New("answer")
	})
	close(release)
	for range 2 {
		v, err := wait()
		if v != 7 || err == nil || err.Error() != "answer" {
			t.Fatalf("prefetch gave %d, %v; want 7, answer", v, err)
		}
	}
	if calls != 1 {
		t.Errorf("read ran %d times, want once", calls)
	}
}

// TestNextLookDeparted: a departed member that answers and still holds a reader brings the
// pipeline back soon by itself, whatever its entry's state; one draining, or whose pass failed, at
// the retry interval; one that does not answer waits for its health check (or the fence's bound).
// The Removing rows check the same with the entry listed in the status, as an entry not yet
// confirmed gone is.
func TestNextLookDeparted(t *testing.T) {
	r := &CoordinatorReconciler{WaitInterval: 2 * time.Second, RetryInterval: 30 * time.Second}
	p := &urutauv1alpha1.CDCPipeline{}
	for _, tc := range []struct {
		name   string
		state  lease.State
		failed bool
		want   time.Duration
	}{
		{"holding a reader", lease.Holding, false, 2 * time.Second},
		{"draining", lease.Draining, false, 30 * time.Second},
		{"empty", lease.Empty, false, 0},
		{"unreachable", lease.Unreachable, false, 0},
		// A member answering 403 to every cleanup LIST, or too slow for the fan-out: the pass
		// says Holding because it is the safe default, not because a reader was seen.
		{"pass failed", lease.Holding, true, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := &placed{departed: map[lease.Key]departedResult{{Cluster: "a"}: {state: tc.state, failed: tc.failed}}}
			// No Removing: the entry was confirmed gone, so the status does not list it.
			if got := r.nextLook(p, &world{}, status.Observation{}, pl, nil); got != tc.want {
				t.Errorf("confirmed gone: nextLook = %s, want %s", got, tc.want)
			}
			want := tc.want
			if want == 0 {
				want = r.RetryInterval
			}
			if got := r.nextLook(p, &world{}, status.Observation{Removing: []string{"a"}}, pl, nil); got != want {
				t.Errorf("removing: nextLook = %s, want %s", got, want)
			}
		})
	}
}
