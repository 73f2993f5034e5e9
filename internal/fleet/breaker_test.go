package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestMemberBreaker(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	hold := 30 * time.Second
	pipeline := types.NamespacedName{Namespace: "ns", Name: "p"}
	allow := func(b *memberBreaker, at time.Duration) (bool, bool) {
		probe, err := b.allow("m", pipeline, t0.Add(at))
		return err == nil, probe
	}

	var b memberBreaker
	if ok, probe := allow(&b, 0); !ok || probe {
		t.Fatalf("a member never seen: allow = %v, probe = %v; want allowed, no probe", ok, probe)
	}
	b.done("m", false, false, "timed out", t0.Add(10*time.Second), hold) // timed out at 10 s
	if ok, _ := allow(&b, 11*time.Second); ok {
		t.Fatal("a member that just timed out was allowed")
	}
	if _, err := b.allow("other", pipeline, t0.Add(11*time.Second)); err != nil {
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
	b.done("m", true, false, "", t0.Add(41*time.Second), hold)
	if ok, _ := allow(&b, 42*time.Second); ok {
		t.Fatal("a probe without an answer ended the hold")
	}
	if _, err := b.allow("m", pipeline, t0.Add(42*time.Second)); !errors.Is(err, errHeldOff) || err.Error() != "timed out" {
		t.Fatalf("held off: allow = %v; want errHeldOff with the message of the timeout", err)
	}
	ok, probe = allow(&b, 72*time.Second)
	if !ok || !probe {
		t.Fatal("no second probe after the second hold")
	}
	// A reconcile that is not the probe and was refused changes nothing...
	b.done("m", false, false, "", t0.Add(72*time.Second), hold)
	if ok, _ := allow(&b, 73*time.Second); ok {
		t.Fatal("a refused non-probe reconcile ended the hold or the probe")
	}
	// ...and the probe's answer ends the hold.
	b.done("m", true, true, "", t0.Add(73*time.Second), hold)
	if ok, probe := allow(&b, 74*time.Second); !ok || probe {
		t.Fatalf("after an answer: allow = %v, probe = %v; want allowed, no probe", ok, probe)
	}

	// A changed inventory entry ends a hold at once.
	b.done("m", false, false, "not engaged", t0.Add(80*time.Second), hold)
	if ok, _ := allow(&b, 81*time.Second); ok {
		t.Fatal("a member found not engaged was not held off")
	}
	b.forgive("m")
	if ok, probe := allow(&b, 82*time.Second); !ok || probe {
		t.Fatalf("after forgive: allow = %v, probe = %v; want allowed, no probe", ok, probe)
	}
}

func TestMemberBreakerSlow(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	p1, p2 := types.NamespacedName{Namespace: "ns", Name: "p1"}, types.NamespacedName{Namespace: "ns", Name: "p2"}
	var b memberBreaker
	b.markSlow("m")
	if !b.isSlow("m") || b.isSlow("other") {
		t.Fatal("isSlow does not tell the member marked slow")
	}
	for _, p := range []types.NamespacedName{p1, p2, p1} {
		if _, err := b.allow("m", p, now); !errors.Is(err, errSlow) {
			t.Fatalf("a slow member: allow = %v, want errSlow", err)
		}
	}
	if _, err := b.allow("other", p1, now); err != nil {
		t.Fatalf("another member: allow = %v", err)
	}
	// Work elsewhere that was refused says nothing about an answer: still slow.
	if got := b.done("m", false, false, "", now, time.Minute); got != nil || !b.isSlow("m") {
		t.Fatalf("a refusal ended the slow state (returned %v)", got)
	}
	// An answer ends it and hands back each pipeline that skipped the member, once.
	got := b.done("m", false, true, "", now, time.Minute)
	slices.SortFunc(got, func(a, b types.NamespacedName) int { return strings.Compare(a.Name, b.Name) })
	if !slices.Equal(got, []types.NamespacedName{p1, p2}) {
		t.Fatalf("answered: pipelines to reconcile again = %v, want [p1 p2]", got)
	}
	if _, err := b.allow("m", p1, now); err != nil {
		t.Fatalf("after an answer: allow = %v", err)
	}

	// Late work that timed out: held off, and the skipped pipelines come back to see it.
	b.markSlow("m")
	_, _ = b.allow("m", p2, now)
	if got := b.done("m", false, false, "timed out", now, time.Minute); !slices.Equal(got, []types.NamespacedName{p2}) {
		t.Fatalf("timed out: pipelines to reconcile again = %v, want [p2]", got)
	}
	if _, err := b.allow("m", p1, now.Add(time.Second)); !errors.Is(err, errHeldOff) {
		t.Fatalf("after a timeout: allow = %v, want errHeldOff", err)
	}

	// settle ends the slow state whatever the late work's outcome.
	b.markSlow("n")
	_, _ = b.allow("n", p1, now)
	if got := b.settle("n"); !slices.Equal(got, []types.NamespacedName{p1}) || b.isSlow("n") {
		t.Fatalf("settle = %v, slow after = %v", got, b.isSlow("n"))
	}
	if got := b.settle("n"); got != nil {
		t.Fatalf("a second settle returned %v", got)
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
