package failover

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

func TestCandidates(t *testing.T) {
	inv := []inventory.Member{
		{Name: "a", Labels: map[string]string{"tier": "dr"}}, {Name: "b"}, {Name: "c", Labels: map[string]string{"tier": "dr"}},
		{Name: "d", Labels: map[string]string{"tier": "dr"}},
	}
	p := &urutauv1alpha1.CDCPipeline{Spec: urutauv1alpha1.CDCPipelineSpec{Placement: urutauv1alpha1.Placement{Fenced: true,
		Failover: &urutauv1alpha1.FailoverPlacement{
			Candidates:        []string{"c", "gone", "b", "c"},
			CandidateSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dr"}},
		}}}}
	got, err := Candidates(p, inv)
	if err != nil {
		t.Fatal(err)
	}
	// The named ones in their order (unknown and repeated names left out), then the selected ones by name.
	if strings.Join(got, ",") != "c,b,a,d" {
		t.Fatalf("Candidates = %v, want c,b,a,d", got)
	}
}

func TestChooseFailover(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	up := Health{Known: true, Up: true}
	lost := func(ago time.Duration) Health { return Health{Known: true, LostSince: now.Add(-ago)} }
	unknown := Health{}
	th := 2 * time.Minute
	for _, tc := range []struct {
		name      string
		in        Input
		target    string
		reason    string
		recheckAt time.Duration // after now; 0: none
		ignored   bool
		stuck     bool
	}{
		{"first placement: the first healthy candidate", Input{Candidates: []string{"a", "b"}, Health: map[string]Health{"a": lost(time.Hour), "b": up}}, "b", "", 0, false, false},
		{"first placement before any health check: the first not known down", Input{Candidates: []string{"a", "b"}, Health: map[string]Health{"a": unknown}}, "a", "", 0, false, false},
		{"first placement, every candidate down: nowhere", Input{Candidates: []string{"a"}, Health: map[string]Health{"a": lost(time.Hour)}}, "", "", 0, false, true},
		{"healthy: stays", Input{Candidates: []string{"a", "b"}, Current: "b", Health: map[string]Health{"a": up, "b": up}}, "b", "", 0, false, false},
		{"lost under the threshold: stays, looks again when it is reached", Input{Candidates: []string{"a", "b"}, Current: "a", Health: map[string]Health{"a": lost(30 * time.Second), "b": up}}, "a", "", 90 * time.Second, false, false},
		{"lost past the threshold: the next healthy candidate", Input{Candidates: []string{"a", "b", "c"}, Current: "a", Health: map[string]Health{"a": lost(3 * time.Minute), "b": lost(time.Hour), "c": up}}, "c", urutauv1alpha1.FailoverMemberLost, 0, false, false},
		{"lost past the threshold, no healthy candidate: stays", Input{Candidates: []string{"a", "b"}, Current: "a", Health: map[string]Health{"a": lost(3 * time.Minute), "b": unknown}}, "a", "", 0, false, true},
		{"never moves back by itself", Input{Candidates: []string{"a", "b"}, Current: "b", Health: map[string]Health{"a": up, "b": up}}, "b", "", 0, false, false},
		{"moves back when asked", Input{Candidates: []string{"a", "b"}, Current: "b", Requested: "a", Health: map[string]Health{"a": up, "b": up}}, "a", urutauv1alpha1.FailoverRequested, 0, false, false},
		{"a request for a member that is down is ignored", Input{Candidates: []string{"a", "b"}, Current: "b", Requested: "a", Health: map[string]Health{"a": lost(time.Minute), "b": up}}, "b", "", 0, true, false},
		{"a request for a non-candidate is ignored", Input{Candidates: []string{"a", "b"}, Current: "b", Requested: "z", Health: map[string]Health{"a": up, "b": up}}, "b", "", 0, true, false},
		{"current no longer a candidate: moves", Input{Candidates: []string{"a", "b"}, Current: "x", Health: map[string]Health{"a": up, "b": up}}, "a", urutauv1alpha1.FailoverCandidateRemoved, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now, tc.in.Threshold = now, th
			d := Choose(tc.in)
			if d.Target != tc.target || d.Reason != tc.reason {
				t.Fatalf("Choose = %q (%q), want %q (%q): %s", d.Target, d.Reason, tc.target, tc.reason, d.Message)
			}
			if want := now.Add(tc.recheckAt); (tc.recheckAt == 0) != d.RecheckAt.IsZero() || (tc.recheckAt != 0 && !d.RecheckAt.Equal(want)) {
				t.Fatalf("RecheckAt = %v, want %v", d.RecheckAt, tc.recheckAt)
			}
			if (d.RequestIgnored != "") != tc.ignored || Stuck(d) != tc.stuck {
				t.Fatalf("ignored %q, stuck %v; want ignored %v, stuck %v", d.RequestIgnored, Stuck(d), tc.ignored, tc.stuck)
			}
		})
	}
}

func TestFailoverStatus(t *testing.T) {
	t1 := metav1.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	t2 := metav1.NewTime(t1.Add(95 * time.Second))
	lostAt := t1.Add(-60 * time.Second)

	// First placement: a member, no move.
	st := statusAfter(nil, &View{Decision: Decision{Target: "a"}}, false, t1)
	if st.Member != "a" || st.Last != nil || st.Failovers != 0 {
		t.Fatalf("first placement: %+v", st)
	}
	// A lost: the move is recorded, counted, and in progress.
	v := &View{Current: "a", Decision: Decision{Target: "b", Reason: urutauv1alpha1.FailoverMemberLost, LostSince: lostAt}}
	st = statusAfter(st, v, false, t1)
	if st.Member != "b" || st.Failovers != 1 || st.Last == nil || st.Last.From != "a" || st.Last.ReadyAt != nil || !FailingOver(st) {
		t.Fatalf("failover decided: %+v %+v", st, st.Last)
	}
	// The same decision again changes nothing (idle is quiet) until b is ready.
	again := statusAfter(st, &View{Current: "b", Decision: Decision{Target: "b"}}, false, t2)
	if again.Last.DecidedAt != t1 || again.Last.ReadyAt != nil || again.Failovers != 1 {
		t.Fatalf("unchanged decision moved the status: %+v", again.Last)
	}
	// Ready: the gap runs from when a last answered.
	done := statusAfter(again, &View{Current: "b", Decision: Decision{Target: "b"}}, true, t2)
	if done.Last.ReadyAt == nil || done.Last.ReaderGapSeconds != 155 || FailingOver(done) {
		t.Fatalf("completed: %+v, want a gap of 155s", done.Last)
	}
	// A move asked for is recorded, not counted as a failover.
	back := statusAfter(done, &View{Current: "b", Decision: Decision{Target: "a", Reason: urutauv1alpha1.FailoverRequested}}, false, t2)
	if back.Member != "a" || back.Failovers != 1 || back.Last.Reason != urutauv1alpha1.FailoverRequested {
		t.Fatalf("requested move: %+v", back)
	}
}
