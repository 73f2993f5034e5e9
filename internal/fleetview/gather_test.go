package fleetview

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A leader Lease no replica renewed within its duration makes the health records historical,
// and says so; a current one, or none (--leader-elect=false), says nothing.
func TestStaleLeader(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	lease := func(renewed time.Duration) client.Object {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: LeaderElectionID},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: new(int32(15)), RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}}}
	}
	for _, c := range []struct {
		name  string
		objs  []client.Object
		stale bool
	}{
		{"renewed 5s ago", []client.Object{lease(5 * time.Second)}, false},
		{"renewed 10m ago", []client.Object{lease(10 * time.Minute)}, true},
		{"no leader election", nil, false},
	} {
		cl := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(c.objs...).Build()
		got := staleLeader(t.Context(), cl, "urutau-system", now)
		if (got != "") != c.stale {
			t.Errorf("%s: warning %q, want one: %v", c.name, got, c.stale)
		}
		if c.stale && !strings.Contains(got, "2026-12-01T11:50:00Z") {
			t.Errorf("%s: warning %q does not say since when", c.name, got)
		}
	}
}
