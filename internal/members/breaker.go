package members

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Breaker keeps a member that hangs from holding the reconciles that include it. A member
// that refuses connections fails at once, but one that drops packets or hangs makes each request
// wait out --member-timeout. When a reconcile stops waiting for its work on a member (fanOut),
// the member is slow until it answers: reconciles send it nothing new, so work does not pile up
// there, and the pipelines that skipped it are reconciled again when it answers or its work ends.
// (A member whose work timed out is down: memberSet's health says so until a check finds it
// answering again; see health.go.)
type Breaker struct {
	mu   sync.Mutex
	slow map[string]sets.Set[WakeKey]
}

// WakeKey is a reconcile to bring back once a member answers: a pipeline's, or a ReaderLease's
// (the tombstone replay, a controller with a queue of its own).
type WakeKey struct {
	types.NamespacedName
	Lease bool
}

// Skip tells whether k's reconcile must Skip member because it is slow, and records that it did.
func (b *Breaker) Skip(member string, k WakeKey) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w, ok := b.slow[member]; ok {
		w.Insert(k)
		return true
	}
	return false
}

// MarkSlow records that a reconcile stopped waiting for its work on member.
func (b *Breaker) MarkSlow(member string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.slow[member]; ok {
		return
	}
	if b.slow == nil {
		b.slow = map[string]sets.Set[WakeKey]{}
	}
	b.slow[member] = sets.New[WakeKey]()
}

// IsSlow tells whether member is slow (see markSlow).
func (b *Breaker) IsSlow(member string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.slow[member]
	return ok
}

// Settle ends member's slow state (it answered, or its work ended) and returns the reconciles
// that skipped it meanwhile, to be run again.
func (b *Breaker) Settle(member string) []WakeKey {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.slow[member]
	if !ok {
		return nil
	}
	delete(b.slow, member)
	return w.UnsortedList()
}

func (b *Breaker) Forget(member string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.slow, member)
}

// RunningWork is the member work that runs, by pipeline and member, so a reconcile does not start
// work where that of an earlier one still runs (fanOut lets it outlive its reconcile).
type RunningWork struct {
	mu      sync.Mutex
	running map[WorkKey]bool
}

// WorkKey is one pipeline's work on one member.
type WorkKey struct {
	Pipeline types.NamespacedName
	Member   string
	// Lease marks the work of the tombstone replay on a ReaderLease named pipeline.
	Lease bool
}

// PipelineWakeKey is the wakeKey of pipeline p's reconcile.
func PipelineWakeKey(p client.Object) WakeKey {
	return WakeKey{NamespacedName: client.ObjectKeyFromObject(p)}
}

// Begin records that work on k starts, unless some already runs.
func (w *RunningWork) Begin(k WorkKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[k] {
		return false
	}
	if w.running == nil {
		w.running = map[WorkKey]bool{}
	}
	w.running[k] = true
	return true
}

// Busy tells whether any work of pipeline's reconciles still runs on a member.
func (w *RunningWork) Busy(pipeline types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.running {
		if k.Pipeline == pipeline && !k.Lease {
			return true
		}
	}
	return false
}

func (w *RunningWork) End(k WorkKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.running, k)
}

// Backoff spaces the retries of one pipeline on one member that answered with an error (a
// 403, a missing namespace): that member is retried on its own schedule, doubling from
// backoffBase up to backoffMax, while the pipeline's other members go on at their own pace. The
// reconcile reports the failure it last saw there meanwhile.
type Backoff[T any] struct {
	mu sync.Mutex
	m  map[WorkKey]backoffEntry[T]
}

type backoffEntry[T any] struct {
	failures int
	until    time.Time
	obs      T
}

const (
	backoffBase = time.Second
	backoffMax  = 5 * time.Minute
)

// Waiting tells whether k is backing off at now: then it returns the failure last seen there and
// how long is left.
func (b *Backoff[T]) Waiting(k WorkKey, now time.Time) (T, time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[k]
	if !ok || !now.Before(e.until) {
		var zero T
		return zero, 0, false
	}
	return e.obs, e.until.Sub(now), true
}

// Failed records a failure on k and returns how long k waits before its next try.
func (b *Backoff[T]) Failed(k WorkKey, obs T, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[WorkKey]backoffEntry[T]{}
	}
	e := b.m[k]
	e.failures++
	d := backoffBase << min(e.failures-1, 20)
	d = min(d, backoffMax)
	e.until, e.obs = now.Add(d), obs
	b.m[k] = e
	return d
}

// Succeeded ends k's backoff.
func (b *Backoff[T]) Succeeded(k WorkKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, k)
}

func (b *Backoff[T]) ForgetMember(member string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.m {
		if k.Member == member {
			delete(b.m, k)
		}
	}
}

func (b *Backoff[T]) ForgetPipeline(p types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.m {
		if k.Pipeline == p {
			delete(b.m, k)
		}
	}
}
