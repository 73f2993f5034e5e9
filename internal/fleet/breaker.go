package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// memberBreaker keeps a member whose requests time out from holding every reconcile that
// includes it. A member that refuses connections fails at once, but one that drops packets or
// hangs makes each request wait out --member-timeout, and each reconcile of each pipeline placed
// there pays it in a worker while every other pipeline waits in the queue. After a timeout the
// member is held off for a while: reconciles report it Unreachable at once, except one, when the
// while is over, which probes it. A reconcile in which the member answered ends the hold.
type memberBreaker struct {
	mu   sync.Mutex
	held map[string]*heldOff
}

type heldOff struct {
	until   time.Time
	probing bool
}

// allow tells whether a reconcile may send requests to member at now, and whether it is the probe
// of a held-off member.
func (b *memberBreaker) allow(member string, now time.Time) (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.held[member]
	switch {
	case h == nil:
		return true, false
	case h.probing || now.Before(h.until):
		return false, false
	default:
		h.probing = true
		return true, true
	}
}

// done reports how the member fared in a reconcile that allow let through: it timed out (held
// off for hold from now), answered (the hold ends), or neither (it refused, or was not reached:
// nothing changes, except that a probe that did not get an answer keeps the member held off).
func (b *memberBreaker) done(member string, probe, timedOut, answered bool, now time.Time, hold time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case timedOut || (probe && !answered):
		if b.held == nil {
			b.held = map[string]*heldOff{}
		}
		b.held[member] = &heldOff{until: now.Add(hold)}
	case answered:
		delete(b.held, member)
	}
}

// errHeldOff is the error of a member skipped by the breaker; isUnreachable recognises it.
var errHeldOff = errors.New("held off after its requests timed out")

// isTimeout tells whether err is a request that ran out of time: the member's part of the
// reconcile hit --member-timeout, or the connection timed out.
func isTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// timeoutMessage is what a member whose requests time out shows in the pipeline's status. It is
// the same for every request and every pipeline, so a member that stays hung causes no status
// churn (the request that timed out is logged).
func (r *CoordinatorReconciler) timeoutMessage() string {
	return fmt.Sprintf("cluster does not answer: its requests time out (--member-timeout %s); the hub tries it again every %s and does not wait for it meanwhile", r.MemberTimeout, r.RetryInterval)
}
