package members

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Silence is how long the requests to a member may go without any answer before a
// reconcile stops waiting for its work there (Liveness). A member under load still answers within
// tens of milliseconds (hack/bench, every size), a hung one never.
const Silence = 500 * time.Millisecond

// FanOutOptions tune fanOut.
type FanOutOptions struct {
	// What names the work in logs.
	What string
	// Timeout bounds each member's work, waited for or not.
	Timeout time.Duration
	// Patience bounds the wait for each member.
	Patience time.Duration
	// Start tells whether work may Start on member m (false: work of an earlier reconcile still
	// runs there); nil means always.
	Start func(m string) bool
	// Slow is called for each member whose work goes on after the reconcile stopped waiting
	// for it, before that work's end.
	Slow func(m string)
	// End is called when the work on m returns; late tells that the reconcile had stopped
	// waiting for it.
	End func(m string, late bool)
	// GiveUp tells whether to stop waiting for m, whose work began at begun: it stays silent, or
	// another reconcile found it slow.
	GiveUp func(m string, begun time.Time) bool
}

// FanOut runs fn for every member concurrently, each under its own timeout, and returns the
// results of the members that answered in time. A panic in fn is recovered into failed's result
// for that member: one member's bad day never takes the hub down. The others are late: members
// whose work was not started (start said no) or was not waited for (giveUp, or patience ran
// out). A hung member delays a reconcile by about Silence, not by its whole timeout: a
// reconcile that waited for it held a worker, and with it every pipeline in the queue (measured
// with hack/bench: one hung member more than doubled the convergence of the healthy ones).
func FanOut[T any](ctx context.Context, o FanOutOptions, members []string, fn func(context.Context, string) T, failed func(string, error) T) (done map[string]T, late []string) {
	run := &fanOutRun[T]{o: o, begun: time.Now(), ch: make(chan fanOutResult[T], len(members)), pending: map[string]bool{}}
	for _, m := range members {
		if o.Start != nil && !o.Start(m) {
			late = append(late, m)
			continue
		}
		run.pending[m] = true
		go run.work(ctx, m, fn, failed)
	}
	done = run.wait(ctx)
	return done, run.finish(members, done, late)
}

// fanOutRun is one fanOut: the results as they come, and whether the caller stopped waiting.
type fanOutRun[T any] struct {
	o       FanOutOptions
	begun   time.Time
	ch      chan fanOutResult[T]
	pending map[string]bool

	mu        sync.Mutex
	abandoned bool
}

type fanOutResult[T any] struct {
	m string
	v T
}

// work runs fn for m. It outlives the reconcile when it is not waited for: its context is not the
// reconcile's (whose end would cancel it), only bounded by the timeout.
func (r *fanOutRun[T]) work(ctx context.Context, m string, fn func(context.Context, string) T, failed func(string, error) T) {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("cluster", m, "work", r.o.What))), r.o.Timeout)
	defer cancel()
	v := runRecovered(mctx, m, fn, failed)
	// Work waited for ends before the reconcile sees its result, so the next reconcile never
	// finds it still running.
	r.mu.Lock()
	wasLate := r.abandoned
	if !wasLate {
		if r.o.End != nil {
			r.o.End(m, false)
		}
		r.ch <- fanOutResult[T]{m, v}
	}
	r.mu.Unlock()
	if wasLate && r.o.End != nil {
		r.o.End(m, true)
	}
}

// wait collects results until every member answered, patience ran out, ctx ended, or giveUp
// says the rest are not worth waiting for.
func (r *fanOutRun[T]) wait(ctx context.Context) map[string]T {
	done := map[string]T{}
	var tick <-chan time.Time
	if r.o.GiveUp != nil && len(r.pending) > 0 {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	timer := time.NewTimer(r.o.Patience)
	defer timer.Stop()
	for len(r.pending) > 0 {
		select {
		case res := <-r.ch:
			done[res.m] = res.v
			delete(r.pending, res.m)
		case <-timer.C:
			return done
		case <-tick:
			for m := range r.pending {
				if r.o.GiveUp(m, r.begun) {
					delete(r.pending, m)
				}
			}
		case <-ctx.Done():
			return done
		}
	}
	return done
}

// finish stops waiting: work that returns from here on is late (work that returned before sent
// its result, taken now). It returns every member without a result, marking slow those whose
// work still runs.
func (r *fanOutRun[T]) finish(members []string, done map[string]T, late []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned = true
	for drained := false; !drained; {
		select {
		case res := <-r.ch:
			done[res.m] = res.v
		default:
			drained = true
		}
	}
	for _, m := range members {
		if _, ok := done[m]; ok || slices.Contains(late, m) {
			continue
		}
		late = append(late, m)
		if r.o.Slow != nil {
			r.o.Slow(m)
		}
	}
	return late
}

// runRecovered runs fn for member m, turning a panic into failed's result.
func runRecovered[T any](ctx context.Context, m string, fn func(context.Context, string) T, failed func(string, error) T) (v T) {
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("internal error while working on cluster %q: %v", m, p)
			ctrl.LoggerFrom(ctx).Error(err, "recovered a panic in member work", "stack", string(debug.Stack()))
			memberPanics.WithLabelValues(m).Inc()
			v = failed(m, err)
		}
	}()
	return fn(ctx, m)
}
