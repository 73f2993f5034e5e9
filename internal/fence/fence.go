package fence

import (
	"errors"
	"fmt"
	"time"
)

// Config is the fence's bound. Every instant is a reading of the pod's monotonic clock, as a
// duration since an origin the caller picks (its start).
type Config struct {
	// TTL is how long after a renewal was written the reader may run.
	TTL time.Duration
	// Grace is how long a reader has between SIGTERM and SIGKILL.
	Grace time.Duration
}

// Validate names the field that is wrong and why.
func (c Config) Validate() error {
	var errs []error
	if c.TTL <= 0 {
		errs = append(errs, fmt.Errorf("ttl %v: must be positive", c.TTL))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("grace %v: must not be negative", c.Grace))
	}
	return errors.Join(errs...)
}

// Bound is the longest a reader can live after the last renewal was written: TTL+Grace.
func (c Config) Bound() time.Duration { return c.TTL + c.Grace }

// Poll is one answered read of the fence Lease. Polls are fed in the order they were sent, and
// each was sent after the previous one was answered: that order is what bounds when a renewal was
// written (see the package comment). A request that got no answer is not a Poll.
type Poll struct {
	// SentAt is when the request was sent.
	SentAt time.Duration
	// Token changes with every renewal (the Lease's renewTime as written, never read as a time);
	// "" when the Lease is absent or renewed for another holder.
	Token string
}

// Renewals is what the answered polls have shown.
type Renewals struct {
	// Count is the number of renewals seen: token changes after the first answered poll.
	Count uint64
	// WrittenAfter is no later than when the latest renewal was written (meaningful once Count>0):
	// the send time of the poll before the one that first showed it.
	WrittenAfter time.Duration

	polled   bool
	token    string
	lastSent time.Duration
}

// Observe records an answered poll. A poll sent before the last one recorded is ignored (the
// caller broke the one-at-a-time order; nothing can be concluded from it).
func (r Renewals) Observe(p Poll) Renewals {
	if r.polled && p.SentAt < r.lastSent {
		return r
	}
	if r.polled && p.Token != "" && p.Token != r.token {
		r.Count++
		r.WrittenAfter = r.lastSent
	}
	r.polled, r.token, r.lastSent = true, p.Token, p.SentAt
	return r
}

// Fresh tells whether the latest renewal is younger than ttl at now.
func (r Renewals) Fresh(ttl, now time.Duration) bool {
	return r.Count > 0 && now < r.WrittenAfter+ttl
}

// Phase is what the fence's reader is doing.
type Phase int

// The phases of the reader.
const (
	// Idle: no reader runs.
	Idle Phase = iota
	// Running: the reader runs.
	Running
	// Stopping: the fence sent SIGTERM (and maybe SIGKILL); the reader has not exited yet.
	Stopping
)

func (p Phase) String() string {
	switch p {
	case Idle:
		return "idle"
	case Running:
		return "running"
	case Stopping:
		return "stopping"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// State is everything the fence remembers between decisions.
type State struct {
	Renewals Renewals
	Phase    Phase
	// KillAt is when a Stopping reader gets SIGKILL: Grace after the renewal it ran on expired,
	// not after the SIGTERM was sent, so a late SIGTERM does not stretch the bound.
	KillAt time.Duration
	// Killed: SIGKILL was sent to the Stopping reader.
	Killed bool
	// StoppedAt is Renewals.Count when the fence last stopped a reader: it starts again only on a
	// renewal seen after that. Freshness alone implies it (a renewal that expired never becomes
	// fresh again); the latch keeps the rule true if a stop for another reason is ever added.
	StoppedAt uint64
	// ShuttingDown: the fence itself was asked to end (its container stops); it starts nothing
	// more and exits once no reader is left.
	ShuttingDown bool
}

// Observe records an answered poll.
func (s State) Observe(p Poll) State {
	s.Renewals = s.Renewals.Observe(p)
	return s
}

// Exited records that the reader exited, whatever the reason.
func (s State) Exited() State {
	s.Phase, s.Killed, s.KillAt = Idle, false, 0
	return s
}

// Action is what the fence must do now.
type Action int

// The actions, in the order a reader goes through them.
const (
	// Wait: nothing to do until a poll is answered, the reader exits, or Decision.Wake.
	Wait Action = iota
	// Start the reader.
	Start
	// Run: the reader runs and may go on.
	Run
	// Stop: send SIGTERM.
	Stop
	// Kill: send SIGKILL.
	Kill
	// Exit: no reader runs and the fence is shutting down.
	Exit
)

func (a Action) String() string {
	switch a {
	case Wait:
		return "wait"
	case Start:
		return "start"
	case Run:
		return "run"
	case Stop:
		return "stop"
	case Kill:
		return "kill"
	case Exit:
		return "exit"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decision is Step's answer.
type Decision struct {
	Action Action
	// Wake is when to decide again if nothing happens before; meaningful when HasWake.
	Wake    time.Duration
	HasWake bool
	// Reason says why, for the fence's log.
	Reason string
}

// Step decides what to do at now and returns the state once that is done. It is the whole rule:
//   - a reader starts only on a fresh renewal seen after its last stop, never while shutting down;
//   - a running reader gets SIGTERM as soon as its latest renewal is TTL old;
//   - SIGKILL follows Grace after that expiry, however late the SIGTERM went out;
//   - a renewal that arrives while the reader stops does not save it: it starts again afterwards.
func Step(c Config, s State, now time.Duration) (State, Decision) {
	r := s.Renewals
	expiry := r.WrittenAfter + c.TTL
	switch s.Phase {
	case Running:
		if r.Fresh(c.TTL, now) {
			return s, Decision{Action: Run, Wake: expiry, HasWake: true, Reason: "renewed"}
		}
		s.Phase, s.StoppedAt, s.KillAt = Stopping, r.Count, expiry+c.Grace
		if now >= s.KillAt {
			s.Killed = true
			return s, Decision{Action: Kill, Reason: "no renewal for ttl+grace"}
		}
		return s, Decision{Action: Stop, Wake: s.KillAt, HasWake: true, Reason: "no renewal for ttl"}
	case Stopping:
		if s.Killed {
			return s, Decision{Action: Wait, Reason: "killed, waiting for the reader to exit"}
		}
		if now >= s.KillAt {
			s.Killed = true
			return s, Decision{Action: Kill, Reason: "still running grace after its renewal expired"}
		}
		return s, Decision{Action: Wait, Wake: s.KillAt, HasWake: true, Reason: "stopping"}
	}
	switch {
	case s.ShuttingDown:
		return s, Decision{Action: Exit, Reason: "shutting down"}
	case r.Count == 0:
		return s, Decision{Action: Wait, Reason: "no renewal seen yet"}
	case r.Count <= s.StoppedAt:
		return s, Decision{Action: Wait, Reason: "stopped: waiting for a new renewal"}
	case !r.Fresh(c.TTL, now):
		return s, Decision{Action: Wait, Reason: "latest renewal expired"}
	}
	s.Phase = Running
	return s, Decision{Action: Start, Wake: expiry, HasWake: true, Reason: "renewed"}
}
