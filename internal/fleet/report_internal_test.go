package fleet

import (
	"strings"
	"testing"
	"time"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/status"
)

// TestNextLookDeparted: a departed member that answers and still holds a reader brings the
// pipeline back soon by itself, whatever its entry's state; one draining, or whose pass failed, at
// the retry interval; one that does not answer waits for its health check (or the fence's bound).
// The Removing rows check the same with the entry listed in the status, as an entry not yet
// confirmed gone is.
func TestNextLookDeparted(t *testing.T) {
	r := lookIntervals{wait: 2 * time.Second, retry: 30 * time.Second}
	p := &urutauv1alpha1.CDCPipeline{}
	for _, tc := range []struct {
		name   string
		state  lease.State
		failed bool
		want   time.Duration
	}{
		{"holding a reader", lease.Holding, false, 2 * time.Second},
		{"draining", lease.Draining, false, 30 * time.Second},
		{"empty", lease.Empty, false, 0},
		{"unreachable", lease.Unreachable, false, 0},
		// A member answering 403 to every cleanup LIST, or too slow for the fan-out: the pass
		// says Holding because it is the safe default, not because a reader was seen.
		{"pass failed", lease.Holding, true, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := &placed{departed: map[lease.Key]memberwork.Departed{{Cluster: "a"}: {State: tc.state, Failed: tc.failed}}}
			// No Removing: the entry was confirmed gone, so the status does not list it.
			if got := r.nextLook(p, &world{}, status.Observation{}, pl, nil); got != tc.want {
				t.Errorf("confirmed gone: nextLook = %s, want %s", got, tc.want)
			}
			want := tc.want
			if want == 0 {
				want = r.retry
			}
			if got := r.nextLook(p, &world{}, status.Observation{Removing: []string{"a"}}, pl, nil); got != want {
				t.Errorf("removing: nextLook = %s, want %s", got, want)
			}
		})
	}
}

// TestObservationRepointedName: an entry whose name reaches another cluster now (pointed
// elsewhere and accepted) still holds the move while its old cluster does not let go: the status
// says it is blocked, and the member's row, which shows the new cluster waiting, says why in the
// old one's words.
func TestObservationRepointedName(t *testing.T) {
	old := urutauv1alpha1.LeaseMember{Cluster: "c", ClusterID: "id-old", PipelineUID: "uid-p", State: urutauv1alpha1.LeaseMemberActive}
	gone := urutauv1alpha1.LeaseMember{Cluster: "c", ClusterID: "id-older", PipelineUID: "uid-p", State: urutauv1alpha1.LeaseMemberGone}
	// A Drained entry of a cluster that never answers again is cleared by nothing a person can do:
	// it does not make the name "removing" while the new cluster runs there.
	drained := urutauv1alpha1.LeaseMember{Cluster: "c", ClusterID: "id-oldest", PipelineUID: "uid-p", State: urutauv1alpha1.LeaseMemberDrained}
	why := `cluster "c" now answers as identity id-new; this pipeline's objects went to identity id-old, which answers as clusters "c-x", "c-y"`
	pl := &placed{
		decision: lease.Decision{Wait: []string{"c"}, Departed: []urutauv1alpha1.LeaseMember{old, gone, drained}},
		departed: map[lease.Key]memberwork.Departed{lease.KeyOf(old): {State: lease.Unreachable, Message: why},
			lease.KeyOf(drained): {State: lease.Unreachable, Message: "does not answer"}},
	}
	obs := observation(&urutauv1alpha1.CDCPipeline{}, &world{ids: map[string]string{"c": "id-new"}}, pl, nil)
	if len(obs.BlockedBy) != 1 || obs.BlockedBy[0] != "c" {
		t.Errorf("BlockedBy = %v, want [c]: the old cluster holds the move", obs.BlockedBy)
	}
	if len(obs.Removing) != 0 {
		t.Errorf("Removing = %v, want none: the Drained entry holds nothing", obs.Removing)
	}
	if len(obs.Members) != 1 {
		t.Fatalf("%d rows, want one per name: %+v", len(obs.Members), obs.Members)
	}
	row := obs.Members[0]
	if row.ClusterID != "id-new" || row.Phase != urutauv1alpha1.ClusterPending || !strings.Contains(row.Message, why) || strings.Contains(row.Message, "confirmed gone") || strings.Contains(row.Message, "does not answer") {
		t.Errorf("row = %+v, want the new cluster waiting, with the old one's reason and not the Gone entry's", row)
	}
}
