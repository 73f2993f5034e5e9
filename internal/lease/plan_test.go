package lease

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
	l.Name = Name(src, holder.UID)
	return l
}

func targets(ms ...string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		out[m] = "id-" + m
	}
	return out
}

func observed(pairs ...any) map[Key]State {
	out := map[Key]State{}
	for i := 0; i < len(pairs); i += 2 {
		m := pairs[i].(string)
		out[Key{Cluster: m, ClusterID: "id-" + m, Pipeline: selfP.UID}] = pairs[i+1].(State)
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
		in          Input
		wantRun     string
		wantWait    string
		wantEntries string
		wantChanged bool
		wantHolder  types.UID // another pipeline that holds the lease and keeps self out
		wantBlock   string    // members of the blocking entries
	}{
		{
			name:    "first placement: the lease is created with every target active",
			in:      Input{Targets: targets("a", "b")},
			wantRun: "a b", wantEntries: "p@a=Active p@b=Active", wantChanged: true,
		},
		{
			name:    "placed nowhere: the pipeline still claims its source",
			in:      Input{},
			wantRun: "", wantEntries: "", wantChanged: true,
		},
		{
			name:    "steady state: nothing to write",
			in:      Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("a")},
			wantRun: "a", wantEntries: "p@a=Active",
		},
		{
			name:    "add a member to a placement that keeps one: no wait",
			in:      Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("a", "b")},
			wantRun: "a b", wantEntries: "p@a=Active p@b=Active", wantChanged: true,
		},
		{
			name: "move a->b while a still holds a reader: b waits, nothing written",
			in: Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", Holding)},
			wantWait: "b", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name:     "a departed member nobody observed still counts as a reader",
			in:       Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b")},
			wantWait: "b", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name: "move a->b once a's readers are gone (objects left): a drained, b starts",
			in: Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", Draining)},
			wantRun: "b", wantEntries: "p@a=Drained p@b=Active", wantChanged: true,
		},
		{
			name: "move a->b once a is empty: a leaves the lease",
			in: Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", Empty)},
			wantRun: "b", wantEntries: "p@b=Active", wantChanged: true,
		},
		{
			name: "history 1: move back to a still draining while b runs: a waits for b",
			in: Input{Current: lease(selfP, entry(selfP, "a", drained), entry(selfP, "b", active)), Targets: targets("a"),
				Observed: observed("b", Holding)},
			wantWait: "a", wantEntries: "p@a=Drained p@b=Active", wantBlock: "b",
		},
		{
			name: "history 1, later: b drained, a becomes active again",
			in: Input{Current: lease(selfP, entry(selfP, "a", drained), entry(selfP, "b", active)), Targets: targets("a"),
				Observed: observed("b", Draining)},
			wantRun: "a", wantEntries: "p@a=Active p@b=Drained", wantChanged: true,
		},
		{
			name: "a departed member that does not answer holds the move",
			in: Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", Unreachable)},
			wantWait: "b", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name: "confirmed gone while it does not answer: Gone, no longer a reader, b starts",
			in: Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", Unreachable), Confirmed: sets.New("a")},
			wantRun: "b", wantEntries: "p@a=Gone p@b=Active", wantChanged: true,
		},
		{
			name: "a confirmation does not override a member that answers and holds",
			in: Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: targets("b"),
				Observed: observed("a", Holding), Confirmed: sets.New("a")},
			wantWait: "b", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name: "a Gone member that answers again and is emptied leaves the lease",
			in: Input{Current: lease(selfP, entry(selfP, "a", gone), entry(selfP, "b", active)), Targets: targets("b"),
				Observed: observed("a", Empty)},
			wantRun: "b", wantEntries: "p@b=Active", wantChanged: true,
		},
		{
			name: "members that stay are applied during a move",
			in: Input{Current: lease(selfP, entry(selfP, "a", active), entry(selfP, "c", active)), Targets: targets("b", "c"),
				Observed: observed("a", Holding)},
			wantRun: "c", wantWait: "b", wantEntries: "p@a=Active p@c=Active", wantBlock: "a",
		},
		{
			name:     "history 2/3: another live pipeline holds the source: run nowhere",
			in:       Input{Current: lease(otherQ, entry(otherQ, "a", active)), Targets: targets("b")},
			wantWait: "b", wantEntries: "<none>", wantHolder: otherQ.UID, wantBlock: "a",
		},
		{
			name:     "another live pipeline holds the source even while placed nowhere",
			in:       Input{Current: lease(otherQ), Targets: targets("b")},
			wantWait: "b", wantEntries: "<none>", wantHolder: otherQ.UID,
		},
		{
			name:     "history 2: the holder is deleted but its reader on a still runs: wait",
			in:       Input{Current: lease(otherQ, entry(otherQ, "a", active)), HolderGone: true, Targets: targets("b")},
			wantWait: "b", wantEntries: "<none>", wantHolder: otherQ.UID, wantBlock: "a",
		},
		{
			name:    "history 2: the holder is gone and its readers stopped: take the lease over",
			in:      Input{Current: lease(otherQ, entry(otherQ, "a", drained)), HolderGone: true, Targets: targets("b")},
			wantRun: "b", wantEntries: "q@a=Drained p@b=Active", wantChanged: true,
		},
		{
			name:    "an old pipeline's tombstone (Gone) does not hold a successor",
			in:      Input{Current: lease(otherQ, entry(otherQ, "a", gone)), HolderGone: true, Targets: targets("a")},
			wantRun: "a", wantEntries: "p@a=Active q@a=Gone", wantChanged: true,
		},
		{
			name: "a re-created same-name pipeline (new UID) waits for the old one's reader",
			in: Input{Current: lease(urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders", UID: "uid-old"},
				entry(urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders", UID: "uid-old"}, "a", active)), HolderGone: true, Targets: targets("a")},
			wantWait: "a", wantEntries: "<none>", wantHolder: "uid-old", wantBlock: "a",
		},
		{
			name: "a member whose identity changed: the old entry departs and holds the start on the new one",
			in: Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: map[string]string{"a": "id-new"},
				Observed: observed("a", Unreachable)},
			wantWait: "a", wantEntries: "p@a=Active", wantBlock: "a",
		},
		{
			name: "the new identity accepted (a confirmed): the old entry is Gone, the new cluster starts",
			in: Input{Current: lease(selfP, entry(selfP, "a", active)), Targets: map[string]string{"a": "id-new"},
				Observed: observed("a", Unreachable), Confirmed: sets.New("a")},
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
			d := Plan(in)
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
	d := Plan(Input{Self: selfP, Namespace: "member-ns", Source: src, Targets: targets("a"), Now: t0, Confirmed: sets.New[string]()})
	want := urutauv1alpha1.LeaseMember{Cluster: "a", ClusterID: "id-a", PipelineUID: selfP.UID, PipelineNamespace: "shop",
		PipelineName: "orders", Namespace: "member-ns", State: urutauv1alpha1.LeaseMemberActive, Since: t0}
	if len(d.Lease.Spec.Members) != 1 || d.Lease.Spec.Members[0] != want {
		t.Fatalf("entries = %+v, want [%+v]", d.Lease.Spec.Members, want)
	}
	if d.Lease.Name != Name(src, selfP.UID) || d.Lease.Spec.Source.Value != "1101" {
		t.Fatalf("lease = %s %+v", d.Lease.Name, d.Lease.Spec.Source)
	}
}

func TestPlanRelease(t *testing.T) {
	active, drained := urutauv1alpha1.LeaseMemberActive, urutauv1alpha1.LeaseMemberDrained
	tests := []struct {
		name        string
		in          ReleaseInput
		wantEntries string
		wantDone    bool
		wantDelete  bool
		wantChanged bool
	}{
		{
			name:     "nothing recorded: done",
			in:       ReleaseInput{},
			wantDone: true, wantEntries: "<none>",
		},
		{
			name:     "every member emptied: the lease goes",
			in:       ReleaseInput{Current: lease(selfP, entry(selfP, "a", active)), Observed: observed("a", Empty)},
			wantDone: true, wantDelete: true, wantEntries: "<none>",
		},
		{
			name:        "a member draining: its entry stops counting as a reader",
			in:          ReleaseInput{Current: lease(selfP, entry(selfP, "a", active), entry(selfP, "b", active)), Observed: observed("a", Empty, "b", Draining)},
			wantEntries: "p@b=Drained", wantChanged: true,
		},
		{
			name:        "a member that does not answer within the grace stays as a tombstone",
			in:          ReleaseInput{Current: lease(selfP, entry(selfP, "a", active)), Observed: observed("a", Unreachable), Expired: true, Reason: "deleted"},
			wantEntries: "p@a=Active", wantDone: true, wantChanged: true,
		},
		{
			name:        "another pipeline's entries are left alone, and so is the lease",
			in:          ReleaseInput{Current: lease(otherQ, entry(otherQ, "b", active), entry(selfP, "a", drained)), Observed: observed("a", Empty)},
			wantEntries: "q@b=Active", wantDone: true, wantChanged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Self, in.Now = selfP.UID, t0
			d := PlanRelease(in)
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
	a := Name(&urutauv1alpha1.SourceIdentity{Kind: "mysql", Field: "serverId", Value: "1101"}, "x")
	b := Name(&urutauv1alpha1.SourceIdentity{Kind: "mysql", Field: "serverId", Value: "1101"}, "y")
	c := Name(&urutauv1alpha1.SourceIdentity{Kind: "postgres", Field: "slotName", Value: "1101"}, "x")
	if a != b {
		t.Errorf("one identity, two names: %s %s", a, b)
	}
	if a == c || !strings.HasPrefix(a, "mysql-1101-") || !strings.HasPrefix(c, "postgres-1101-") {
		t.Errorf("names %s, %s", a, c)
	}
	odd := Name(&urutauv1alpha1.SourceIdentity{Kind: "postgres", Field: "slotName", Value: "Weird Slot/ÄÖ" + strings.Repeat("x", 300)}, "x")
	if len(odd) > 63 || strings.ContainsAny(odd, " /ÄÖ") {
		t.Errorf("name not a DNS label: %q", odd)
	}
	if got := Name(nil, "ABC-123"); got != "pipeline-abc-123" {
		t.Errorf("no identity: %q", got)
	}
}

// The fence in the lease: recorded on the entries a fenced placement runs on, verified when the
// entry starts now, no longer renewing on a member left, and a departed entry whose bound passed
// turns Gone although its member never answered.
func TestPlanLeaseFence(t *testing.T) {
	active := urutauv1alpha1.LeaseMemberActive
	fence := &urutauv1alpha1.LeaseMemberFence{BoundSeconds: 45}
	fenced := func(e urutauv1alpha1.LeaseMember, verified, renewing bool) urutauv1alpha1.LeaseMember {
		e.Fence = &urutauv1alpha1.LeaseMemberFence{BoundSeconds: 60, Verified: verified, Renewing: renewing}
		return e
	}
	keyA := Key{Cluster: "a", ClusterID: "id-a", Pipeline: selfP.UID}

	t.Run("a new entry is verified and renewing", func(t *testing.T) {
		d := Plan(Input{Self: selfP, Namespace: "shop", Source: src, Targets: targets("a"), Fence: fence, Now: t0})
		e := d.Lease.Spec.Members[0]
		if e.Fence == nil || !e.Fence.Verified || !e.Fence.Renewing || e.Fence.BoundSeconds != 45 {
			t.Fatalf("fence %+v", e.Fence)
		}
	})
	t.Run("an entry running unfenced is not verified until its pods are", func(t *testing.T) {
		cur := lease(selfP, entry(selfP, "a", active))
		d := Plan(Input{Self: selfP, Namespace: "shop", Source: src, Current: cur, Targets: targets("a"), Fence: fence, Now: t0})
		if f := d.Lease.Spec.Members[0].Fence; f == nil || f.Verified || !d.Changed {
			t.Fatalf("fence %+v, changed %v", f, d.Changed)
		}
		d = Plan(Input{Self: selfP, Namespace: "shop", Source: src, Current: cur, Targets: targets("a"), Fence: fence, FenceVerified: sets.New("a"), Now: t0})
		if f := d.Lease.Spec.Members[0].Fence; f == nil || !f.Verified {
			t.Fatalf("fence %+v after the pods were found fenced", f)
		}
	})
	t.Run("the bound never shrinks while the entry runs", func(t *testing.T) {
		cur := lease(selfP, fenced(entry(selfP, "a", active), true, true))
		d := Plan(Input{Self: selfP, Namespace: "shop", Source: src, Current: cur, Targets: targets("a"), Fence: fence, Now: t0})
		if f := d.Lease.Spec.Members[0].Fence; f.BoundSeconds != 60 || d.Changed {
			t.Fatalf("fence %+v, changed %v", f, d.Changed)
		}
	})
	t.Run("unfenced again: the fence goes from the entries it runs on", func(t *testing.T) {
		cur := lease(selfP, fenced(entry(selfP, "a", active), true, true))
		d := Plan(Input{Self: selfP, Namespace: "shop", Source: src, Current: cur, Targets: targets("a"), Now: t0})
		if f := d.Lease.Spec.Members[0].Fence; f != nil {
			t.Fatalf("fence %+v", f)
		}
	})
	t.Run("moving away from an unreachable member: waits, then the bound completes it", func(t *testing.T) {
		cur := lease(selfP, fenced(entry(selfP, "a", active), true, true))
		in := Input{Self: selfP, Namespace: "shop", Source: src, Current: cur, Targets: targets("b"), Fence: fence,
			Observed: observed("a", Unreachable), Now: t0}
		d := Plan(in)
		if d.Wait == nil || d.Run != nil || states(d.Lease) != "p@a=Active" || d.Lease.Spec.Members[0].Fence.Renewing {
			t.Fatalf("before the bound: run %v wait %v entries %s fence %+v", d.Run, d.Wait, states(d.Lease), d.Lease.Spec.Members[0].Fence)
		}
		in.FenceDrained = map[Key]string{keyA: "fenced: bound passed"}
		d = Plan(in)
		if strings.Join(d.Run, " ") != "b" || strings.Join(d.Fenced, " ") != "a" || states(d.Lease) != "p@a=Gone p@b=Active" {
			t.Fatalf("after the bound: run %v fenced %v entries %s", d.Run, d.Fenced, states(d.Lease))
		}
		if d.Lease.Spec.Members[0].Reason != "fenced: bound passed" {
			t.Fatalf("reason %q", d.Lease.Spec.Members[0].Reason)
		}
	})
	t.Run("an unverified fence does not complete a move by itself", func(t *testing.T) {
		cur := lease(selfP, fenced(entry(selfP, "a", active), false, true))
		// fencelease.Hub.Prepare gives no FenceDrained for an unverified entry; Plan keeps waiting.
		d := Plan(Input{Self: selfP, Namespace: "shop", Source: src, Current: cur, Targets: targets("b"), Fence: fence,
			Observed: observed("a", Unreachable), Now: t0})
		if d.Run != nil || states(d.Lease) != "p@a=Active" {
			t.Fatalf("run %v entries %s", d.Run, states(d.Lease))
		}
	})
}
