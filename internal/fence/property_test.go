package fence

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var (
	seedFlag  = flag.Uint64("fence.seed", 0, "replay one history of TestRandomHistories with this seed")
	historyN  = flag.Int("fence.histories", 400, "how many seeded histories TestRandomHistories runs")
	verboseSm = flag.Bool("fence.trace", false, "print every decision of the replayed history")
)

// TestRandomHistories runs the decision against simulated histories and checks it against what
// really happened, which the fence never sees: when each renewal was written. In each history the
// hub renews at its own pace with a wall clock that is skewed and stepped (the tokens), stops
// renewing for a while (partitioned, dead) and comes back, sometimes deletes the Lease; the pod
// loses its API server for a while (polls time out), requests take variable time to be served
// and answered; the reader honours SIGTERM late or never; the reader exits on its own and the
// fence shuts down, and a new fence starts (a container restart). The properties:
//  1. a running reader always has a renewal written less than TTL ago;
//  2. a reader is never alive TTL+Grace after the last renewal was written;
//  3. a reader starts only on a renewal written after the fence's first poll was served, and
//     after a stop only on a renewal the fence had not seen when it stopped.
//
// The properties are checked at every decision, and the simulated loop is sometimes late for its
// deadline: the rule must hold at whatever moment it decides (how late the real loop can be is
// the hub's margin to cover). A failing seed is printed; replay it with -fence.seed=N -fence.trace.
func TestRandomHistories(t *testing.T) {
	seeds := make([]uint64, 0, *historyN)
	if *seedFlag != 0 {
		seeds = append(seeds, *seedFlag)
	} else {
		for i := range *historyN {
			seeds = append(seeds, uint64(i+1))
		}
	}
	var total stats
	for _, seed := range seeds {
		st, err := runHistory(seed, *verboseSm && *seedFlag != 0, t.Logf)
		if err != nil {
			t.Fatalf("seed %d: %v (replay: go test ./internal/fence -run TestRandomHistories -fence.seed=%d -fence.trace -v)", seed, err, seed)
		}
		total.add(st)
	}
	t.Logf("%d histories: %+v", len(seeds), total)
	// The histories must exercise every path, or the properties prove little.
	if len(seeds) > 50 && (total.starts == 0 || total.stops == 0 || total.kills == 0 || total.restartsAfterStop == 0 || total.fenceRestarts == 0) {
		t.Fatalf("the histories missed a path: %+v", total)
	}
}

type stats struct {
	starts, stops, kills, restartsAfterStop, fenceRestarts, polls, failedPolls int
}

func (s *stats) add(o stats) {
	s.starts += o.starts
	s.stops += o.stops
	s.kills += o.kills
	s.restartsAfterStop += o.restartsAfterStop
	s.fenceRestarts += o.fenceRestarts
	s.polls += o.polls
	s.failedPolls += o.failedPolls
}

// write is one write of the Lease by the hub: a renewal, or a deletion (token "").
type write struct {
	at    time.Duration
	token string
}

// world is what really happens, generated before the fence runs.
type world struct {
	cfg    Config
	writes []write
	// down are the intervals in which the pod's API server does not answer.
	down [][2]time.Duration
	end  time.Duration
}

func genWorld(r *rand.Rand) world {
	ttl := time.Duration(1+r.IntN(30)) * time.Second
	w := world{cfg: Config{TTL: ttl, Grace: time.Duration(r.IntN(10_000)) * time.Millisecond}}
	w.end = 40 * ttl
	// The hub's wall clock: skewed against everyone's, drifting, stepped now and then.
	skew := time.Duration(r.Int64N(int64(48*time.Hour))) - 24*time.Hour
	wall := func(t time.Duration) string {
		return time.Unix(1_700_000_000, 0).Add(t + skew).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	}
	renewEvery := ttl/10 + time.Duration(r.Int64N(int64(ttl)))
	up := true
	for t := time.Duration(0); t < w.end; {
		if r.IntN(20) == 0 {
			up = !up // the hub stops or resumes renewing (partitioned, dead, moved the placement)
		}
		if r.IntN(30) == 0 {
			skew += time.Duration(r.Int64N(int64(2*time.Hour))) - time.Hour // a clock step
		}
		if up {
			tok := wall(t)
			if r.IntN(50) == 0 {
				tok = "" // the Lease deleted
			}
			w.writes = append(w.writes, write{at: t, token: tok})
		}
		t += renewEvery/2 + time.Duration(r.Int64N(int64(renewEvery)))
	}
	for t := time.Duration(0); t < w.end; {
		t += time.Duration(r.Int64N(int64(10 * ttl)))
		d := time.Duration(r.Int64N(int64(3 * ttl)))
		w.down = append(w.down, [2]time.Duration{t, t + d})
		t += d
	}
	return w
}

// visible is the index of the write a read served at t shows, -1 for none.
func (w world) visible(t time.Duration) int {
	i, _ := slices.BinarySearchFunc(w.writes, t, func(x write, t time.Duration) int {
		if x.at <= t {
			return -1
		}
		return 1
	})
	return i - 1
}

func (w world) token(i int) string {
	if i < 0 {
		return ""
	}
	return w.writes[i].token
}

// lastRenewal is when the latest renewal (a write with a token) at or before t was written.
func (w world) lastRenewal(t time.Duration) (time.Duration, bool) {
	for i := w.visible(t); i >= 0; i-- {
		if w.writes[i].token != "" {
			return w.writes[i].at, true
		}
	}
	return 0, false
}

func (w world) reachable(t time.Duration) bool {
	for _, d := range w.down {
		if t >= d[0] && t < d[1] {
			return false
		}
	}
	return true
}

type inflight struct {
	sent, served, answered time.Duration
	ok                     bool
}

// sim is the fence under test, its poller and its reader.
type sim struct {
	r     *rand.Rand
	w     world
	st    State
	poll  *inflight
	next  time.Duration // when the next poll is sent
	every time.Duration // poll interval

	alive  bool
	exitAt time.Duration // the reader exits then, having honoured SIGTERM (-1: it ignores it)

	// What the fence had seen: the write index its latest answered poll showed, at its first
	// answered poll, and when it last stopped a reader.
	seen, firstSeen, seenAtStop int
	stopped, stopping           bool

	lastWake Decision

	stats stats
}

func runHistory(seed uint64, trace bool, logf func(string, ...any)) (stats, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := genWorld(r)
	s := &sim{r: r, w: w, every: time.Duration(50+r.IntN(int(w.cfg.TTL/time.Millisecond))) * time.Millisecond, exitAt: -1}
	s.fresh()
	for t := time.Duration(0); t < w.end; {
		t = s.nextEvent(t)
		s.events(t)
		var d Decision
		s.st, d = Step(w.cfg, s.st, t)
		if trace {
			logf("t=%v %v (%s) phase=%v renewals=%d writtenAfter=%v seen=%d", t, d.Action, d.Reason, s.st.Phase, s.st.Renewals.Count, s.st.Renewals.WrittenAfter, s.seen)
		}
		if err := s.act(t, d); err != nil {
			return s.stats, fmt.Errorf("t=%v: %w", t, err)
		}
		if err := s.check(t); err != nil {
			return s.stats, fmt.Errorf("t=%v, ttl %v, grace %v: %w", t, w.cfg.TTL, w.cfg.Grace, err)
		}
	}
	return s.stats, nil
}

// fresh starts a new fence: a container restart.
func (s *sim) fresh() {
	s.st, s.poll, s.seen, s.firstSeen, s.stopped = State{}, nil, -1, -2, false
}

func (s *sim) nextEvent(t time.Duration) time.Duration {
	next := t + time.Duration(1+s.r.IntN(500))*time.Millisecond
	if s.poll != nil {
		next = min(next, s.poll.answered)
	} else {
		next = min(next, max(s.next, t))
	}
	if s.alive && s.exitAt >= 0 {
		next = min(next, s.exitAt)
	}
	if d := s.lastWake; d.HasWake {
		// The fence's loop is sometimes late (a busy node): the rule must not depend on waking
		// exactly at its deadline.
		var lag time.Duration
		if s.r.IntN(4) == 0 {
			lag = time.Duration(s.r.IntN(2000)) * time.Millisecond
		}
		next = min(next, max(d.Wake, t)+lag)
	}
	return next
}

func (s *sim) events(t time.Duration) {
	if p := s.poll; p != nil && p.answered <= t {
		s.poll = nil
		s.next = t + s.every
		if p.ok {
			i := s.w.visible(p.served)
			s.st = s.st.Observe(Poll{SentAt: p.sent, Token: s.w.token(i)})
			s.seen = i
			if s.firstSeen == -2 {
				s.firstSeen = i
			}
		} else {
			s.stats.failedPolls++
		}
	}
	if s.poll == nil && s.next <= t {
		s.stats.polls++
		served := t + time.Duration(s.r.IntN(2000))*time.Millisecond
		p := &inflight{sent: t, served: served, answered: served + time.Duration(s.r.IntN(2000))*time.Millisecond, ok: s.w.reachable(served)}
		if !p.ok {
			p.answered = t + 5*time.Second // the request times out
		}
		s.poll = p
	}
	if s.alive && s.exitAt >= 0 && s.exitAt <= t {
		s.alive, s.exitAt, s.stopping = false, -1, false
		s.st = s.st.Exited()
	}
	if s.alive && s.st.Phase == Running && s.r.IntN(3000) == 0 {
		// The reader exits on its own: the fence exits with it and the container restarts.
		s.alive = false
		s.fresh()
		s.stats.fenceRestarts++
	}
	if !s.st.ShuttingDown && s.r.IntN(3000) == 0 {
		s.st.ShuttingDown = true // the pod is being deleted
	}
}

func (s *sim) act(t time.Duration, d Decision) error {
	s.lastWake = d
	switch d.Action {
	case Start:
		if s.alive {
			return fmt.Errorf("start while a reader is alive")
		}
		if s.seen <= s.firstSeen {
			return fmt.Errorf("started with no renewal written after its first poll (seen write %d, first %d)", s.seen, s.firstSeen)
		}
		if s.stopped && s.seen <= s.seenAtStop {
			return fmt.Errorf("started again on no renewal newer than at its stop (seen write %d, at stop %d)", s.seen, s.seenAtStop)
		}
		if s.stopped {
			s.stats.restartsAfterStop++
		}
		s.alive, s.exitAt, s.stopping = true, -1, false
		s.stats.starts++
	case Stop:
		s.stats.stops++
		s.stopped, s.stopping, s.seenAtStop = true, true, s.seen
		if s.r.IntN(3) > 0 { // honours SIGTERM, at its pace; else waits for SIGKILL
			s.exitAt = t + time.Duration(s.r.Int64N(int64(2*s.w.cfg.Grace)+1))
		}
	case Kill:
		s.stats.kills++
		if !s.stopping { // killed straight from running: the stop is now
			s.stopped, s.seenAtStop = true, s.seen
		}
		s.stopping = false
		s.alive = false
		s.st = s.st.Exited()
	case Exit:
		if s.alive {
			return fmt.Errorf("exit while a reader is alive")
		}
		s.fresh()
		s.stats.fenceRestarts++
	}
	return nil
}

func (s *sim) check(t time.Duration) error {
	if !s.alive {
		return nil
	}
	last, ok := s.w.lastRenewal(t)
	if !ok {
		return fmt.Errorf("a reader is alive and no renewal was ever written")
	}
	if s.st.Phase == Running && t-last >= s.w.cfg.TTL {
		return fmt.Errorf("the reader runs %v after the last renewal was written (ttl %v)", t-last, s.w.cfg.TTL)
	}
	if t-last >= s.w.cfg.Bound() {
		return fmt.Errorf("the reader is alive %v after the last renewal was written (bound %v)", t-last, s.w.cfg.Bound())
	}
	return nil
}
