package fleet

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// An entry whose name reaches another cluster now says where its own cluster answers, if it
// does; the way out it names for one such name (accept the new identity of the entry's name while
// the placement selects it) is the one that moves the entry there to be emptied (renamedTo).
func TestIdentityMoved(t *testing.T) {
	e := urutauv1alpha1.LeaseMember{Cluster: "a", ClusterID: "id-old", PipelineUID: "uid-p", PipelineName: "orders"}
	for _, tc := range []struct {
		name      string
		ids       map[string]string
		want, not string
		// renamed: check where the entry goes; acceptedTo: where, once the new identity is
		// accepted ("": nowhere, it stays).
		renamed    bool
		acceptedTo string
	}{
		{name: "its cluster answers nowhere", ids: map[string]string{"a": "id-new"},
			want: `cluster "a" now answers as identity id-new; this pipeline's objects went to identity id-old, which the hub cannot reach`},
		{name: "its cluster answers as b", ids: map[string]string{"a": "id-new", "b": "id-old", "c": "id-c"},
			want: `which answers as cluster "b", where this pipeline is not placed: they are left as they are, and the move waits, until a platform admin accepts the new identity of "a" (annotate its inventory entry ` +
				urutauv1alpha1.AnnotationClusterID + `=id-new) while the placement selects "a"; they are removed from "b" then`,
			not: "cannot reach", renamed: true, acceptedTo: "b"},
		{name: "its cluster answers under two names", ids: map[string]string{"a": "id-new", "b": "id-old", "c": "id-old"},
			want: `which answers as clusters "b", "c", where this pipeline is not placed: the hub cannot tell which of them to empty, and the move waits; remove them from that cluster by hand (objects labelled ` +
				urutauv1alpha1.LabelHubPipelineUID + `=uid-p, and pods labelled ` + urutauv1alpha1.LabelPipeline + `=orders: wait until none is left), then confirm "a" gone`,
			not: "cannot reach", renamed: true, acceptedTo: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := identityMoved(e, tc.ids["a"], tc.ids)
			if !strings.Contains(got, tc.want) || (tc.not != "" && strings.Contains(got, tc.not)) {
				t.Errorf("message %q\nwant it to contain %q and not %q", got, tc.want, tc.not)
			}
			if !tc.renamed {
				return
			}
			// The placement selects a (its new cluster) and d, where the old cluster is not.
			targets := map[string]string{"a": "id-new", "d": "id-d"}
			if to := renamedTo(e, targets, tc.ids, false, false); to != "a" {
				t.Errorf("not accepted: the entry went to %q, want it kept at a", to)
			}
			if to := renamedTo(e, targets, tc.ids, false, true); to != tc.acceptedTo {
				t.Errorf("accepted: the entry went to %q, want %q", to, tc.acceptedTo)
			}
		})
	}
}

// Accepting a new identity under a name confirms the old cluster gone only when it no longer
// answers under another registered name: one that does may still run a reader (issue #26, 7).
// Only the pipeline's own Active entries count: another pipeline's tombstone whose cluster
// answers under two names holds nothing of this one.
func TestAcceptedGone(t *testing.T) {
	active := urutauv1alpha1.LeaseMemberActive
	own := []urutauv1alpha1.LeaseMember{
		{Cluster: "a", ClusterID: "id-old", State: active}, {Cluster: "d", ClusterID: "id-d-old", State: active},
		{Cluster: "e", ClusterID: "id-e", State: active}, {Cluster: "f", ClusterID: "id-old", State: urutauv1alpha1.LeaseMemberDrained},
	}
	ids := map[string]string{"a": "id-a-new", "b": "id-old", "c": "id-old", "d": "id-d-new", "e": "id-e", "f": "id-f-new"}
	got := acceptedGone(sets.New("a", "d", "e", "f"), own, ids)
	if want := sets.New("d", "e", "f"); !got.Equal(want) {
		t.Errorf("confirmed gone by acceptance: %v, want %v (a's old cluster answers as b and c)", sets.List(got), sets.List(want))
	}
	if got := acceptedGone(sets.New("a"), nil, ids); !got.Equal(sets.New("a")) {
		t.Errorf("no entry of the pipeline: %v, want a", sets.List(got))
	}
	// Through the lease as reconcile reads it: another pipeline's tombstone at a holds nothing.
	lease := &urutauv1alpha1.ReaderLease{Spec: urutauv1alpha1.ReaderLeaseSpec{Members: []urutauv1alpha1.LeaseMember{
		{Cluster: "a", ClusterID: "id-gone", PipelineUID: "uid-p", State: active},
		{Cluster: "a", ClusterID: "id-old", PipelineUID: "uid-q", State: urutauv1alpha1.LeaseMemberGone},
	}}}
	if got := acceptedGone(sets.New("a"), ownEntries(lease, "uid-p"), ids); !got.Equal(sets.New("a")) {
		t.Errorf("p's own old cluster answers nowhere: %v, want a confirmed", sets.List(got))
	}
}
