package fleet

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/status"
)

// memberBreaker keeps a member that hangs from holding the reconciles that include it. A member
// that refuses connections fails at once, but one that drops packets or hangs makes each request
// wait out --member-timeout. When a reconcile stops waiting for its work on a member (fanOut),
// the member is slow until it answers: reconciles send it nothing new, so work does not pile up
// there, and the pipelines that skipped it are reconciled again when it answers or its work ends.
// (A member whose work timed out is down: memberSet's health says so until a check finds it
// answering again; see health.go.)
type memberBreaker struct {
	mu   sync.Mutex
	slow map[string]sets.Set[wakeKey]
}

// wakeKey is a reconcile to bring back once a member answers: a pipeline's, or a ReaderLease's
// (the tombstone replay, a controller with a queue of its own).
type wakeKey struct {
	types.NamespacedName
	lease bool
}

// skip tells whether k's reconcile must skip member because it is slow, and records that it did.
func (b *memberBreaker) skip(member string, k wakeKey) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w, ok := b.slow[member]; ok {
		w.Insert(k)
		return true
	}
	return false
}

// markSlow records that a reconcile stopped waiting for its work on member.
func (b *memberBreaker) markSlow(member string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.slow[member]; ok {
		return
	}
	if b.slow == nil {
		b.slow = map[string]sets.Set[wakeKey]{}
	}
	b.slow[member] = sets.New[wakeKey]()
}

// isSlow tells whether member is slow (see markSlow).
func (b *memberBreaker) isSlow(member string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.slow[member]
	return ok
}

// settle ends member's slow state (it answered, or its work ended) and returns the reconciles
// that skipped it meanwhile, to be run again.
func (b *memberBreaker) settle(member string) []wakeKey {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.slow[member]
	if !ok {
		return nil
	}
	delete(b.slow, member)
	return w.UnsortedList()
}

func (b *memberBreaker) forget(member string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.slow, member)
}

// runningWork is the member work that runs, by pipeline and member, so a reconcile does not start
// work where that of an earlier one still runs (fanOut lets it outlive its reconcile).
type runningWork struct {
	mu      sync.Mutex
	running map[workKey]bool
}

// workKey is one pipeline's work on one member.
type workKey struct {
	pipeline types.NamespacedName
	member   string
	// lease marks the work of the tombstone replay on a ReaderLease named pipeline.
	lease bool
}

// pipelineWakeKey is the wakeKey of pipeline p's reconcile.
func pipelineWakeKey(p client.Object) wakeKey {
	return wakeKey{NamespacedName: client.ObjectKeyFromObject(p)}
}

// begin records that work on k starts, unless some already runs.
func (w *runningWork) begin(k workKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[k] {
		return false
	}
	if w.running == nil {
		w.running = map[workKey]bool{}
	}
	w.running[k] = true
	return true
}

// busy tells whether any work of pipeline's reconciles still runs on a member.
func (w *runningWork) busy(pipeline types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.running {
		if k.pipeline == pipeline && !k.lease {
			return true
		}
	}
	return false
}

func (w *runningWork) end(k workKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.running, k)
}

// memberBackoff spaces the retries of one pipeline on one member that answered with an error (a
// 403, a missing namespace): that member is retried on its own schedule, doubling from
// backoffBase up to backoffMax, while the pipeline's other members go on at their own pace. The
// reconcile reports the failure it last saw there meanwhile.
type memberBackoff struct {
	mu sync.Mutex
	m  map[workKey]backoffEntry
}

type backoffEntry struct {
	failures int
	until    time.Time
	obs      status.MemberObservation
}

const (
	backoffBase = time.Second
	backoffMax  = 5 * time.Minute
)

// waiting tells whether k is backing off at now: then it returns the failure last seen there and
// how long is left.
func (b *memberBackoff) waiting(k workKey, now time.Time) (status.MemberObservation, time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[k]
	if !ok || !now.Before(e.until) {
		return status.MemberObservation{}, 0, false
	}
	return e.obs, e.until.Sub(now), true
}

// failed records a failure on k and returns how long k waits before its next try.
func (b *memberBackoff) failed(k workKey, obs status.MemberObservation, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[workKey]backoffEntry{}
	}
	e := b.m[k]
	e.failures++
	d := backoffBase << min(e.failures-1, 20)
	d = min(d, backoffMax)
	e.until, e.obs = now.Add(d), obs
	b.m[k] = e
	return d
}

// succeeded ends k's backoff.
func (b *memberBackoff) succeeded(k workKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, k)
}

func (b *memberBackoff) forgetMember(member string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.m {
		if k.member == member {
			delete(b.m, k)
		}
	}
}

func (b *memberBackoff) forgetPipeline(p types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.m {
		if k.pipeline == p {
			delete(b.m, k)
		}
	}
}

// errMemberDown is the error of a member skipped because its last check found it not answering;
// isUnreachable recognises it.
var errMemberDown = errors.New("does not answer")

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
