package chaos

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sec is a stamp in seconds, for readable synthetic recordings.
func sec(s float64) Stamp { return Stamp(s * float64(time.Second)) }

// rb builds a synthetic recording.
type rb struct{ rec Recording }

func newRB() *rb {
	return &rb{rec: Recording{Namespace: "chaos-0", Settled: sec(100),
		Bounds: Bounds{TombstoneGrace: 10 * time.Second, MemberTimeout: 3 * time.Second, DeleteSlack: 18 * time.Second,
			StopBound: 30 * time.Second, RepointBound: 18 * time.Second, MemberRecover: 60 * time.Second}}}
}

func (b *rb) sample(cluster string, start float64, rv int64, present ...string) *rb {
	b.rec.Samples = append(b.rec.Samples, Sample{Cluster: cluster, Kind: kindPods, Start: sec(start), End: sec(start + 0.1), RV: rv, Present: present})
	return b
}

func (b *rb) hubSample(start float64, rv int64) *rb {
	b.rec.Samples = append(b.rec.Samples, Sample{Cluster: hubCluster, Kind: kindPipelines, Start: sec(start), End: sec(start + 0.1), RV: rv})
	return b
}

// pipeline records the hub's ADDED event of a pipeline with its identity.
func (b *rb) pipeline(uid, name, identity string, rv int64, recv float64) *rb {
	b.rec.Events = append(b.rec.Events, Event{Cluster: hubCluster, Kind: kindPipelines, Type: Added, Recv: sec(recv), RVLo: rv, RVHi: rv,
		Obj: ObjInfo{UID: uid, Name: name, RV: rv, Pipeline: &PipelineInfo{Identity: identity}}})
	return b
}

func (b *rb) sts(cluster, uid, pipelineUID string) *rb {
	b.rec.Events = append(b.rec.Events, Event{Cluster: cluster, Kind: "statefulsets", Type: Added, RVLo: 1, RVHi: 1,
		Obj: ObjInfo{UID: uid, PipelineUID: pipelineUID, Name: "sts"}})
	return b
}

func (b *rb) pod(cluster, typ, uid, owner string, rv int64, recv float64, deleting bool) *rb {
	b.rec.Events = append(b.rec.Events, Event{Cluster: cluster, Kind: kindPods, Type: typ, Recv: sec(recv), RVLo: rv, RVHi: rv,
		Obj: ObjInfo{UID: uid, Name: uid, RV: rv, Owner: owner, Deleting: deleting, Phase: "Running"}})
	return b
}

func (b *rb) op(o Op, start, end float64, refs ...PipelineRef) *rb {
	b.rec.Ops = append(b.rec.Ops, OpRecord{Index: len(b.rec.Ops), Op: o, Start: sec(start), End: sec(end), Pipelines: refs,
		HubsBefore: [2]bool{true, false}, HubsAfter: [2]bool{true, false}})
	return b
}

// twoPipelines: p1 (u1) on member-a and p2 (u2) on member-b, one identity, a pod each.
func twoPipelines() *rb {
	return newRB().
		pipeline("u1", "p1", "mysql:1", 5, 0.5).pipeline("u2", "p2", "mysql:1", 6, 0.6).
		op(Create{Name: "p1", Placement: []string{"member-a"}}, 0.4, 0.45, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
		op(Create{Name: "p2", Placement: []string{"member-b"}}, 0.5, 0.55, PipelineRef{Name: "p2", UID: "u2", Placement: []string{"member-b"}}).
		sts("member-a", "sa", "u1").sts("member-b", "sb", "u2").
		sample("member-a", 0.9, 9).pod("member-a", Added, "pa", "sa", 10, 1.0, false).sample("member-a", 2.0, 12, "pa").
		sample("member-b", 2.9, 99)
}

func invariants(res Result) []string {
	var out []string
	for _, v := range res.Violations {
		out = append(out, v.Invariant)
	}
	return out
}

func TestCheckOneReader(t *testing.T) {
	for name, tc := range map[string]struct {
		build     func() *rb
		want      []string
		wantNotes int
	}{
		"two pipelines' pods surely overlap": {
			build: func() *rb {
				return twoPipelines().sample("member-a", 5.0, 20, "pa").
					pod("member-b", Added, "pb", "sb", 100, 3.0, false).sample("member-b", 3.5, 101, "pb").sample("member-b", 6.0, 105, "pb")
			},
			want: []string{InvOneReader},
		},
		"a terminating pod is a reader": {
			build: func() *rb {
				return twoPipelines().pod("member-a", Modified, "pa", "sa", 15, 2.4, true).sample("member-a", 4.0, 25, "pa").
					pod("member-b", Added, "pb", "sb", 100, 3.0, false).sample("member-b", 3.5, 101, "pb")
			},
			want: []string{InvOneReader},
		},
		"the first deleted before the second started": {
			build: func() *rb {
				return twoPipelines().pod("member-a", Deleted, "pa", "sa", 30, 2.5, false).
					pod("member-b", Added, "pb", "sb", 100, 3.0, false).sample("member-b", 3.5, 101, "pb")
			},
		},
		"a late deletion event leaves an overlap possible, not proven": {
			build: func() *rb {
				return twoPipelines().pod("member-a", Deleted, "pa", "sa", 30, 3.5, false).
					pod("member-b", Added, "pb", "sb", 100, 3.1, false).sample("member-b", 3.6, 101, "pb")
			},
			wantNotes: 1,
		},
		"the old member confirmed gone by a person": {
			build: func() *rb {
				return twoPipelines().sample("member-a", 5.0, 20, "pa").
					op(Place{Name: "p1", Placement: []string{}, ConfirmGone: []string{"member-a"}}, 1.9, 2.0,
						PipelineRef{Name: "p1", UID: "u1", Placement: []string{}, SpecChanged: true, ConfirmGone: []string{"member-a"}}).
					pod("member-b", Added, "pb", "sb", 100, 3.0, false).sample("member-b", 3.5, 101, "pb")
			},
		},
		"a pod created after the confirmation is not excused": {
			build: func() *rb {
				return twoPipelines().sample("member-a", 5.0, 20, "pa").
					op(Place{Name: "p1", Placement: []string{}, ConfirmGone: []string{"member-a"}}, 0.6, 0.7,
						PipelineRef{Name: "p1", UID: "u1", Placement: []string{}, SpecChanged: true, ConfirmGone: []string{"member-a"}}).
					pod("member-b", Added, "pb", "sb", 100, 3.0, false).sample("member-b", 3.5, 101, "pb")
			},
			want: []string{InvOneReader},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.build()
			res := Check(&b.rec)
			if got := invariants(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("violations %v, want %v\n%s", got, tc.want, Report(&b.rec, res))
			}
			if len(res.Notes) != tc.wantNotes {
				t.Fatalf("%d notes, want %d: %v", len(res.Notes), tc.wantNotes, res.Notes)
			}
		})
	}
}

func TestPodLifeBounds(t *testing.T) {
	b := twoPipelines().sample("member-a", 5.0, 20, "pa").sample("member-a", 6.0, 31).pod("member-a", Deleted, "pa", "sa", 30, 6.5, false)
	clocks := newClocks(b.rec.Samples, b.rec.Events)
	lives := podLives(&b.rec, clocks, ownerPipelines(&b.rec), nil)
	if len(lives) != 1 {
		t.Fatalf("%d lives, want 1", len(lives))
	}
	p := lives[0]
	// created at revision 10: after the poll at 0.9 (revision 9), seen by 1.0; deleted at 30:
	// after the poll at 5.0 (revision 20), known by 6.1 (the poll at 6.0 answered 31).
	if p.Sure != (span{sec(1.0), sec(5.0)}) || p.Maybe != (span{sec(0.9), sec(6.1)}) || p.Pipeline != "u1" {
		t.Fatalf("life %s (pipeline %s), want surely [1.0, 5.0], possibly [0.9, 6.1], pipeline u1", p, p.Pipeline)
	}
}

func TestObligations(t *testing.T) {
	ch := func(op int, from, to float64, ms ...string) placementChange {
		return placementChange{Op: op, At: span{sec(from), sec(to)}, Members: ms}
	}
	ob := func(w, d string, from, to float64, op int) obligation {
		end := forever
		if to >= 0 {
			end = sec(to)
		}
		return obligation{Pipeline: "u", Waiter: w, Departed: d, In: span{sec(from), end}, Op: op}
	}
	for name, tc := range map[string]struct {
		changes []placementChange
		deleted float64
		want    []obligation
	}{
		"a move waits for the member it leaves": {
			changes: []placementChange{ch(0, 0, 1, "a"), ch(1, 10, 11, "b")},
			want:    []obligation{ob("b", "a", 11, -1, 1)},
		},
		"adding beside a running member needs no wait": {
			changes: []placementChange{ch(0, 0, 1, "a"), ch(1, 10, 11, "a", "b")},
		},
		"a swap that keeps a member needs no wait": {
			changes: []placementChange{ch(0, 0, 1, "a", "b"), ch(1, 10, 11, "b", "c")},
		},
		"a move through an empty placement still waits": {
			changes: []placementChange{ch(0, 0, 1, "a"), ch(1, 5, 6), ch(2, 10, 11, "b")},
			want:    []obligation{ob("b", "a", 11, -1, 2)},
		},
		"a flap back waits for the member it leaves and lifts the first wait": {
			changes: []placementChange{ch(0, 0, 1, "a"), ch(1, 10, 11, "b"), ch(2, 20, 21, "a")},
			want:    []obligation{ob("b", "a", 11, 20, 1), ob("a", "b", 21, -1, 2)},
		},
		"a wait carries over an add beside the waiter": {
			changes: []placementChange{ch(0, 0, 1, "a"), ch(1, 10, 11, "b"), ch(2, 20, 21, "b", "c")},
			want:    []obligation{ob("b", "a", 11, -1, 1)},
		},
		"a move from two members waits for both": {
			changes: []placementChange{ch(0, 0, 1, "a", "b"), ch(1, 10, 11, "c")},
			want:    []obligation{ob("c", "a", 11, -1, 1), ob("c", "b", 11, -1, 1)},
		},
		"deletion ends the wait": {
			changes: []placementChange{ch(0, 0, 1, "a"), ch(1, 10, 11, "b")},
			deleted: 30,
			want:    []obligation{ob("b", "a", 11, 30, 1)},
		},
		"an earlier departure still drains when the next move comes": {
			changes: []placementChange{ch(0, 0, 1, "a", "b"), ch(1, 10, 11, "b"), ch(2, 20, 21, "c")},
			want:    []obligation{ob("c", "a", 21, -1, 2), ob("c", "b", 21, -1, 2)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := &pipelineFacts{UID: "u", Placements: tc.changes}
			if tc.deleted > 0 {
				f.DeleteOp = &OpRecord{Start: sec(tc.deleted)}
			}
			if got := obligations(f); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("obligations\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCheckStopFirstAndStray(t *testing.T) {
	base := func() *rb {
		return newRB().pipeline("u1", "p1", "mysql:1", 5, 0.5).
			op(Create{Name: "p1"}, 0.4, 0.45, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
			sts("member-a", "sa", "u1").sts("member-b", "sb", "u1").sts("member-c", "sc", "u1").
			sample("member-a", 0.9, 9).pod("member-a", Added, "pa", "sa", 10, 1.0, false).sample("member-a", 2.0, 12, "pa").
			op(Place{Name: "p1"}, 2.5, 2.6, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-b"}, SpecChanged: true}).
			sample("member-b", 2.9, 99)
	}
	t.Run("the new member starts while the old one still has a pod", func(t *testing.T) {
		b := base().sample("member-a", 5.0, 20, "pa").pod("member-b", Added, "pb", "sb", 100, 3.0, false).sample("member-b", 3.5, 101, "pb")
		res := Check(&b.rec)
		if got := invariants(res); !reflect.DeepEqual(got, []string{InvStopFirst}) {
			t.Fatalf("violations %v, want [%s]\n%s", got, InvStopFirst, Report(&b.rec, res))
		}
		if !strings.Contains(res.Violations[0].Summary, "member-b") || !strings.Contains(res.Violations[0].Summary, "member-a") {
			t.Fatalf("the violation does not name both members: %s", res.Violations[0])
		}
	})
	t.Run("the new member starts after the old one emptied", func(t *testing.T) {
		b := base().pod("member-a", Deleted, "pa", "sa", 30, 2.8, false).sample("member-a", 2.9, 31).
			pod("member-b", Added, "pb", "sb", 100, 3.0, false).sample("member-b", 3.5, 101, "pb")
		if res := Check(&b.rec); res.Failed() {
			t.Fatalf("unexpected violations:\n%s", Report(&b.rec, res))
		}
	})
	// p1 runs on a and b, leaves b (which does not answer, so keeps its reader), and moves from a
	// back to b: the move started neither reader, both ran before it.
	coPlaced := func() *rb {
		return newRB().pipeline("u1", "p1", "mysql:1", 5, 0.5).
			op(Create{Name: "p1"}, 0.4, 0.45, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a", "member-b"}}).
			sts("member-a", "sa", "u1").sts("member-b", "sb", "u1").
			sample("member-a", 0.9, 9).pod("member-a", Added, "pa", "sa", 10, 1.0, false).sample("member-a", 2.0, 12, "pa").
			sample("member-b", 0.9, 9).pod("member-b", Added, "pb", "sb", 10, 1.0, false).sample("member-b", 1.5, 12, "pb").
			op(Place{Name: "p1"}, 1.6, 1.7, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}, SpecChanged: true}).
			op(Place{Name: "p1"}, 2.5, 2.6, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-b"}, SpecChanged: true}).
			sample("member-a", 5.0, 20, "pa")
	}
	t.Run("a reader that ran beside the departed one before the move", func(t *testing.T) {
		b := coPlaced().sample("member-b", 5.0, 20, "pb")
		if res := Check(&b.rec); res.Failed() {
			t.Fatalf("unexpected violations:\n%s", Report(&b.rec, res))
		}
	})
	t.Run("a reader started after the move while the departed one still ran", func(t *testing.T) {
		b := coPlaced().pod("member-b", Deleted, "pb", "sb", 13, 1.8, false).sample("member-b", 1.9, 14).
			pod("member-b", Added, "pb2", "sb", 15, 3.0, false).sample("member-b", 5.0, 20, "pb2")
		res := Check(&b.rec)
		if got := invariants(res); !reflect.DeepEqual(got, []string{InvStopFirst}) {
			t.Fatalf("violations %v, want [%s]\n%s", got, InvStopFirst, Report(&b.rec, res))
		}
	})
	t.Run("a pod where the pipeline was never placed", func(t *testing.T) {
		b := base().pod("member-a", Deleted, "pa", "sa", 30, 2.8, false).sample("member-c", 3.0, 50).
			pod("member-c", Added, "pc", "sc", 51, 3.2, false).sample("member-c", 3.5, 52, "pc")
		res := Check(&b.rec)
		if got := invariants(res); !reflect.DeepEqual(got, []string{InvStray}) {
			t.Fatalf("violations %v, want [%s]\n%s", got, InvStray, Report(&b.rec, res))
		}
	})
}

func TestCheckLeftovers(t *testing.T) {
	build := func(f Final) *rb {
		b := newRB().op(Create{Name: "p1"}, 0, 0.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
			op(Delete{Name: "p1"}, 1, 1.1, PipelineRef{Name: "p1", UID: "u1"}).
			hubSample(1.0, 10)
		b.rec.Events = append(b.rec.Events, Event{Cluster: hubCluster, Kind: kindPipelines, Type: Deleted, RVLo: 11, RVHi: 11, Recv: sec(2), Obj: ObjInfo{UID: "u1"}})
		b.rec.Final = f
		return b
	}
	objs := map[string][]ObjInfo{"member-a": {{Name: "p1-coordinator", PipelineUID: "u1"}}}
	for name, tc := range map[string]struct {
		final Final
		want  int
	}{
		"clean":                              {final: Final{}, want: 0},
		"an object of the deleted one":       {final: Final{MemberObjects: objs}, want: 1},
		"unreachable members are not judged": {final: Final{MemberObjects: objs, Unreachable: []string{"member-a"}}, want: 0},
		"a tombstone left":                   {final: Final{Tombstones: []LeaseEntry{{Lease: "l", Cluster: "member-b", PipelineUID: "u1"}}}, want: 1},
		"a tombstone of an unreachable one":  {final: Final{Tombstones: []LeaseEntry{{Lease: "l", Cluster: "member-b", PipelineUID: "u1"}}, Unreachable: []string{"member-b"}}, want: 0},
		"a lease held by the deleted one":    {final: Final{Leases: []ObjInfo{{Name: "l", Holder: "u1"}}}, want: 1},
		"a lease waiting for a member":       {final: Final{Leases: []ObjInfo{{Name: "l", Holder: "u1", Entries: []LeaseEntry{{Cluster: "member-b", PipelineUID: "u1"}}}}, Unreachable: []string{"member-b"}}, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			b := build(tc.final)
			res := Check(&b.rec)
			if got := res.Counts()[InvLeftovers]; got != tc.want || len(res.Violations) != tc.want {
				t.Fatalf("%d leftovers (%v), want %d", got, invariants(res), tc.want)
			}
		})
	}
}

func TestCheckTerminalWrites(t *testing.T) {
	// mid adds ops between the termination and the clear.
	build := func(writeRV int64, writeRecv float64, before, after float64, mid ...func(*rb)) *rb {
		b := newRB().hubSample(9.0, 49).
			op(Create{Name: "p1"}, 0, 0.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
			op(Terminate{Name: "p1"}, 10, 10.1, PipelineRef{Name: "p1", UID: "u1", RV: 50})
		for _, m := range mid {
			m(b)
		}
		b.op(Clear{Name: "p1"}, 15, 15.1, PipelineRef{Name: "p1", UID: "u1", RV: 60}).
			sample("member-a", before, writeRV-1).sample("member-a", after, writeRV+1)
		b.rec.Events = append(b.rec.Events,
			Event{Cluster: hubCluster, Kind: kindPipelines, Type: Modified, RVLo: 52, RVHi: 52, Recv: sec(10.5),
				Obj: ObjInfo{UID: "u1", RV: 52, Pipeline: &PipelineInfo{Terminated: true, TermGeneration: 1}}},
			Event{Cluster: "member-a", Kind: "configmaps", Type: Modified, RVLo: writeRV, RVHi: writeRV, Recv: sec(writeRecv), HubWrite: true,
				Obj: ObjInfo{Name: "p1-config", PipelineUID: "u1", RV: writeRV}})
		return b
	}
	for name, tc := range map[string]struct {
		b         *rb
		want      int
		wantNotes int
	}{
		"a write after the hub acknowledged":                     {b: build(200, 12, 11.0, 12.5), want: 1},
		"a write after a hub frozen before the window let go on": {b: build(200, 12, 11.0, 12.5).op(FreezeHub{Millis: 1000}, 10.2, 11.5), want: 0},
		"a write before the termination":                         {b: build(100, 9.5, 8.0, 9.8), want: 0},
		"a write that may be before":                             {b: build(150, 10.7, 9.0, 11.0), want: 0, wantNotes: 1},
		"a write after the clear":                                {b: build(300, 16.5, 15.5, 17.0), want: 0},
		"a write after a spec change lifted it": {b: build(200, 12, 11.0, 12.5, func(b *rb) {
			b.op(Respec{Name: "p1", LogLevel: "debug"}, 10.6, 10.7, PipelineRef{Name: "p1", UID: "u1", RV: 55, SpecChanged: true})
		}), want: 0},
		"a respec that moved no generation lifts nothing": {b: build(200, 12, 11.0, 12.5, func(b *rb) {
			b.op(Respec{Name: "p1"}, 10.6, 10.7, PipelineRef{Name: "p1", UID: "u1", RV: 55})
		}), want: 1},
		"a write a member slowed before the termination may commit late": {b: build(200, 12, 11.0, 12.5).
			op(SlowAdmission{Member: "member-a", Millis: 5000}, 5, 5.1), want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			res := Check(&tc.b.rec)
			if got := res.Counts()[InvTerminalWrite]; got != tc.want || len(res.Notes) != tc.wantNotes {
				t.Fatalf("%d violations, %d notes; want %d, %d\n%s", got, len(res.Notes), tc.want, tc.wantNotes, Report(&tc.b.rec, res))
			}
		})
	}
}

func TestCheckDeletions(t *testing.T) {
	build := func(hubDownFrom, hubDownTo float64) *rb {
		b := newRB().op(Create{Name: "p1"}, 0, 0.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
			op(Delete{Name: "p1"}, 10, 10.1, PipelineRef{Name: "p1", UID: "u1"})
		if hubDownTo > 0 {
			b.rec.Ops = append(b.rec.Ops,
				OpRecord{Index: 2, Op: KillHub{}, Start: sec(hubDownFrom), End: sec(hubDownFrom + 0.1), HubsBefore: [2]bool{true, false}},
				OpRecord{Index: 3, Op: StartHub{}, Start: sec(hubDownTo - 1), End: sec(hubDownTo), HubsAfter: [2]bool{true, false}})
		}
		b.hubSample(39.0, 299)
		b.rec.Events = append(b.rec.Events, Event{Cluster: hubCluster, Kind: kindPipelines, Type: Deleted, RVLo: 300, RVHi: 300, Recv: sec(40), Obj: ObjInfo{UID: "u1"}})
		return b
	}
	if res := Check(&build(0, 0).rec); res.Counts()[InvDeletion] != 1 {
		t.Fatalf("a deletion of 28.9 s (limit 28 s) is not reported:\n%s", Report(&build(0, 0).rec, res))
	}
	if b := build(20, 27); Check(&b.rec).Failed() {
		t.Fatalf("the 7 s the hub was down are counted against it:\n%s", Report(&b.rec, Check(&b.rec)))
	}
	// A leader frozen (0.5 s here) is not counted, nor the 15 s the other replica may take after it:
	// only both bring the 28.9 s under the limit.
	frozen := build(0, 0)
	frozen.rec.Ops = append(frozen.rec.Ops, OpRecord{Index: 2, Op: FreezeHub{Millis: 500}, Start: sec(20), End: sec(20.5),
		HubsBefore: [2]bool{true, true}, HubsAfter: [2]bool{true, true}})
	if res := Check(&frozen.rec); res.Failed() {
		t.Fatalf("the time a frozen leader was not acting is counted against the hub:\n%s", Report(&frozen.rec, res))
	}
	b := build(0, 0)
	b.rec.Events = b.rec.Events[:0]
	b.rec.Final.Pipelines = []ObjInfo{{UID: "u1"}}
	if res := Check(&b.rec); res.Counts()[InvDeletion] != 1 || !strings.Contains(res.Violations[0].Evidence[0], "still on the hub") {
		t.Fatalf("a pipeline never deleted is not reported: %v", res.Violations)
	}
}

func TestClock(t *testing.T) {
	c := newClock([]clockPoint{{rv: 10, start: sec(1), end: sec(1.1)}, {rv: 20, start: sec(2), end: sec(2.1)}, {rv: 25, start: dawn, end: sec(1.5)}})
	for _, tc := range []struct {
		rv            int64
		after, before Stamp
	}{
		{rv: 5, after: dawn, before: sec(1.1)},
		{rv: 11, after: sec(1), before: sec(1.5)},
		{rv: 21, after: sec(2), before: sec(1.5)},
		{rv: 26, after: sec(2), before: forever},
	} {
		if a, b := c.after(tc.rv), c.before(tc.rv); a != tc.after || b != tc.before {
			t.Errorf("revision %d: after %s before %s, want %s and %s", tc.rv, stampString(a), stampString(b), stampString(tc.after), stampString(tc.before))
		}
	}
}

func (b *rb) stsAt(cluster, uid, pipelineUID string, typ string, rv int64, recv float64) *rb {
	b.rec.Events = append(b.rec.Events, Event{Cluster: cluster, Kind: "statefulsets", Type: typ, Recv: sec(recv), RVLo: rv, RVHi: rv,
		Obj: ObjInfo{UID: uid, PipelineUID: pipelineUID, Name: "p1-coordinator", RV: rv}})
	return b
}

// A re-created pipeline of the same name applies over the old one's StatefulSet: the running pod
// belongs to the old pipeline until then, to the new one after.
func TestPodChangesPipelineWithItsStatefulSet(t *testing.T) {
	b := newRB().pipeline("u1", "p1", "mysql:1", 5, 0.5).pipeline("u2", "p1", "mysql:1", 30, 3.0).
		op(Create{Name: "p1"}, 0.4, 0.45, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
		op(Delete{Name: "p1"}, 2.0, 2.1, PipelineRef{Name: "p1", UID: "u1"}).
		op(Create{Name: "p1"}, 2.9, 3.0, PipelineRef{Name: "p1", UID: "u2", Placement: []string{"member-a"}}).
		stsAt("member-a", "sa", "u1", Added, 8, 0.8).
		sample("member-a", 0.9, 9).pod("member-a", Added, "pa", "sa", 10, 1.0, false).sample("member-a", 2.0, 12, "pa").
		sample("member-a", 4.9, 49, "pa").stsAt("member-a", "sa", "u2", Modified, 50, 5.05).sample("member-a", 5.1, 51, "pa").
		sample("member-a", 8.0, 90, "pa")
	clocks := newClocks(b.rec.Samples, b.rec.Events)
	lives := podLives(&b.rec, clocks, ownerPipelines(&b.rec), nil)
	if len(lives) != 2 || lives[0].Pipeline != "u1" || lives[1].Pipeline != "u2" {
		t.Fatalf("lives %v, want the pod cut in two, u1 then u2", lives)
	}
	if lives[0].Sure != (span{sec(1.0), sec(4.9)}) || lives[1].Sure != (span{sec(5.05), sec(8.0)}) {
		t.Fatalf("sure spans %s and %s, want [1.0, 4.9] and [5.05, 8.0]", lives[0].Sure, lives[1].Sure)
	}
	if res := Check(&b.rec); res.Failed() || len(res.Notes) > 0 {
		t.Fatalf("the adopted pod is reported:\n%s", Report(&b.rec, res))
	}
}

// A saved recording is checked again to the same verdict.
func TestRecordingRoundTrip(t *testing.T) {
	b := twoPipelines().sample("member-a", 5.0, 20, "pa").
		pod("member-b", Added, "pb", "sb", 100, 3.0, false).sample("member-b", 3.5, 101, "pb")
	b.rec.History = History{Name: "synthetic", Ops: []Op{Create{Name: "p1"}, Create{Name: "p2"}}}
	b.rec.Final = Final{Pods: map[string][]ObjInfo{"member-a": {{Name: "pa", Owner: "sa"}}}}
	want := Check(&b.rec)
	dir := t.TempDir()
	if _, err := Save(dir, &b.rec, want); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.recording.json"))
	if len(paths) != 1 {
		t.Fatalf("recordings saved: %v", paths)
	}
	rec, err := LoadRecording(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := Check(rec); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(rec.Ops, b.rec.Ops) {
		t.Fatalf("checked again: %v, want %v", invariants(got), invariants(want))
	}
	if len(want.Violations) == 0 {
		t.Fatal("the synthetic recording has no violation to compare")
	}
}
