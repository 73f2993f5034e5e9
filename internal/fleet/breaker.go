package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// memberBreaker keeps a member that does not answer from holding the reconciles that include it.
// A member that refuses connections fails at once, but one that drops packets or hangs makes each
// request wait out --member-timeout, and one the provider has not engaged makes each reconcile
// wait for the engagement (engagedCluster). Two states:
//   - slow: a reconcile stopped waiting for its work there (fanOut), and it has not answered
//     since. Reconciles send it nothing new, so they do not pile up more work that waits; the
//     pipelines that skipped it are reconciled again when it answers, or when its work ends.
//   - held off: its work timed out, or found it not engaged. Reconciles report it Unreachable at
//     once, with the message of the failure, except one, when the hold is over, which probes it.
//     Work in which the member answered, or a change of its inventory entry, ends the hold.
type memberBreaker struct {
	mu   sync.Mutex
	held map[string]*heldOff
	slow map[string]sets.Set[types.NamespacedName]
}

type heldOff struct {
	until   time.Time
	probing bool
	message string
}

// heldOffError is the error of a held-off member: errHeldOff, with the message of the failure
// that started the hold.
type heldOffError struct{ message string }

func (e *heldOffError) Error() string        { return e.message }
func (e *heldOffError) Is(target error) bool { return target == errHeldOff }

// allow tells whether pipeline's reconcile may send requests to member at now, and whether it is
// the probe of a held-off member. When it may not, err says why: errSlow, or a heldOffError.
func (b *memberBreaker) allow(member string, pipeline types.NamespacedName, now time.Time) (probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w, ok := b.slow[member]; ok {
		w.Insert(pipeline)
		return false, errSlow
	}
	h := b.held[member]
	switch {
	case h == nil:
		return false, nil
	case h.probing || now.Before(h.until):
		return false, &heldOffError{message: h.message}
	default:
		h.probing = true
		return true, nil
	}
}

// forgive ends member's hold: its inventory entry changed, so the next reconcile tries it.
func (b *memberBreaker) forgive(member string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, member)
}

// markSlow records that a reconcile stopped waiting for its work on member.
func (b *memberBreaker) markSlow(member string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.slow[member]; ok {
		return
	}
	if b.slow == nil {
		b.slow = map[string]sets.Set[types.NamespacedName]{}
	}
	b.slow[member] = sets.New[types.NamespacedName]()
}

// isSlow tells whether member is slow (see markSlow).
func (b *memberBreaker) isSlow(member string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.slow[member]
	return ok
}

// done reports how the member fared in work that allow let through: it answered (the hold
// ends), or failed in a way that holds it off for hold from now (holdMessage, what reconciles
// show meanwhile), or neither (it refused, or was not reached: nothing changes, except that a
// probe that did not get an answer keeps the member held off). A member that answered or is held
// off is no longer slow: done returns the pipelines that skipped it meanwhile, to be reconciled
// again.
func (b *memberBreaker) done(member string, probe, answered bool, holdMessage string, now time.Time, hold time.Duration) (skipped []types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if answered || holdMessage != "" {
		if w, ok := b.slow[member]; ok {
			skipped = w.UnsortedList()
			delete(b.slow, member)
		}
	}
	switch {
	case holdMessage != "" || (probe && !answered):
		if holdMessage == "" && b.held[member] != nil {
			holdMessage = b.held[member].message
		}
		if b.held == nil {
			b.held = map[string]*heldOff{}
		}
		b.held[member] = &heldOff{until: now.Add(hold), message: holdMessage}
	case answered:
		delete(b.held, member)
	}
	return skipped
}

// settle ends member's slow state when work a reconcile stopped waiting for returns (answered,
// timed out, or refused: done has recorded which), and returns the pipelines that skipped it.
func (b *memberBreaker) settle(member string) []types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.slow[member]
	if !ok {
		return nil
	}
	delete(b.slow, member)
	return w.UnsortedList()
}

// lateWork is the member work that runs, by pipeline and member, so a reconcile does not start
// work where that of an earlier one still runs (fanOut lets it outlive its reconcile), and the
// results of late work, which the next reconcile of the pipeline takes instead of working again.
type lateWork struct {
	mu      sync.Mutex
	running map[lateKey]bool
	results map[lateKey]lateResult
}

type lateKey struct {
	pipeline types.NamespacedName
	member   string
}

// lateResult is late work's result, for the pipeline object and generation it worked on.
type lateResult struct {
	uid        types.UID
	generation int64
	v          any
}

func (l *lateWork) begin(k lateKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[k] {
		return false
	}
	if l.running == nil {
		l.running = map[lateKey]bool{}
	}
	l.running[k] = true
	return true
}

// end records that the work on k returned; late work leaves its result.
func (l *lateWork) end(k lateKey, late bool, r lateResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.running, k)
	if late {
		if l.results == nil {
			l.results = map[lateKey]lateResult{}
		}
		l.results[k] = r
	}
}

// take returns (and forgets) the result late work left on k for that object and generation.
func (l *lateWork) take(k lateKey, uid types.UID, generation int64) (any, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.results[k]
	delete(l.results, k)
	return r.v, ok && r.uid == uid && r.generation == generation
}

// forget drops what is left of a pipeline that is gone.
func (l *lateWork) forget(pipeline types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.results {
		if k.pipeline == pipeline {
			delete(l.results, k)
		}
	}
}

// errSlow is the error of a member skipped while slow.
var errSlow = errors.New("an earlier request has not been answered yet")

// errHeldOff is the error of a member skipped by the breaker; isUnreachable recognises it.
var errHeldOff = errors.New("held off")

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
func (r *CoordinatorReconciler) timeoutMessage(member string) string {
	return fmt.Sprintf("cluster %q does not answer: its requests time out (--member-timeout %s); the hub tries it again every %s and does not wait for it meanwhile", member, r.MemberTimeout, r.RetryInterval)
}
