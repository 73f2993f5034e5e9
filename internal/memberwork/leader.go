package memberwork

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderFence is the hub's leader-election lock, wrapped to remember when it was last renewed, so
// that a replica that was frozen (SIGSTOP, a VM paused, a long GC) does not write to members
// after another replica took over: client-go's elector notices a lost lease only at its next
// renewal, and the reconciles running meanwhile would go on as if it still led.
//
// Writes to members check Fresh first: the last successful renewal was sent less than
// RenewDeadline ago (on this process's monotonic clock, which runs through a freeze). Another
// replica takes over only after LeaseDuration without a renewal it can see, measured from after
// that renewal was sent, so a fresh fence means no other leader yet. What is left is the moment
// between the check and the write leaving the process.
type LeaderFence struct {
	resourcelock.Interface
	// RenewDeadline bounds how old the last renewal may be (the elector's own RenewDeadline,
	// below its LeaseDuration).
	RenewDeadline time.Duration

	mu      sync.Mutex
	renewed time.Time
}

// errNotLeading is a member write refused because this replica may no longer lead.
var errNotLeading = errors.New("this hub replica may no longer be the leader")

// Create takes the lock and records when.
func (f *LeaderFence) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := f.Interface.Create(ctx, ler)
	f.record(sent, err)
	return err
}

// Update renews the lock and records when.
func (f *LeaderFence) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := f.Interface.Update(ctx, ler)
	f.record(sent, err)
	return err
}

func (f *LeaderFence) record(sent time.Time, err error) {
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if sent.After(f.renewed) {
		f.renewed = sent
	}
}

// Fresh refuses a write when the last renewal is older than RenewDeadline at now. A nil fence
// (no leader election) always allows.
func (f *LeaderFence) Fresh(now time.Time) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	renewed := f.renewed
	f.mu.Unlock()
	if age := now.Sub(renewed); renewed.IsZero() || age >= f.RenewDeadline {
		return fmt.Errorf("%w: its leader-election lease was last renewed %s ago (renew deadline %s)", errNotLeading, age.Round(time.Millisecond), f.RenewDeadline)
	}
	return nil
}
