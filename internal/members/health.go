package members

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/urutau-io/fleet/internal/inventory"
)

// Monitor checks every member of the inventory on its own schedule, idle or not: one
// request (GET namespace kube-system, which also reads the member's identity) every interval,
// with jitter, bounded by timeout. A member that stops answering, starts answering again,
// disengages or changes identity calls changed, which brings back the pipelines and leases that
// concern it; a check that finds nothing new writes nothing anywhere. Each member's check runs in
// its own goroutine, so one that hangs delays no other.
type Monitor struct {
	Members   *Set
	Inventory inventory.Inventory
	Interval  time.Duration
	Timeout   time.Duration
	// Changed is called when what a check found differs from the check before.
	Changed func(member string)
	// Checked is called after each check that found the member answering, with the monitor's
	// context (not the check's deadline).
	Checked func(ctx context.Context, member string, c *Conn)
	// Listed is called once, with the inventory of the first round.
	Listed func(ctx context.Context, members []inventory.Member)
	// Left is called for each member no longer listed that had been checked, once its check
	// ended: what the hub keeps about it goes, however it left (its entry deleted, or no longer
	// an entry, which makes no delete event), and a check that ended after it left wrote nothing
	// that stays.
	Left       func(member string)
	listedOnce sync.Once

	mu      sync.Mutex
	next    map[string]time.Time
	running map[string]bool
}

// Start runs the checks until ctx ends (a manager Runnable).
func (h *Monitor) Start(ctx context.Context) error {
	tick := time.NewTicker(max(h.Interval/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		h.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// NeedLeaderElection: only the leader acts on what the checks find.
func (h *Monitor) NeedLeaderElection() bool { return true }

// round starts the checks that are due.
func (h *Monitor) round(ctx context.Context) {
	members, err := h.Inventory.Members(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "health checks: listing the cluster inventory")
		return
	}
	now := time.Now()
	for _, m := range h.prune(members) {
		if h.Left != nil {
			h.Left(m)
		}
	}
	if h.Listed != nil {
		h.listedOnce.Do(func() { h.Listed(ctx, members) })
	}
	for _, m := range members {
		recordCredentialsExpiry(m)
		if !h.due(m.Name, now) {
			continue
		}
		go func() {
			defer h.done(m.Name, time.Now())
			h.check(ctx, m.Name)
		}()
	}
}

// due tells whether member's check should start now, and marks it running.
func (h *Monitor) due(member string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running[member] || now.Before(h.next[member]) {
		return false
	}
	if h.running == nil {
		h.running, h.next = map[string]bool{}, map[string]time.Time{}
	}
	h.running[member] = true
	return true
}

// done schedules member's next check: interval from now, give or take a fifth, so the checks of
// many members spread out.
func (h *Monitor) done(member string, now time.Time) {
	jitter := time.Duration(rand.Int64N(int64(h.Interval)/5+1)) - h.Interval/10
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.running, member)
	h.next[member] = now.Add(h.Interval + jitter)
}

// prune drops the schedules of members no longer in the inventory, and returns them; a member
// whose check still runs is dropped at the first round after it ended.
func (h *Monitor) prune(members []inventory.Member) (left []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	keep := map[string]bool{}
	for _, m := range members {
		keep[m.Name] = true
	}
	for m := range h.next {
		if !keep[m] && !h.running[m] {
			delete(h.next, m)
			left = append(left, m)
		}
	}
	return left
}

// CheckSoon has member checked at the next round (its inventory entry changed). Its schedule
// stays, due now: should it leave the listing before that round, prune still reports it.
func (h *Monitor) CheckSoon(member string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.next[member]; ok {
		h.next[member] = time.Time{}
	}
}

// Forget drops the schedule of a member that left.
func (h *Monitor) Forget(member string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.next, member)
}

// check makes one check of member and records what it found.
func (h *Monitor) check(parent context.Context, member string) {
	ctx, cancel := context.WithTimeout(parent, h.Timeout)
	defer cancel()
	cl, err := h.Members.Manager.GetCluster(ctx, multicluster.ClusterName(member))
	if err != nil {
		memberEngaged.WithLabelValues(member).Set(0)
		h.record(member, Health{Checked: true, Message: h.Members.NotEngagedMessage(member, err)}, nil, "")
		return
	}
	memberEngaged.WithLabelValues(member).Set(1)
	c, err := h.Members.ClientsFor(member, cl)
	if err != nil {
		h.record(member, Health{Checked: true, Engaged: true, Message: err.Error()}, nil, "")
		return
	}
	id, err := ReadIdentity(ctx, c.Live)
	if err != nil {
		h.record(member, Health{Checked: true, Engaged: true, Message: downMessage(member, err, h.Timeout)}, nil, "")
		return
	}
	h.record(member, Health{Checked: true, Up: true, Engaged: true, LastAnswer: time.Now()}, c.Cluster, id)
	if h.Checked != nil {
		h.Checked(parent, member, c)
	}
}

// record keeps what a check found (id read through cl) and tells changed when it differs.
func (h *Monitor) record(member string, found Health, cl cluster.Cluster, id string) {
	changed := h.Members.SetHealth(member, found)
	if id != "" && h.Members.SetIdentity(member, cl, id) {
		changed = true
	}
	if changed && h.Changed != nil {
		h.Changed(member)
	}
}

// notEngagedMessage says why the hub has no connection to member, in words for a person. The
// message is stable while the cause is, so the status does not churn.
func notEngagedMessage(member string, err error) string {
	if errors.Is(err, multicluster.ErrClusterNotFound) {
		return fmt.Sprintf("the hub has no connection to cluster %q: its kubeconfig Secret or ClusterProfile gives no working client, or the cluster did not answer when the hub connected (the hub's log says which)", member)
	}
	return fmt.Sprintf("the hub has no connection to cluster %q: %v", member, err)
}

// downMessage says that member does not answer; a timeout reads the same every time.
func downMessage(member string, err error, timeout time.Duration) string {
	if IsTimeout(err) {
		return fmt.Sprintf("cluster %q does not answer: its health check timed out after %s", member, timeout)
	}
	if IsUnreachable(err) {
		return fmt.Sprintf("cluster %q does not answer: %v", member, err)
	}
	return fmt.Sprintf("cluster %q answers its health check with an error: %v", member, err)
}
