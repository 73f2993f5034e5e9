package memberwork

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

type fakeLock struct {
	resourcelock.Interface
	err error
}

func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }

// A replica that froze past its renew deadline writes nothing when it thaws, before its elector
// notices the lost lease.
func TestLeaderFence(t *testing.T) {
	var none *LeaderFence
	if err := none.Fresh(time.Now()); err != nil {
		t.Fatalf("without leader election: %v", err)
	}
	lock := &fakeLock{}
	f := &LeaderFence{Interface: lock, RenewDeadline: 10 * time.Second}
	if err := f.Fresh(time.Now()); !errors.Is(err, errNotLeading) {
		t.Fatalf("never renewed: %v", err)
	}
	if err := f.Create(t.Context(), resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := f.Fresh(now); err != nil {
		t.Fatalf("just renewed: %v", err)
	}
	if err := f.Fresh(now.Add(11 * time.Second)); !errors.Is(err, errNotLeading) {
		t.Fatalf("frozen for 11s: %v", err)
	}
	lock.err = errors.New("conflict")
	_ = f.Update(t.Context(), resourcelock.LeaderElectionRecord{})
	if err := f.Fresh(now.Add(11 * time.Second)); !errors.Is(err, errNotLeading) {
		t.Fatalf("a failed renewal counted: %v", err)
	}
	lock.err = nil
	if err := f.Update(t.Context(), resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Fresh(time.Now()); err != nil {
		t.Fatalf("renewed again: %v", err)
	}
}
