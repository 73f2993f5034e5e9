package memberwork

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/members"
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

// A superseded apply is neither a failure nor silent: the member waits for the newer reconcile,
// which is asked for at once.
func TestSupersededApplyLooksAgain(t *testing.T) {
	asked := false
	j := &ApplyJob{Conn: &members.Conn{Name: "member-c"}, Crossed: func() { asked = true }}
	res := Result{Obs: status.MemberObservation{Name: "member-c"}}
	if j.boundaryAllows(&res, errors.Join(ErrSuperseded)) {
		t.Fatal("a superseded apply went on")
	}
	if !asked || !res.Retry || res.Err != nil || res.Obs.Phase != urutauv1alpha1.ClusterPending || res.EventReason != "" {
		t.Fatalf("superseded apply: looked again %v, retry %v, err %v, phase %s, event %q", asked, res.Retry, res.Err, res.Obs.Phase, res.EventReason)
	}
}
