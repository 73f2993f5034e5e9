package fleet

import (
	"context"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// memberSilence is how long the requests to a member may go without any answer before a
// reconcile stops waiting for its work there (Liveness). A member under load still answers within
// tens of milliseconds (hack/bench, every size), a hung one never.
const memberSilence = 500 * time.Millisecond

// fanOutOptions tune fanOut.
type fanOutOptions struct {
	// timeout bounds each member's work, waited for or not.
	timeout time.Duration
	// patience bounds the wait for each member.
	patience time.Duration
	// start tells whether work may start on member m (false: work of an earlier reconcile still
	// runs there); nil means always.
	start func(m string) bool
	// stored returns the result of late work on m that ended since the last reconcile, if any:
	// it stands for m's result, and no work starts there.
	stored func(m string) (any, bool)
	// slow is called for each member whose work goes on after the reconcile stopped waiting
	// for it, before that work's end.
	slow func(m string)
	// end is called when the work on m returns, with its result; late tells that the reconcile
	// had stopped waiting for it.
	end func(m string, late bool, v any)
	// giveUp tells whether to stop waiting for m, whose work began at begun: it stays silent, or
	// another reconcile found it slow.
	giveUp func(m string, begun time.Time) bool
}

// fanOut runs fn for every member concurrently, each under its own timeout, and returns the
// results of the members that answered in time. The others are late: members whose work was not
// started (start said no) or was not waited for (giveUp, or patience ran out). A hung member
// delays a reconcile by about memberSilence, not by its whole timeout: a reconcile that waited
// for it held a worker, and with it every pipeline in the queue (measured with hack/bench: one
// hung member more than doubled the convergence of the healthy ones).
func fanOut[T any](ctx context.Context, o fanOutOptions, members []string, fn func(context.Context, string) T) (done map[string]T, late []string) {
	type result struct {
		m string
		v T
	}
	begun := time.Now()
	ch := make(chan result, len(members))
	var mu sync.Mutex
	abandoned := false
	pending := map[string]bool{}
	done = make(map[string]T, len(members))
	for _, m := range members {
		if o.stored != nil {
			if v, ok := o.stored(m); ok {
				if t, ok := v.(T); ok {
					done[m] = t
					continue
				}
			}
		}
		if o.start != nil && !o.start(m) {
			late = append(late, m)
			continue
		}
		pending[m] = true
		go func() {
			// The work outlives the reconcile when it is not waited for: its context is not the
			// reconcile's (whose end would cancel it), only bounded by the timeout.
			mctx, cancel := context.WithTimeout(context.WithoutCancel(ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("cluster", m))), o.timeout)
			defer cancel()
			v := fn(mctx, m)
			// Work waited for ends before the reconcile sees its result, so the next reconcile
			// never finds it still running.
			mu.Lock()
			wasLate := abandoned
			if !wasLate {
				if o.end != nil {
					o.end(m, false, v)
				}
				ch <- result{m, v}
			}
			mu.Unlock()
			if wasLate && o.end != nil {
				o.end(m, true, v)
			}
		}()
	}

	var tick <-chan time.Time
	if o.giveUp != nil && len(pending) > 0 {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	timer := time.NewTimer(o.patience)
	defer timer.Stop()
wait:
	for len(pending) > 0 {
		select {
		case r := <-ch:
			done[r.m] = r.v
			delete(pending, r.m)
		case <-timer.C:
			break wait
		case <-tick:
			for m := range pending {
				if o.giveUp(m, begun) {
					delete(pending, m)
				}
			}
		case <-ctx.Done():
			break wait
		}
	}
	// Work that returns from here on is late. Work that returned before sent its result.
	mu.Lock()
	abandoned = true
	for drained := false; !drained; {
		select {
		case r := <-ch:
			done[r.m] = r.v
		default:
			drained = true
		}
	}
	for _, m := range members {
		if _, ok := done[m]; ok || containsString(late, m) {
			continue
		}
		late = append(late, m)
		if o.slow != nil {
			o.slow(m)
		}
	}
	mu.Unlock()
	return done, late
}
