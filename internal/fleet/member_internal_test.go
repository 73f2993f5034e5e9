package fleet

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
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
