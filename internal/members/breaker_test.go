package members

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

func TestMemberBreakerSlow(t *testing.T) {
	n1 := types.NamespacedName{Namespace: "ns", Name: "p1"}
	p1, p2 := WakeKey{NamespacedName: n1}, WakeKey{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p2"}}
	// A ReaderLease's replay skipped the member too: it comes back in its own controller.
	l1 := WakeKey{NamespacedName: n1, Lease: true}
	var b Breaker
	if b.Skip("m", p1) {
		t.Fatal("a member never marked slow was skipped")
	}
	b.MarkSlow("m")
	if !b.IsSlow("m") || b.IsSlow("other") {
		t.Fatal("isSlow does not tell the member marked slow")
	}
	for _, k := range []WakeKey{p1, p2, p1, l1} {
		if !b.Skip("m", k) {
			t.Fatal("a slow member was not skipped")
		}
	}
	if b.Skip("other", p1) {
		t.Fatal("another member was skipped")
	}
	// settle ends the slow state and hands back each reconcile that skipped the member, once.
	got := b.Settle("m")
	slices.SortFunc(got, func(a, b WakeKey) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(fmt.Sprint(a.Lease), fmt.Sprint(b.Lease))
	})
	if want := []WakeKey{p1, l1, p2}; !slices.Equal(got, want) || b.IsSlow("m") {
		t.Fatalf("settle = %v, slow after = %v; want %v, not slow", got, b.IsSlow("m"), want)
	}
	if got := b.Settle("m"); got != nil {
		t.Fatalf("a second settle returned %v", got)
	}
	b.MarkSlow("n")
	b.Forget("n")
	if b.IsSlow("n") {
		t.Fatal("forget left the slow state")
	}
}

func TestRunningWork(t *testing.T) {
	var w RunningWork
	k := WorkKey{Pipeline: types.NamespacedName{Namespace: "ns", Name: "p"}, Member: "m"}
	if !w.Begin(k) {
		t.Fatal("first begin refused")
	}
	if w.Begin(k) {
		t.Fatal("a second begin while the first runs was allowed")
	}
	if !w.Begin(WorkKey{Pipeline: k.Pipeline, Member: "other"}) {
		t.Fatal("work on another member was refused")
	}
	w.End(k)
	if !w.Begin(k) {
		t.Fatal("begin after end refused")
	}
}

// A member that answers with an error backs off on its own schedule, doubling up to backoffMax;
// success ends it; forgetting a member or a pipeline drops its entries.
func TestMemberBackoff(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := types.NamespacedName{Namespace: "ns", Name: "p"}
	k, other := WorkKey{Pipeline: p, Member: "m"}, WorkKey{Pipeline: p, Member: "n"}
	var b Backoff[string]
	if _, _, waiting := b.Waiting(k, t0); waiting {
		t.Fatal("a member that never failed is backing off")
	}
	obs := "forbidden"
	var delays []time.Duration
	for i := range 12 {
		delays = append(delays, b.Failed(k, obs, t0.Add(time.Duration(i)*time.Hour)))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		64 * time.Second, 128 * time.Second, 256 * time.Second, backoffMax, backoffMax, backoffMax}
	if !slices.Equal(delays, want) {
		t.Fatalf("delays = %v, want %v", delays, want)
	}
	last := t0.Add(11 * time.Hour)
	got, left, waiting := b.Waiting(k, last.Add(time.Minute))
	if !waiting || left != backoffMax-time.Minute || got != obs {
		t.Fatalf("waiting = %v, %v, %v; want the last failure, %v left", got, left, waiting, backoffMax-time.Minute)
	}
	if _, _, waiting := b.Waiting(k, last.Add(backoffMax)); waiting {
		t.Fatal("still waiting once the backoff is over")
	}
	if _, _, waiting := b.Waiting(other, last); waiting {
		t.Fatal("another member of the same pipeline is backing off")
	}
	b.Succeeded(k)
	if d := b.Failed(k, obs, last); d != time.Second {
		t.Fatalf("after a success the backoff starts over at %v, want 1s", d)
	}
	b.Failed(other, obs, last)
	b.ForgetMember("m")
	if _, _, waiting := b.Waiting(k, last); waiting {
		t.Fatal("forgetMember left the member's backoff")
	}
	b.ForgetPipeline(p)
	if _, _, waiting := b.Waiting(other, last); waiting {
		t.Fatal("forgetPipeline left the pipeline's backoff")
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
		if got := IsTimeout(tc.err); got != tc.want {
			t.Errorf("isTimeout(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if !IsUnreachable(fmt.Errorf("cluster %q %w: timed out", "m", ErrDown)) {
		t.Error("a member found down is not reported unreachable")
	}
}
