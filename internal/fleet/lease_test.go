package fleet

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/lease"
)

var (
	t0    = metav1.Date(2026, 12, 1, 10, 0, 0, 0, metav1.Now().Location())
	src   = &urutauv1alpha1.SourceIdentity{Kind: "mysql", Field: "serverId", Value: "1101"}
	selfP = urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders", UID: "uid-p"}
)

// entry is a lease entry of pipeline ref on member m (identity "id-"+m).
func entry(ref urutauv1alpha1.PipelineRef, m string, st urutauv1alpha1.LeaseMemberState) urutauv1alpha1.LeaseMember {
	return urutauv1alpha1.LeaseMember{Cluster: m, ClusterID: "id-" + m, PipelineUID: ref.UID, PipelineNamespace: ref.Namespace,
		PipelineName: ref.Name, Namespace: ref.Namespace, State: st, Since: t0}
}

func leaseOf(holder urutauv1alpha1.PipelineRef, entries ...urutauv1alpha1.LeaseMember) *urutauv1alpha1.ReaderLease {
	l := &urutauv1alpha1.ReaderLease{Spec: urutauv1alpha1.ReaderLeaseSpec{Source: src.DeepCopy(), Holder: holder, Members: entries}}
	l.Name = lease.Name(src, holder.UID)
	return l
}

func targets(ms ...string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		out[m] = "id-" + m
	}
	return out
}

// states renders a lease's entries as "pipeline@member=State" for comparison.
func states(l *urutauv1alpha1.ReaderLease) string {
	if l == nil {
		return "<none>"
	}
	var out []string
	for _, e := range l.Spec.Members {
		out = append(out, string(e.PipelineUID)[4:]+"@"+e.Cluster+"="+string(e.State))
	}
	return strings.Join(out, " ")
}

// followRenames moves an entry to the name its cluster is registered under now.
func TestFollowRenames(t *testing.T) {
	l := leaseOf(selfP, entry(selfP, "a", urutauv1alpha1.LeaseMemberActive), entry(selfP, "b", urutauv1alpha1.LeaseMemberActive))
	if got := followRenames(l, nil, map[string]string{"a": "id-a", "b": "id-b"}, nil, nil); got != l {
		t.Fatal("nothing renamed, yet a copy was returned")
	}
	// A live pipeline follows its cluster only to a member it is placed on.
	if s := states(followRenames(l, map[string]string{"b": "id-b"}, map[string]string{"a2": "id-a", "b": "id-b"}, nil, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("a live pipeline's entry moved to a member it is not placed on: %s", s)
	}
	got := followRenames(l, nil, map[string]string{"a2": "id-a", "b": "id-b"}, nil, nil)
	if s := states(got); s != "p@a2=Active p@b=Active" {
		t.Fatalf("after renaming a to a2: %s", s)
	}
	if states(l) != "p@a=Active p@b=Active" {
		t.Fatal("followRenames changed its input")
	}
	// The old name now points at another cluster: the entry is not moved to it.
	if s := states(followRenames(l, nil, map[string]string{"a": "id-other", "b": "id-b"}, nil, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("repointed a: %s", s)
	}
	// Two names for one cluster: ambiguous, the entry stays; unless the pipeline targets one.
	two := map[string]string{"x": "id-a", "y": "id-a", "b": "id-b"}
	if s := states(followRenames(l, nil, two, nil, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("two names for a's cluster, no target: %s", s)
	}
	if s := states(followRenames(l, map[string]string{"y": "id-a"}, two, nil, nil)); s != "p@y=Active p@b=Active" {
		t.Fatalf("two names for a's cluster, y targeted: %s", s)
	}
	// A person accepted a new cluster under the name a, and a's old cluster answers as c: a live
	// pipeline's entry of the old cluster follows it there, to be emptied (it is not "gone").
	accepted := sets.New("a")
	if s := states(followRenames(l, map[string]string{"a": "id-new", "b": "id-b"}, map[string]string{"a": "id-new", "b": "id-b", "c": "id-a"}, nil, accepted)); s != "p@c=Active p@b=Active" {
		t.Fatalf("accepted a's new identity while its old cluster answers as c: %s", s)
	}
	// Not registered anywhere else: the entry stays, and the acceptance confirms it gone.
	if s := states(followRenames(l, map[string]string{"a": "id-new", "b": "id-b"}, map[string]string{"a": "id-new", "b": "id-b"}, nil, accepted)); s != "p@a=Active p@b=Active" {
		t.Fatalf("accepted a's new identity, old cluster nowhere: %s", s)
	}
	// Another member answers with a's identity while a, still registered, has not answered since
	// the hub started: not told apart from an impostor, the entry stays (a gone pipeline's
	// tombstone would otherwise be emptied on the impostor and the source freed).
	if s := states(followRenames(l, nil, map[string]string{"m2": "id-a", "b": "id-b"}, sets.New("a"), nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("m2 claims a's identity while a is unknown: %s", s)
	}
	// The documented rename: the new name registered beside the old one, both answering as one
	// cluster, the pipeline placed on the new name: the entry follows it (nothing is emptied).
	if s := states(followRenames(l, map[string]string{"a-new": "id-a", "b": "id-b"}, map[string]string{"a": "id-a", "a-new": "id-a", "b": "id-b"}, nil, nil)); s != "p@a-new=Active p@b=Active" {
		t.Fatalf("renamed a to a-new, both registered: %s", s)
	}
	// An old and a new entry for the same cluster become one, the more active.
	dup := leaseOf(selfP, entry(selfP, "a", urutauv1alpha1.LeaseMemberGone), entry(selfP, "a2", urutauv1alpha1.LeaseMemberDrained))
	dup.Spec.Members[1].ClusterID = "id-a"
	if s := states(followRenames(dup, map[string]string{"a2": "id-a"}, nil, nil, nil)); s != "p@a2=Drained" {
		t.Fatalf("merged: %s", s)
	}
}

func TestConfirmedGone(t *testing.T) {
	p := &urutauv1alpha1.CDCPipeline{}
	p.Annotations = map[string]string{urutauv1alpha1.AnnotationConfirmGone: " a, ,b "}
	if got := ConfirmedGone(p); !got.Equal(sets.New("a", "b")) {
		t.Fatalf("got %v", sets.List(got))
	}
}
