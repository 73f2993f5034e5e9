package fence

import (
	"testing"
	"time"
)

const s = time.Second

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		ok   bool
	}{
		{"valid", Config{TTL: 20 * s, Grace: 10 * s}, true},
		{"no grace", Config{TTL: 20 * s}, true},
		{"zero ttl", Config{Grace: s}, false},
		{"negative grace", Config{TTL: s, Grace: -s}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestRenewalsObserve(t *testing.T) {
	type want struct {
		count        uint64
		writtenAfter time.Duration
	}
	for _, tc := range []struct {
		name  string
		polls []Poll
		want  want
	}{
		{"first poll is only a baseline", []Poll{{SentAt: 1 * s, Token: "a"}}, want{}},
		{"same token is no renewal", []Poll{{1 * s, "a"}, {2 * s, "a"}, {3 * s, "a"}}, want{}},
		{"a change dates from the poll before it", []Poll{{1 * s, "a"}, {2 * s, "a"}, {3 * s, "b"}}, want{1, 2 * s}},
		{"two changes", []Poll{{1 * s, "a"}, {2 * s, "b"}, {5 * s, "c"}}, want{2, 2 * s}},
		{"lease created after a not-found", []Poll{{1 * s, ""}, {4 * s, "a"}}, want{1, 1 * s}},
		{"lease deleted is no renewal", []Poll{{1 * s, "a"}, {2 * s, "b"}, {3 * s, ""}}, want{1, 1 * s}},
		{"recreated with the same token is a write", []Poll{{1 * s, "a"}, {2 * s, ""}, {3 * s, "a"}}, want{1, 2 * s}},
		{"token back to an older value is a write", []Poll{{1 * s, "a"}, {2 * s, "b"}, {3 * s, "a"}}, want{2, 2 * s}},
		{"a poll sent out of order is ignored", []Poll{{1 * s, "a"}, {5 * s, "a"}, {3 * s, "b"}}, want{}},
		// The token is never read as a time: a renewTime far in the future renews like any other.
		{"token is not a clock", []Poll{{1 * s, "2099-01-01T00:00:00.000000Z"}, {2 * s, "1970-01-01T00:00:00.000000Z"}}, want{1, 1 * s}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Renewals
			for _, p := range tc.polls {
				r = r.Observe(p)
			}
			if r.Count != tc.want.count || (r.Count > 0 && r.WrittenAfter != tc.want.writtenAfter) {
				t.Fatalf("got count %d writtenAfter %v, want %d %v", r.Count, r.WrittenAfter, tc.want.count, tc.want.writtenAfter)
			}
		})
	}
}

// renewed is a state with n renewals seen, the latest written after at.
func renewed(n uint64, at time.Duration) Renewals {
	return Renewals{Count: n, WrittenAfter: at, polled: true, token: "t", lastSent: at}
}

func TestStep(t *testing.T) {
	c := Config{TTL: 10 * s, Grace: 5 * s}
	for _, tc := range []struct {
		name      string
		state     State
		now       time.Duration
		action    Action
		phase     Phase
		wake      time.Duration // 0: no wake expected
		stoppedAt uint64
	}{
		{"no renewal yet: wait", State{}, 3 * s, Wait, Idle, 0, 0},
		{"fresh renewal: start", State{Renewals: renewed(1, 2*s)}, 3 * s, Start, Running, 12 * s, 0},
		{"renewal already expired: no start", State{Renewals: renewed(1, 2*s)}, 12 * s, Wait, Idle, 0, 0},
		{"running, fresh: run until expiry", State{Renewals: renewed(2, 8*s), Phase: Running}, 9 * s, Run, Running, 18 * s, 0},
		{"running, expired: SIGTERM, kill at expiry+grace", State{Renewals: renewed(2, 8*s), Phase: Running}, 18 * s, Stop, Stopping, 23 * s, 2},
		{"running, decided late: SIGKILL at once", State{Renewals: renewed(2, 8*s), Phase: Running}, 23 * s, Kill, Stopping, 0, 2},
		{"stopping within grace: wait", State{Renewals: renewed(2, 8*s), Phase: Stopping, KillAt: 23 * s, StoppedAt: 2}, 20 * s, Wait, Stopping, 23 * s, 2},
		{"stopping past grace: SIGKILL", State{Renewals: renewed(2, 8*s), Phase: Stopping, KillAt: 23 * s, StoppedAt: 2}, 23 * s, Kill, Stopping, 0, 2},
		{"killed: wait for the exit", State{Renewals: renewed(2, 8*s), Phase: Stopping, KillAt: 23 * s, Killed: true, StoppedAt: 2}, 30 * s, Wait, Stopping, 0, 2},
		{"a renewal while stopping does not cancel the stop", State{Renewals: renewed(3, 21*s), Phase: Stopping, KillAt: 23 * s, StoppedAt: 2}, 23 * s, Kill, Stopping, 0, 2},
		{"stopped: the renewal it stopped on does not restart it", State{Renewals: renewed(2, 8*s), StoppedAt: 2}, 9 * s, Wait, Idle, 0, 2},
		{"stopped: a new renewal restarts it", State{Renewals: renewed(3, 30*s), StoppedAt: 2}, 31 * s, Start, Running, 40 * s, 2},
		{"shutting down, no reader: exit", State{Renewals: renewed(3, 30*s), ShuttingDown: true}, 31 * s, Exit, Idle, 0, 0},
		{"shutting down, reader running: the fence still stops it on time", State{Renewals: renewed(1, 0), Phase: Running, ShuttingDown: true}, 10 * s, Stop, Stopping, 15 * s, 1},
		{"zero grace: SIGTERM and SIGKILL together", State{Renewals: renewed(1, 0), Phase: Running}, 10 * s, Kill, Stopping, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := c
			if tc.name == "zero grace: SIGTERM and SIGKILL together" {
				cfg.Grace = 0
			}
			got, d := Step(cfg, tc.state, tc.now)
			if d.Action != tc.action || got.Phase != tc.phase || got.StoppedAt != tc.stoppedAt {
				t.Fatalf("Step = %v (%s), phase %v, stoppedAt %d; want %v, %v, %d", d.Action, d.Reason, got.Phase, got.StoppedAt, tc.action, tc.phase, tc.stoppedAt)
			}
			if (tc.wake != 0) != d.HasWake || (d.HasWake && d.Wake != tc.wake) {
				t.Fatalf("wake = %v (set %v), want %v", d.Wake, d.HasWake, tc.wake)
			}
			if d.Action == Kill && !got.Killed {
				t.Fatal("Kill without recording Killed: it would be sent again")
			}
		})
	}
}

func TestExited(t *testing.T) {
	st := State{Renewals: renewed(2, 0), Phase: Stopping, KillAt: 5 * s, Killed: true, StoppedAt: 2}.Exited()
	if st.Phase != Idle || st.Killed || st.StoppedAt != 2 {
		t.Fatalf("Exited() = %+v: want idle, not killed, StoppedAt kept", st)
	}
}
