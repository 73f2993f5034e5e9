package fencelease

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
)

// The hub's bound: from the last acknowledged renewal, or members.WriteLanding after one that got
// no answer; never while it renews; a record first seen counts as renewed members.WriteLanding
// from then.
func TestFenceRenewerBound(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := NewRenewer(Config{TTL: 20 * time.Second, Grace: 10 * time.Second, Margin: 5 * time.Second})
	f.now = func() time.Time { return now }
	e := entry("a")
	e.Fence = &urutauv1alpha1.LeaseMemberFence{BoundSeconds: 30, Verified: true, Renewing: true}
	bound := 30*time.Second + 5*time.Second

	f.Hold(e)
	if _, ok := f.DrainedAt(e); ok {
		t.Fatal("drained while the hub renews it")
	}
	first := now
	renew := func(err error) {
		f.mu.Lock()
		f.records[lease.KeyOf(e)].inflight = now
		f.mu.Unlock()
		f.Renew = func(context.Context, Target) error { return err }
		f.renewOne(t.Context(), lease.KeyOf(e))
	}
	now = now.Add(80 * time.Second)
	renew(nil) // acknowledged at now
	acked := now
	now = now.Add(5 * time.Second)
	f.Release(e)
	if at, ok := f.DrainedAt(e); !ok || !at.Equal(latest(acked, first.Add(members.WriteLanding)).Add(bound)) {
		t.Fatalf("drainedAt = %v %v, want the ack plus the bound", at, ok)
	}

	f.Hold(e)
	now = now.Add(time.Second)
	sent := now
	renew(errors.New("context deadline exceeded")) // no answer: may land until sent+members.WriteLanding
	f.Release(e)
	if at, _ := f.DrainedAt(e); !at.Equal(sent.Add(members.WriteLanding).Add(bound)) {
		t.Fatalf("after an unanswered renewal drainedAt = %v, want %v", at, sent.Add(members.WriteLanding).Add(bound))
	}
	before, _ := f.DrainedAt(e)
	f.Hold(e)
	now = now.Add(time.Second)
	renew(&refusedErr{}) // refused: nothing sent, the bound does not move
	f.Release(e)
	if at, _ := f.DrainedAt(e); !at.Equal(before) {
		t.Fatalf("a refused renewal moved the bound: %v, want %v", at, before)
	}
	// A renewal in flight when the hub stops counts as one that gets no answer.
	f.mu.Lock()
	f.records[lease.KeyOf(e)].inflight = now
	f.mu.Unlock()
	if at, _ := f.DrainedAt(e); !at.Equal(now.Add(members.WriteLanding).Add(bound)) {
		t.Fatalf("with a renewal in flight drainedAt = %v", at)
	}
}

func TestRenewalMayLand(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("context deadline exceeded"), true},
		{&refusedErr{}, false},
		{ErrNotSent, false},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{apierrors.NewInternalError(errors.New("etcd")), true},
		{apierrors.NewTimeoutError("slow", 1), true},
	} {
		if got := renewalMayLand(tc.err); got != tc.want {
			t.Errorf("renewalMayLand(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// refusedErr is a refused connection, as the dialer reports it.
type refusedErr struct{}

func (*refusedErr) Error() string { return "connect: connection refused" }
func (*refusedErr) Unwrap() error { return syscall.ECONNREFUSED }

// What a previous leader may have sent: entries the leases hold when the renewer starts count as
// renewed until members.WriteLanding later; entries first seen afterwards start with none.
func TestFenceRenewerAdopt(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := NewRenewer(Config{TTL: 20 * time.Second, Grace: 10 * time.Second, Margin: 5 * time.Second})
	f.now = func() time.Time { return now }
	old := entry("a")
	old.Fence = &urutauv1alpha1.LeaseMemberFence{BoundSeconds: 30, Verified: true, Renewing: true}
	f.adopt([]urutauv1alpha1.LeaseMember{old})
	if !f.records[lease.KeyOf(old)].renewing {
		t.Fatal("an Active, Renewing entry is not renewed after the hub starts leading")
	}
	f.Release(old)
	if at, _ := f.DrainedAt(old); !at.Equal(now.Add(members.WriteLanding + 35*time.Second)) {
		t.Fatalf("adopted entry drainedAt = %v", at)
	}
	fresh := entry("b")
	fresh.Fence = old.Fence
	f.Release(fresh) // never renewed by anyone
	if at, _ := f.DrainedAt(fresh); !at.Equal(time.Time{}.Add(35 * time.Second)) {
		t.Fatalf("an entry first seen after the leases were read drainedAt = %v, want the bound after no renewal", at)
	}
}

// entry is an Active lease entry of one pipeline on member m (identity "id-"+m).
func entry(m string) urutauv1alpha1.LeaseMember {
	return urutauv1alpha1.LeaseMember{Cluster: m, ClusterID: "id-" + m, PipelineUID: "uid-p", PipelineNamespace: "shop",
		PipelineName: "orders", Namespace: "shop", State: urutauv1alpha1.LeaseMemberActive}
}
