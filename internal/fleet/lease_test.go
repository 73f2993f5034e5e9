package fleet

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

var (
	t0     = metav1.Date(2026, 12, 1, 10, 0, 0, 0, metav1.Now().Location())
	src    = &urutauv1alpha1.SourceIdentity{Kind: "mysql", Field: "serverId", Value: "1101"}
	selfP  = urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders", UID: "uid-p"}
	otherQ = urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders-v2", UID: "uid-q"}
)

// entry is a lease entry of pipeline ref on member m (identity "id-"+m).
func entry(ref urutauv1alpha1.PipelineRef, m string, st urutauv1alpha1.LeaseMemberState) urutauv1alpha1.LeaseMember {
	return urutauv1alpha1.LeaseMember{Cluster: m, ClusterID: "id-" + m, PipelineUID: ref.UID, PipelineNamespace: ref.Namespace,
		PipelineName: ref.Name, Namespace: ref.Namespace, State: st, Since: t0}
}

func lease(holder urutauv1alpha1.PipelineRef, entries ...urutauv1alpha1.LeaseMember) *urutauv1alpha1.ReaderLease {
	l := &urutauv1alpha1.ReaderLease{Spec: urutauv1alpha1.ReaderLeaseSpec{Source: src.DeepCopy(), Holder: holder, Members: entries}}
	l.Name = LeaseName(src, holder.UID)
	return l
}

func targets(ms ...string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		out[m] = "id-" + m
	}
	return out
}

func observed(pairs ...any) map[entryKey]DepartedState {
	out := map[entryKey]DepartedState{}
	for i := 0; i < len(pairs); i += 2 {
		m := pairs[i].(string)
		out[entryKey{cluster: m, clusterID: "id-" + m, pipeline: selfP.UID}] = pairs[i+1].(DepartedState)
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

// TestPlanLease is the stop-before-start decision over every history shape the issue names.
func TestPlanLease(t *testing.T) {
	active, drained, gone := urutauv1alpha1.LeaseMemberActive, urutauv1alpha1.LeaseMemberDrained, urutauv1alpha1.LeaseMemberGone
	tests := []struct {
		name        string
		in          leaseInput
		wantRun     string
		wantWait    string
		wantEntries string
		wantChanged bool
		wantHolder  types.UID // another pipeline that holds the lease and keeps self out
		wantBlock   string    // members of the blocking entries
	}{
		{
			name:    "first placement: the lease is created with every target active",
			in:      leaseInput{Targets: targets("a", "b")},
			wantRun: "a b", wantEntries: "p@a=Active p@b=Active", wantChanged: true,
		},
		{
			name:    "placed nowhere: the pipeline still claims its source",
			in:      leaseInput{},
			wantRun: "", wantEntries: "", wantChanged: true,
		},
		{
			name:    "steady state: nothing to write",
			in:      leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("a")},
			wantRun: "a", wantEntries: "p@a=Active",
		},
		{
			name:    "add a member to a placement that keeps one: no wait",
			in:      leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("a", "b")},
			wantRun: "a b", wantEntries: "p@a=Active p@b=Active", wantChanged: true,
		},
		{
			name: "move a->b while a still holds a reader: b waits, nothing written",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", DepartedHolding)},
			wantWait: "b", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name:     "a departed member nobody observed still counts as a reader",
			in:       leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b")},
			wantWait: "b", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name: "move a->b once a's readers are gone (objects left): a drained, b starts",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", DepartedDraining)},
			wantRun: "b", wantEntries: "p@a=Drained p@b=Active", wantChanged: true,
		},
		{
			name: "move a->b once a is empty: a leaves the lease",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", DepartedEmpty)},
			wantRun: "b", wantEntries: "p@b=Active", wantChanged: true,
		},
		{
			name: "history 1: move back to a still draining while b runs: a waits for b",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", drained), entry(selfP, "b", active)), Targets: targets("a"),
				Observed: observed("b", DepartedHolding)},
			wantWait: "a", wantEntries: "p@a=Drained p@b=Active", wantBlock: "b",
		},
		{
			name: "history 1, later: b drained, a becomes active again",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", drained), entry(selfP, "b", active)), Targets: targets("a"),
				Observed: observed("b", DepartedDraining)},
			wantRun: "a", wantEntries: "p@a=Active p@b=Drained", wantChanged: true,
		},
		{
			name: "a departed member that does not answer holds the move",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", DepartedUnreachable)},
			wantWait: "b", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name: "confirmed gone while it does not answer: Gone, no longer a reader, b starts",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", DepartedUnreachable), Confirmed: sets.New("a")},
			wantRun: "b", wantEntries: "p@a=Gone p@b=Active", wantChanged: true,
		},
		{
			name: "a confirmation does not override a member that answers and holds",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", DepartedHolding), Confirmed: sets.New("a")},
			wantWait: "b", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name: "a Gone member that answers again and is emptied leaves the lease",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", gone), entry(selfP, "b", active)), Targets: targets("b"),
				Observed: observed("a", DepartedEmpty)},
			wantRun: "b", wantEntries: "p@b=Active", wantChanged: true,
		},
		{
			name: "members that stay are applied during a move",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active), entry(selfP, "c", active)), Targets: targets("b", "c"),
				Observed: observed("a", DepartedHolding)},
			wantRun: "c", wantWait: "b", wantEntries: "p@a=Active p@c=Active", wantBlock: "a",
		},
		{
			name:     "history 2/3: another live pipeline holds the source: run nowhere",
			in:       leaseInput{Current: lease(otherQ, entry(otherQ, "a", active)), Targets: targets("b")},
			wantWait: "b", wantEntries: "<none>", wantHolder: otherQ.UID, wantBlock: "a",
		},
		{
			name:     "another live pipeline holds the source even while placed nowhere",
			in:       leaseInput{Current: lease(otherQ), Targets: targets("b")},
			wantWait: "b", wantEntries: "<none>", wantHolder: otherQ.UID,
		},
		{
			name:     "history 2: the holder is deleted but its reader on a still runs: wait",
			in:       leaseInput{Current: lease(otherQ, entry(otherQ, "a", active)), HolderGone: true, Targets: targets("b")},
			wantWait: "b", wantEntries: "<none>", wantHolder: otherQ.UID, wantBlock: "a",
		},
		{
			name:    "history 2: the holder is gone and its readers stopped: take the lease over",
			in:      leaseInput{Current: lease(otherQ, entry(otherQ, "a", drained)), HolderGone: true, Targets: targets("b")},
			wantRun: "b", wantEntries: "q@a=Drained p@b=Active", wantChanged: true,
		},
		{
			name:    "an old pipeline's tombstone (Gone) does not hold a successor",
			in:      leaseInput{Current: lease(otherQ, entry(otherQ, "a", gone)), HolderGone: true, Targets: targets("a")},
			wantRun: "a", wantEntries: "p@a=Active q@a=Gone", wantChanged: true,
		},
		{
			name: "a re-created same-name pipeline (new UID) waits for the old one's reader",
			in: leaseInput{Current: lease(urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders", UID: "uid-old"},
				entry(urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders", UID: "uid-old"}, "a", active)), HolderGone: true, Targets: targets("a")},
			wantWait: "a", wantEntries: "<none>", wantHolder: "uid-old", wantBlock: "a",
		},
		{
			name: "a member whose identity changed: the old entry departs and holds the start on the new one",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: map[string]string{"a": "id-new"},
				Observed: observed("a", DepartedUnreachable)},
			wantWait: "a", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name: "the new identity accepted (a confirmed): the old entry is Gone, the new cluster starts",
			in: leaseInput{Current: lease(selfP, entry(selfP, "a", active)), Targets: map[string]string{"a": "id-new"},
				Observed: observed("a", DepartedUnreachable), Confirmed: sets.New("a")},
			wantRun: "a", wantEntries: "p@a=Gone p@a=Active", wantChanged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Self, in.Namespace, in.Source, in.Now = selfP, selfP.Namespace, src, t0
			if in.Confirmed == nil {
				in.Confirmed = sets.New[string]()
			}
			d := planLease(in)
			if got := strings.Join(d.Run, " "); got != tt.wantRun {
				t.Errorf("Run = %q, want %q", got, tt.wantRun)
			}
			if got := strings.Join(d.Wait, " "); got != tt.wantWait {
				t.Errorf("Wait = %q, want %q", got, tt.wantWait)
			}
			if got := states(d.Lease); got != tt.wantEntries {
				t.Errorf("entries = %q, want %q", got, tt.wantEntries)
			}
			if d.Changed != tt.wantChanged {
				t.Errorf("Changed = %v, want %v", d.Changed, tt.wantChanged)
			}
			var holder types.UID
			if d.Holder != nil {
				holder = d.Holder.UID
			}
			if holder != tt.wantHolder {
				t.Errorf("Holder = %q, want %q", holder, tt.wantHolder)
			}
			var block []string
			for _, e := range d.Blocking {
				block = append(block, e.Cluster)
			}
			if got := strings.Join(block, " "); got != tt.wantBlock {
				t.Errorf("Blocking = %q, want %q", got, tt.wantBlock)
			}
			if d.Lease != nil && d.Lease.Spec.Holder.UID != selfP.UID {
				t.Errorf("a lease to write is held by %q, not self", d.Lease.Spec.Holder.UID)
			}
		})
	}
}

// A new entry records who and where; a state change records when.
func TestPlanLeaseRecordsEntries(t *testing.T) {
	d := planLease(leaseInput{Self: selfP, Namespace: "member-ns", Source: src, Targets: targets("a"), Now: t0, Confirmed: sets.New[string]()})
	want := urutauv1alpha1.LeaseMember{Cluster: "a", ClusterID: "id-a", PipelineUID: selfP.UID, PipelineNamespace: "shop",
		PipelineName: "orders", Namespace: "member-ns", State: urutauv1alpha1.LeaseMemberActive, Since: t0}
	if len(d.Lease.Spec.Members) != 1 || d.Lease.Spec.Members[0] != want {
		t.Fatalf("entries = %+v, want [%+v]", d.Lease.Spec.Members, want)
	}
	if d.Lease.Name != LeaseName(src, selfP.UID) || d.Lease.Spec.Source.Value != "1101" {
		t.Fatalf("lease = %s %+v", d.Lease.Name, d.Lease.Spec.Source)
	}
}

func TestPlanRelease(t *testing.T) {
	active, drained := urutauv1alpha1.LeaseMemberActive, urutauv1alpha1.LeaseMemberDrained
	tests := []struct {
		name        string
		in          releaseInput
		wantEntries string
		wantDone    bool
		wantDelete  bool
		wantChanged bool
	}{
		{
			name:     "nothing recorded: done",
			in:       releaseInput{},
			wantDone: true, wantEntries: "<none>",
		},
		{
			name:     "every member emptied: the lease goes",
			in:       releaseInput{Current: lease(selfP, entry(selfP, "a", active)), Observed: observed("a", DepartedEmpty)},
			wantDone: true, wantDelete: true, wantEntries: "<none>",
		},
		{
			name:        "a member draining: its entry stops counting as a reader",
			in:          releaseInput{Current: lease(selfP, entry(selfP, "a", active), entry(selfP, "b", active)), Observed: observed("a", DepartedEmpty, "b", DepartedDraining)},
			wantEntries: "p@b=Drained", wantChanged: true,
		},
		{
			name:        "a member that does not answer within the grace stays as a tombstone",
			in:          releaseInput{Current: lease(selfP, entry(selfP, "a", active)), Observed: observed("a", DepartedUnreachable), Expired: true, Reason: "deleted"},
			wantEntries: "p@a=Active", wantDone: true, wantChanged: true,
		},
		{
			name:        "another pipeline's entries are left alone, and so is the lease",
			in:          releaseInput{Current: lease(otherQ, entry(otherQ, "b", active), entry(selfP, "a", drained)), Observed: observed("a", DepartedEmpty)},
			wantEntries: "q@b=Active", wantDone: true, wantChanged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Self, in.Now = selfP.UID, t0
			d := planRelease(in)
			if got := states(d.Lease); got != tt.wantEntries {
				t.Errorf("entries = %q, want %q", got, tt.wantEntries)
			}
			if d.Done != tt.wantDone || d.Delete != tt.wantDelete || d.Changed != tt.wantChanged {
				t.Errorf("done/delete/changed = %v/%v/%v, want %v/%v/%v", d.Done, d.Delete, d.Changed, tt.wantDone, tt.wantDelete, tt.wantChanged)
			}
			if in.Expired && d.Lease != nil {
				for _, e := range d.Lease.Spec.Members {
					if e.PipelineUID == selfP.UID && e.Reason != "deleted" {
						t.Errorf("tombstone entry without its reason: %+v", e)
					}
				}
			}
		})
	}
}

func TestLeaseName(t *testing.T) {
	a := LeaseName(&urutauv1alpha1.SourceIdentity{Kind: "mysql", Field: "serverId", Value: "1101"}, "x")
	b := LeaseName(&urutauv1alpha1.SourceIdentity{Kind: "mysql", Field: "serverId", Value: "1101"}, "y")
	c := LeaseName(&urutauv1alpha1.SourceIdentity{Kind: "postgres", Field: "slotName", Value: "1101"}, "x")
	if a != b {
		t.Errorf("one identity, two names: %s %s", a, b)
	}
	if a == c || !strings.HasPrefix(a, "mysql-1101-") || !strings.HasPrefix(c, "postgres-1101-") {
		t.Errorf("names %s, %s", a, c)
	}
	odd := LeaseName(&urutauv1alpha1.SourceIdentity{Kind: "postgres", Field: "slotName", Value: "Weird Slot/ÄÖ" + strings.Repeat("x", 300)}, "x")
	if len(odd) > 63 || strings.ContainsAny(odd, " /ÄÖ") {
		t.Errorf("name not a DNS label: %q", odd)
	}
	if got := LeaseName(nil, "ABC-123"); got != "pipeline-abc-123" {
		t.Errorf("no identity: %q", got)
	}
}

// followRenames moves an entry to the name its cluster is registered under now.
func TestFollowRenames(t *testing.T) {
	l := lease(selfP, entry(selfP, "a", urutauv1alpha1.LeaseMemberActive), entry(selfP, "b", urutauv1alpha1.LeaseMemberActive))
	if got := followRenames(l, nil, map[string]string{"a": "id-a", "b": "id-b"}, nil); got != l {
		t.Fatal("nothing renamed, yet a copy was returned")
	}
	// A live pipeline follows its cluster only to a member it is placed on.
	if s := states(followRenames(l, map[string]string{"b": "id-b"}, map[string]string{"a2": "id-a", "b": "id-b"}, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("a live pipeline's entry moved to a member it is not placed on: %s", s)
	}
	got := followRenames(l, nil, map[string]string{"a2": "id-a", "b": "id-b"}, nil)
	if s := states(got); s != "p@a2=Active p@b=Active" {
		t.Fatalf("after renaming a to a2: %s", s)
	}
	if states(l) != "p@a=Active p@b=Active" {
		t.Fatal("followRenames changed its input")
	}
	// The old name now points at another cluster: the entry is not moved to it.
	if s := states(followRenames(l, nil, map[string]string{"a": "id-other", "b": "id-b"}, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("repointed a: %s", s)
	}
	// Two names for one cluster: ambiguous, the entry stays; unless the pipeline targets one.
	two := map[string]string{"x": "id-a", "y": "id-a", "b": "id-b"}
	if s := states(followRenames(l, nil, two, nil)); s != "p@a=Active p@b=Active" {
		t.Fatalf("two names for a's cluster, no target: %s", s)
	}
	if s := states(followRenames(l, map[string]string{"y": "id-a"}, two, nil)); s != "p@y=Active p@b=Active" {
		t.Fatalf("two names for a's cluster, y targeted: %s", s)
	}
	// A person accepted a new cluster under the name a, and a's old cluster answers as c: a live
	// pipeline's entry of the old cluster follows it there, to be emptied (it is not "gone").
	accepted := sets.New("a")
	if s := states(followRenames(l, map[string]string{"a": "id-new", "b": "id-b"}, map[string]string{"a": "id-new", "b": "id-b", "c": "id-a"}, accepted)); s != "p@c=Active p@b=Active" {
		t.Fatalf("accepted a's new identity while its old cluster answers as c: %s", s)
	}
	// Not registered anywhere else: the entry stays, and the acceptance confirms it gone.
	if s := states(followRenames(l, map[string]string{"a": "id-new", "b": "id-b"}, map[string]string{"a": "id-new", "b": "id-b"}, accepted)); s != "p@a=Active p@b=Active" {
		t.Fatalf("accepted a's new identity, old cluster nowhere: %s", s)
	}
	// An old and a new entry for the same cluster become one, the more active.
	dup := lease(selfP, entry(selfP, "a", urutauv1alpha1.LeaseMemberGone), entry(selfP, "a2", urutauv1alpha1.LeaseMemberDrained))
	dup.Spec.Members[1].ClusterID = "id-a"
	if s := states(followRenames(dup, map[string]string{"a2": "id-a"}, nil, nil)); s != "p@a2=Drained" {
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
