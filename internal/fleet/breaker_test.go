package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

func TestMemberBreaker(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	hold := 30 * time.Second
	allow := func(b *memberBreaker, at time.Duration) (bool, bool) { return b.allow("m", t0.Add(at)) }

	var b memberBreaker
	if ok, probe := allow(&b, 0); !ok || probe {
		t.Fatalf("a member never seen: allow = %v, probe = %v; want allowed, no probe", ok, probe)
	}
	b.done("m", false, true, false, t0.Add(10*time.Second), hold) // timed out at 10 s
	if ok, _ := allow(&b, 11*time.Second); ok {
		t.Fatal("a member that just timed out was allowed")
	}
	if ok, _ := b.allow("other", t0.Add(11*time.Second)); !ok {
		t.Fatal("another member was held off")
	}
	if ok, _ := allow(&b, 39*time.Second); ok {
		t.Fatal("allowed before the hold is over")
	}
	ok, probe := allow(&b, 40*time.Second)
	if !ok || !probe {
		t.Fatalf("after the hold: allow = %v, probe = %v; want one probe", ok, probe)
	}
	if ok, _ := allow(&b, 41*time.Second); ok {
		t.Fatal("a second reconcile was let through while the probe runs")
	}
	// The probe is refused at once (the member is down, not hung): still held off.
	b.done("m", true, false, false, t0.Add(41*time.Second), hold)
	if ok, _ := allow(&b, 42*time.Second); ok {
		t.Fatal("a probe without an answer ended the hold")
	}
	ok, probe = allow(&b, 72*time.Second)
	if !ok || !probe {
		t.Fatal("no second probe after the second hold")
	}
	// A reconcile that is not the probe and was refused changes nothing...
	b.done("m", false, false, false, t0.Add(72*time.Second), hold)
	if ok, _ := allow(&b, 73*time.Second); ok {
		t.Fatal("a refused non-probe reconcile ended the hold or the probe")
	}
	// ...and the probe's answer ends the hold.
	b.done("m", true, false, true, t0.Add(73*time.Second), hold)
	if ok, probe := allow(&b, 74*time.Second); !ok || probe {
		t.Fatalf("after an answer: allow = %v, probe = %v; want allowed, no probe", ok, probe)
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestIsTimeout(t *testing.T) {
	var _ net.Error = timeoutError{}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("applying ServiceAccount: %w", context.DeadlineExceeded), true},
		{&net.OpError{Op: "dial", Err: timeoutError{}}, true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
		{errors.New("forbidden"), false},
		{nil, false},
	} {
		if got := isTimeout(tc.err); got != tc.want {
			t.Errorf("isTimeout(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if !isUnreachable(fmt.Errorf("cluster %q: %w", "m", errHeldOff)) {
		t.Error("a held-off member is not reported unreachable")
	}
}
