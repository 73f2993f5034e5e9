package lease

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// FollowRenames moves an entry to the name its cluster is registered under now.
func TestFollowRenames(t *testing.T) {
	l := lease(selfP, entry(selfP, "a", urutauv1alpha1.LeaseMemberActive), entry(selfP, "b", urutauv1alpha1.LeaseMemberActive))
	if got := FollowRenames(l, nil, map[string]string{"a": "id-a", "b": "id-b"}, nil, nil); got != l {
		t.Fatal("nothing renamed, yet a copy was returned")
	}
	// A live pipeline follows its cluster only to a member it is placed on.
	if s := states(FollowRenames(l, map[string]string{"b": "id-b"}, map[string]string{"a2": "id-a", "b": "id-b"}, nil, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("a live pipeline's entry moved to a member it is not placed on: %s", s)
	}
	got := FollowRenames(l, nil, map[string]string{"a2": "id-a", "b": "id-b"}, nil, nil)
	if s := states(got); s != "p@a2=Active p@b=Active" {
		t.Fatalf("after renaming a to a2: %s", s)
	}
	if states(l) != "p@a=Active p@b=Active" {
		t.Fatal("FollowRenames changed its input")
	}
	// The old name now points at another cluster: the entry is not moved to it.
	if s := states(FollowRenames(l, nil, map[string]string{"a": "id-other", "b": "id-b"}, nil, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("repointed a: %s", s)
	}
	// Two names for one cluster: ambiguous, the entry stays; unless the pipeline targets one.
	two := map[string]string{"x": "id-a", "y": "id-a", "b": "id-b"}
	if s := states(FollowRenames(l, nil, two, nil, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("two names for a's cluster, no target: %s", s)
	}
	if s := states(FollowRenames(l, map[string]string{"y": "id-a"}, two, nil, nil)); s != "p@y=Active p@b=Active" {
		t.Fatalf("two names for a's cluster, y targeted: %s", s)
	}
	// A person accepted a new cluster under the name a, and a's old cluster answers as c: a live
	// pipeline's entry of the old cluster follows it there, to be emptied (it is not "gone").
	accepted := sets.New("a")
	if s := states(FollowRenames(l, map[string]string{"a": "id-new", "b": "id-b"}, map[string]string{"a": "id-new", "b": "id-b", "c": "id-a"}, nil, accepted)); s != "p@c=Active p@b=Active" {
		t.Fatalf("accepted a's new identity while its old cluster answers as c: %s", s)
	}
	// Not registered anywhere else: the entry stays, and the acceptance confirms it gone.
	if s := states(FollowRenames(l, map[string]string{"a": "id-new", "b": "id-b"}, map[string]string{"a": "id-new", "b": "id-b"}, nil, accepted)); s != "p@a=Active p@b=Active" {
		t.Fatalf("accepted a's new identity, old cluster nowhere: %s", s)
	}
	// Another member answers with a's identity while a, still registered, has not answered since
	// the hub started: not told apart from an impostor, the entry stays (a gone pipeline's
	// tombstone would otherwise be emptied on the impostor and the source freed).
	if s := states(FollowRenames(l, nil, map[string]string{"m2": "id-a", "b": "id-b"}, sets.New("a"), nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("m2 claims a's identity while a is unknown: %s", s)
	}
	// The documented rename: the new name registered beside the old one, both answering as one
	// cluster, the pipeline placed on the new name: the entry follows it (nothing is emptied).
	if s := states(FollowRenames(l, map[string]string{"a-new": "id-a", "b": "id-b"}, map[string]string{"a": "id-a", "a-new": "id-a", "b": "id-b"}, nil, nil)); s != "p@a-new=Active p@b=Active" {
		t.Fatalf("renamed a to a-new, both registered: %s", s)
	}
	// An old and a new entry for the same cluster become one, the more active.
	dup := lease(selfP, entry(selfP, "a", urutauv1alpha1.LeaseMemberGone), entry(selfP, "a2", urutauv1alpha1.LeaseMemberDrained))
	dup.Spec.Members[1].ClusterID = "id-a"
	if s := states(FollowRenames(dup, map[string]string{"a2": "id-a"}, nil, nil, nil)); s != "p@a2=Drained" {
		t.Fatalf("merged: %s", s)
	}
}

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
			got := IdentityMoved(e, tc.ids["a"], tc.ids)
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
	got := AcceptedGone(sets.New("a", "d", "e", "f"), own, ids)
	if want := sets.New("d", "e", "f"); !got.Equal(want) {
		t.Errorf("confirmed gone by acceptance: %v, want %v (a's old cluster answers as b and c)", sets.List(got), sets.List(want))
	}
	if got := AcceptedGone(sets.New("a"), nil, ids); !got.Equal(sets.New("a")) {
		t.Errorf("no entry of the pipeline: %v, want a", sets.List(got))
	}
	// Through the lease as reconcile reads it: another pipeline's tombstone at a holds nothing.
	l := &urutauv1alpha1.ReaderLease{Spec: urutauv1alpha1.ReaderLeaseSpec{Members: []urutauv1alpha1.LeaseMember{
		{Cluster: "a", ClusterID: "id-gone", PipelineUID: "uid-p", State: active},
		{Cluster: "a", ClusterID: "id-old", PipelineUID: "uid-q", State: urutauv1alpha1.LeaseMemberGone},
	}}}
	if got := AcceptedGone(sets.New("a"), OwnEntries(l, "uid-p"), ids); !got.Equal(sets.New("a")) {
		t.Errorf("p's own old cluster answers nowhere: %v, want a confirmed", sets.List(got))
	}
}

// A stray entry joins the lease it belongs to, or starts one held by the pipeline; once.
func TestWithEntry(t *testing.T) {
	stray := entry(otherQ, "c", urutauv1alpha1.LeaseMemberActive)
	got := WithEntry(nil, "mysql-1101", src, otherQ, stray)
	if got == nil || got.Name != "mysql-1101" || got.Spec.Holder != otherQ || got.Spec.Source.Value != "1101" || states(got) != "q@c=Active" {
		t.Fatalf("a new lease: %+v", got)
	}
	current := lease(selfP, entry(selfP, "d", urutauv1alpha1.LeaseMemberActive))
	got = WithEntry(current, current.Name, src, otherQ, stray)
	if states(got) != "q@c=Active p@d=Active" || got.Spec.Holder != selfP {
		t.Fatalf("joined: %s held by %v, want the entries sorted and the holder kept", states(got), got.Spec.Holder)
	}
	if len(current.Spec.Members) != 1 {
		t.Fatal("WithEntry changed its input")
	}
	if WithEntry(got, got.Name, src, otherQ, stray) != nil {
		t.Fatal("an entry already there was added again")
	}
}
