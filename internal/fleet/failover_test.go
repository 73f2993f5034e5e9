package fleet

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
)

func TestFailoverCandidates(t *testing.T) {
	inv := []inventory.Member{
		{Name: "a", Labels: map[string]string{"tier": "dr"}}, {Name: "b"}, {Name: "c", Labels: map[string]string{"tier": "dr"}},
		{Name: "d", Labels: map[string]string{"tier": "dr"}},
	}
	p := &urutauv1alpha1.CDCPipeline{Spec: urutauv1alpha1.CDCPipelineSpec{Placement: urutauv1alpha1.Placement{Fenced: true,
		Failover: &urutauv1alpha1.FailoverPlacement{
			Candidates:        []string{"c", "gone", "b", "c"},
			CandidateSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dr"}},
		}}}}
	got, err := FailoverCandidates(p, inv)
	if err != nil {
		t.Fatal(err)
	}
	// The named ones in their order (unknown and repeated names left out), then the selected ones by name.
	if strings.Join(got, ",") != "c,b,a,d" {
		t.Fatalf("FailoverCandidates = %v, want c,b,a,d", got)
	}
}

func TestChooseFailover(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	up := candidateHealth{known: true, up: true}
	lost := func(ago time.Duration) candidateHealth { return candidateHealth{known: true, lostSince: now.Add(-ago)} }
	unknown := candidateHealth{}
	th := 2 * time.Minute
	for _, tc := range []struct {
		name      string
		in        failoverInput
		target    string
		reason    string
		recheckAt time.Duration // after now; 0: none
		ignored   bool
		stuck     bool
	}{
		{"first placement: the first healthy candidate", failoverInput{Candidates: []string{"a", "b"}, Health: map[string]candidateHealth{"a": lost(time.Hour), "b": up}}, "b", "", 0, false, false},
		{"first placement before any health check: the first not known down", failoverInput{Candidates: []string{"a", "b"}, Health: map[string]candidateHealth{"a": unknown}}, "a", "", 0, false, false},
		{"first placement, every candidate down: nowhere", failoverInput{Candidates: []string{"a"}, Health: map[string]candidateHealth{"a": lost(time.Hour)}}, "", "", 0, false, true},
		{"healthy: stays", failoverInput{Candidates: []string{"a", "b"}, Current: "b", Health: map[string]candidateHealth{"a": up, "b": up}}, "b", "", 0, false, false},
		{"lost under the threshold: stays, looks again when it is reached", failoverInput{Candidates: []string{"a", "b"}, Current: "a", Health: map[string]candidateHealth{"a": lost(30 * time.Second), "b": up}}, "a", "", 90 * time.Second, false, false},
		{"lost past the threshold: the next healthy candidate", failoverInput{Candidates: []string{"a", "b", "c"}, Current: "a", Health: map[string]candidateHealth{"a": lost(3 * time.Minute), "b": lost(time.Hour), "c": up}}, "c", urutauv1alpha1.FailoverMemberLost, 0, false, false},
		{"lost past the threshold, no healthy candidate: stays", failoverInput{Candidates: []string{"a", "b"}, Current: "a", Health: map[string]candidateHealth{"a": lost(3 * time.Minute), "b": unknown}}, "a", "", 0, false, true},
		{"never moves back by itself", failoverInput{Candidates: []string{"a", "b"}, Current: "b", Health: map[string]candidateHealth{"a": up, "b": up}}, "b", "", 0, false, false},
		{"moves back when asked", failoverInput{Candidates: []string{"a", "b"}, Current: "b", Requested: "a", Health: map[string]candidateHealth{"a": up, "b": up}}, "a", urutauv1alpha1.FailoverRequested, 0, false, false},
		{"a request for a member that is down is ignored", failoverInput{Candidates: []string{"a", "b"}, Current: "b", Requested: "a", Health: map[string]candidateHealth{"a": lost(time.Minute), "b": up}}, "b", "", 0, true, false},
		{"a request for a non-candidate is ignored", failoverInput{Candidates: []string{"a", "b"}, Current: "b", Requested: "z", Health: map[string]candidateHealth{"a": up, "b": up}}, "b", "", 0, true, false},
		{"current no longer a candidate: moves", failoverInput{Candidates: []string{"a", "b"}, Current: "x", Health: map[string]candidateHealth{"a": up, "b": up}}, "a", urutauv1alpha1.FailoverCandidateRemoved, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now, tc.in.Threshold = now, th
			d := chooseFailover(tc.in)
			if d.Target != tc.target || d.Reason != tc.reason {
				t.Fatalf("chooseFailover = %q (%q), want %q (%q): %s", d.Target, d.Reason, tc.target, tc.reason, d.Message)
			}
			if want := now.Add(tc.recheckAt); (tc.recheckAt == 0) != d.RecheckAt.IsZero() || (tc.recheckAt != 0 && !d.RecheckAt.Equal(want)) {
				t.Fatalf("RecheckAt = %v, want %v", d.RecheckAt, tc.recheckAt)
			}
			if (d.RequestIgnored != "") != tc.ignored || stuck(d) != tc.stuck {
				t.Fatalf("ignored %q, stuck %v; want ignored %v, stuck %v", d.RequestIgnored, stuck(d), tc.ignored, tc.stuck)
			}
		})
	}
}

func TestFailoverStatus(t *testing.T) {
	t1 := metav1.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	t2 := metav1.NewTime(t1.Add(95 * time.Second))
	lostAt := t1.Add(-60 * time.Second)

	// First placement: a member, no move.
	st := failoverStatus(nil, &failoverView{decision: failoverDecision{Target: "a"}}, false, t1)
	if st.Member != "a" || st.Last != nil || st.Failovers != 0 {
		t.Fatalf("first placement: %+v", st)
	}
	// A lost: the move is recorded, counted, and in progress.
	v := &failoverView{current: "a", decision: failoverDecision{Target: "b", Reason: urutauv1alpha1.FailoverMemberLost, LostSince: lostAt}}
	st = failoverStatus(st, v, false, t1)
	if st.Member != "b" || st.Failovers != 1 || st.Last == nil || st.Last.From != "a" || st.Last.ReadyAt != nil || !failingOver(st) {
		t.Fatalf("failover decided: %+v %+v", st, st.Last)
	}
	// The same decision again changes nothing (idle is quiet) until b is ready.
	again := failoverStatus(st, &failoverView{current: "b", decision: failoverDecision{Target: "b"}}, false, t2)
	if again.Last.DecidedAt != t1 || again.Last.ReadyAt != nil || again.Failovers != 1 {
		t.Fatalf("unchanged decision moved the status: %+v", again.Last)
	}
	// Ready: the gap runs from when a last answered.
	done := failoverStatus(again, &failoverView{current: "b", decision: failoverDecision{Target: "b"}}, true, t2)
	if done.Last.ReadyAt == nil || done.Last.ReaderGapSeconds != 155 || failingOver(done) {
		t.Fatalf("completed: %+v, want a gap of 155s", done.Last)
	}
	// A move asked for is recorded, not counted as a failover.
	back := failoverStatus(done, &failoverView{current: "b", decision: failoverDecision{Target: "a", Reason: urutauv1alpha1.FailoverRequested}}, false, t2)
	if back.Member != "a" || back.Failovers != 1 || back.Last.Reason != urutauv1alpha1.FailoverRequested {
		t.Fatalf("requested move: %+v", back)
	}
}

// The hub's bound: from the last acknowledged renewal, or members.WriteLanding after one that got
// no answer; never while it renews; a record first seen counts as renewed members.WriteLanding
// from then.
func TestFenceRenewerBound(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := newFenceRenewer(fenceConfig{ttl: 20 * time.Second, grace: 10 * time.Second, margin: 5 * time.Second})
	f.now = func() time.Time { return now }
	e := entry(selfP, "a", urutauv1alpha1.LeaseMemberActive)
	e.Fence = &urutauv1alpha1.LeaseMemberFence{BoundSeconds: 30, Verified: true, Renewing: true}
	bound := 30*time.Second + 5*time.Second

	f.hold(e)
	if _, ok := f.drainedAt(e); ok {
		t.Fatal("drained while the hub renews it")
	}
	first := now
	renew := func(err error) {
		f.mu.Lock()
		f.records[lease.KeyOf(e)].inflight = now
		f.mu.Unlock()
		f.renew = func(context.Context, fenceTarget) error { return err }
		f.renewOne(t.Context(), lease.KeyOf(e))
	}
	now = now.Add(80 * time.Second)
	renew(nil) // acknowledged at now
	acked := now
	now = now.Add(5 * time.Second)
	f.release(e)
	if at, ok := f.drainedAt(e); !ok || !at.Equal(latest(acked, first.Add(members.WriteLanding)).Add(bound)) {
		t.Fatalf("drainedAt = %v %v, want the ack plus the bound", at, ok)
	}

	f.hold(e)
	now = now.Add(time.Second)
	sent := now
	renew(errors.New("context deadline exceeded")) // no answer: may land until sent+members.WriteLanding
	f.release(e)
	if at, _ := f.drainedAt(e); !at.Equal(sent.Add(members.WriteLanding).Add(bound)) {
		t.Fatalf("after an unanswered renewal drainedAt = %v, want %v", at, sent.Add(members.WriteLanding).Add(bound))
	}
	before, _ := f.drainedAt(e)
	f.hold(e)
	now = now.Add(time.Second)
	renew(&refusedErr{}) // refused: nothing sent, the bound does not move
	f.release(e)
	if at, _ := f.drainedAt(e); !at.Equal(before) {
		t.Fatalf("a refused renewal moved the bound: %v, want %v", at, before)
	}
	// A renewal in flight when the hub stops counts as one that gets no answer.
	f.mu.Lock()
	f.records[lease.KeyOf(e)].inflight = now
	f.mu.Unlock()
	if at, _ := f.drainedAt(e); !at.Equal(now.Add(members.WriteLanding).Add(bound)) {
		t.Fatalf("with a renewal in flight drainedAt = %v", at)
	}
}

func TestRenewalMayLand(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("context deadline exceeded"), true},
		{&refusedErr{}, false},
		{errRenewalNotSent, false},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{apierrors.NewInternalError(errors.New("etcd")), true},
		{apierrors.NewTimeoutError("slow", 1), true},
	} {
		if got := renewalMayLand(tc.err); got != tc.want {
			t.Errorf("renewalMayLand(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// refusedErr is a refused connection, as the dialer reports it.
type refusedErr struct{}

func (*refusedErr) Error() string { return "connect: connection refused" }
func (*refusedErr) Unwrap() error { return syscall.ECONNREFUSED }

// What a previous leader may have sent: entries the leases hold when the renewer starts count as
// renewed until members.WriteLanding later; entries first seen afterwards start with none.
func TestFenceRenewerAdopt(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := newFenceRenewer(fenceConfig{ttl: 20 * time.Second, grace: 10 * time.Second, margin: 5 * time.Second})
	f.now = func() time.Time { return now }
	old := entry(selfP, "a", urutauv1alpha1.LeaseMemberActive)
	old.Fence = &urutauv1alpha1.LeaseMemberFence{BoundSeconds: 30, Verified: true, Renewing: true}
	f.adopt([]urutauv1alpha1.LeaseMember{old})
	if !f.records[lease.KeyOf(old)].renewing {
		t.Fatal("an Active, Renewing entry is not renewed after the hub starts leading")
	}
	f.release(old)
	if at, _ := f.drainedAt(old); !at.Equal(now.Add(members.WriteLanding + 35*time.Second)) {
		t.Fatalf("adopted entry drainedAt = %v", at)
	}
	fresh := entry(selfP, "b", urutauv1alpha1.LeaseMemberActive)
	fresh.Fence = old.Fence
	f.release(fresh) // never renewed by anyone
	if at, _ := f.drainedAt(fresh); !at.Equal(time.Time{}.Add(35 * time.Second)) {
		t.Fatalf("an entry first seen after the leases were read drainedAt = %v, want the bound after no renewal", at)
	}
}
