package chaos

import (
	"reflect"
	"strings"
	"testing"
)

// touched sets the member objects the last op wrote by hand.
func (b *rb) touched(uids ...string) *rb {
	b.rec.Ops[len(b.rec.Ops)-1].Touched = uids
	return b
}

// failed marks the last op as failed.
func (b *rb) failed() *rb {
	b.rec.Ops[len(b.rec.Ops)-1].Err = "refused"
	return b
}

// namedPod records a pod with its name and urutau.io/pipeline label.
func (b *rb) namedPod(cluster, typ, uid, name, owner, label string, rv int64, recv float64) *rb {
	b.rec.Events = append(b.rec.Events, Event{Cluster: cluster, Kind: kindPods, Type: typ, Recv: sec(recv), RVLo: rv, RVHi: rv,
		Obj: ObjInfo{UID: uid, Name: name, RV: rv, Owner: owner, PipelineName: label, Phase: "Running"}})
	return b
}

// lease records a version of reader lease l holding entries of pipeline uid for clusters.
func (b *rb) lease(l, uid string, rv int64, recv float64, clusters ...string) *rb {
	var es []LeaseEntry
	for _, c := range clusters {
		es = append(es, LeaseEntry{Lease: l, Cluster: c, PipelineUID: uid})
	}
	b.rec.Events = append(b.rec.Events, Event{Cluster: hubCluster, Kind: kindLeases, Type: Modified, Recv: sec(recv), RVLo: rv, RVHi: rv,
		Obj: ObjInfo{UID: l, Name: l, RV: rv, Entries: es}})
	return b
}

func members(ch []placementChange) [][]string {
	var out [][]string
	for _, c := range ch {
		out = append(out, c.Members)
	}
	return out
}

func TestResolvePlacements(t *testing.T) {
	ref := func(placement []string, selector, changed bool) PipelineRef {
		return PipelineRef{Name: "p1", UID: "u1", Placement: placement, Selector: selector, SpecChanged: changed}
	}
	for name, tc := range map[string]struct {
		build func(*rb)
		want  [][]string
	}{
		"a selector follows the labels of the members in the inventory": {
			build: func(b *rb) {
				b.op(Create{Name: "p1"}, 0, 0.1, ref([]string{}, true, true)).
					op(Label{Member: "member-a", On: true}, 1, 1.1).
					op(Label{Member: "member-b", On: true}, 2, 2.1).
					op(Deregister{Member: "member-a"}, 3, 3.1).
					op(Register{Member: "member-a"}, 4, 4.1).
					op(Label{Member: "member-b"}, 5, 5.1)
			},
			want: [][]string{{}, {"member-a"}, {"member-a", "member-b"}, {"member-b"}, {"member-a", "member-b"}, {"member-a"}},
		},
		"named members leave with their kubeconfig Secret and come back with heal": {
			build: func(b *rb) {
				b.op(Create{Name: "p1"}, 0, 0.1, ref([]string{"member-a", "member-b"}, false, true)).
					op(Deregister{Member: "member-b"}, 1, 1.1).
					op(Label{Member: "member-c", On: true}, 2, 2.1).
					op(Heal{}, 3, 3.1)
			},
			want: [][]string{{"member-a", "member-b"}, {"member-a"}, {"member-a", "member-b"}},
		},
		"a failed inventory op and a placement that resolves the same change nothing": {
			build: func(b *rb) {
				b.op(Create{Name: "p1"}, 0, 0.1, ref([]string{"member-a"}, false, true)).
					op(Label{Member: "member-a", On: true}, 1, 1.1).failed().
					op(Place{Name: "p1"}, 2, 2.1, ref([]string{"member-a"}, true, true)).
					op(Place{Name: "p1"}, 3, 3.1, ref([]string{"member-b"}, false, true))
			},
			want: [][]string{{"member-a"}, {"member-b"}},
		},
		"an alias places on its member while it is registered, the member's own entry or not": {
			build: func(b *rb) {
				b.op(Create{Name: "p1"}, 0, 0.1, ref([]string{"member-a-alias"}, false, true)).
					op(Alias{Member: "member-a", On: true}, 1, 1.1).
					op(Deregister{Member: "member-a"}, 2, 2.1).
					op(Place{Name: "p1"}, 3, 3.1, ref([]string{"member-a", "member-a-alias", "member-b"}, false, true)).
					op(Alias{Member: "member-a"}, 4, 4.1).
					op(Alias{Member: "member-a", On: true}, 5, 5.1).
					op(Heal{}, 6, 6.1)
			},
			want: [][]string{{}, {"member-a"}, {"member-a", "member-b"}, {"member-b"}, {"member-a", "member-b"}},
		},
		"no change after the deletion": {
			build: func(b *rb) {
				b.op(Create{Name: "p1"}, 0, 0.1, ref([]string{}, true, true)).
					op(Delete{Name: "p1"}, 1, 1.1, PipelineRef{Name: "p1", UID: "u1"}).
					op(Label{Member: "member-a", On: true}, 2, 2.1)
			},
			want: [][]string{{}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := newRB()
			tc.build(b)
			f := pipelines(&b.rec, nil)["u1"]
			if got := members(f.Placements); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("placements %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSharedDB(t *testing.T) {
	b := newRB().op(Repoint{Member: "member-a", DB: SharedDB}, 1, 1.1).
		op(Repoint{Member: "member-b", DB: SharedDB}, 2, 2.1).
		op(Repoint{Member: "member-b"}, 5, 5.1).
		op(Repoint{Member: "member-b", DB: SharedDB}, 7, 7.1).failed()
	tls := dbTimelines(b.rec.Ops)
	got := sharedDB(tls, "member-a", "member-b")
	want := []sharing{{In: span{sec(2.1), sec(5)}, Began: sec(2.1)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shared %v, want %v", got, want)
	}
	if s := sharedDB(tls, "member-a", "member-c"); len(s) != 0 {
		t.Fatalf("a and c read their own databases, shared %v", s)
	}
}

func TestDeadline(t *testing.T) {
	for name, tc := range map[string]struct {
		blocked []span
		want    Stamp
	}{
		"nothing blocks":                {want: sec(40)},
		"a block inside pushes it back": {blocked: []span{{sec(15), sec(20)}}, want: sec(45)},
		"a block the first push reaches": {
			blocked: []span{{sec(15), sec(20)}, {sec(42), sec(50)}}, want: sec(53),
		},
		"a block before does not count": {blocked: []span{{sec(0), sec(9)}}, want: sec(40)},
		"a block that never ends":       {blocked: []span{{sec(30), forever}}, want: forever},
	} {
		t.Run(name, func(t *testing.T) {
			if got := deadline(sec(10), 30*sec(1), mergeSpans(tc.blocked)); got != tc.want {
				t.Fatalf("deadline %s, want %s", stampString(got), stampString(tc.want))
			}
		})
	}
}

// onePipeline: p1 (u1) placed on placement, with a StatefulSet in every member.
func onePipeline(placement ...string) *rb {
	return newRB().pipeline("u1", "p1", "mysql:1", 5, 0.5).
		op(Create{Name: "p1"}, 0.4, 0.45, PipelineRef{Name: "p1", UID: "u1", Placement: placement}).
		sts("member-a", "sa", "u1").sts("member-b", "sb", "u1").sts("member-c", "sc", "u1").
		sample("member-a", 0.9, 9).sample("member-b", 0.9, 9).sample("member-c", 0.9, 9)
}

// running records the creation of pod uid (p1-coordinator-<ord>) of StatefulSet owner in
// cluster, at revision rv, seen at recv; samples say how long it lasts.
func (b *rb) running(cluster, uid, owner string, ord int, rv int64, recv float64) *rb {
	return b.namedPod(cluster, Added, uid, "p1-coordinator-"+string(rune('0'+ord)), owner, "p1", rv, recv)
}

// gone records the deletion of pod uid of running at revision rv, seen at recv.
func (b *rb) gone(cluster, uid, owner string, ord int, rv int64, recv float64) *rb {
	return b.namedPod(cluster, Deleted, uid, "p1-coordinator-"+string(rune('0'+ord)), owner, "p1", rv, recv)
}

func TestCheckOneDB(t *testing.T) {
	for name, tc := range map[string]struct {
		build func() *rb
		want  []string
	}{
		"two pods of one pipeline in one member": {
			build: func() *rb {
				return onePipeline("member-a").running("member-a", "p0", "sa", 0, 10, 1).running("member-a", "p1", "sa", 1, 20, 2).
					sample("member-a", 9, 30, "p0", "p1")
			},
			want: []string{InvOneDB},
		},
		"side by side on their own databases": {
			build: func() *rb {
				return onePipeline("member-a", "member-b").running("member-a", "pa", "sa", 0, 10, 1).running("member-b", "pb", "sb", 0, 10, 2).
					sample("member-a", 9, 30, "pa").sample("member-b", 9, 30, "pb")
			},
		},
		"side by side on one database": {
			build: func() *rb {
				return onePipeline().op(Repoint{Member: "member-a", DB: SharedDB}, 0.1, 0.2).op(Repoint{Member: "member-b", DB: SharedDB}, 0.2, 0.3).
					op(Place{Name: "p1"}, 0.5, 0.6, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a", "member-b"}, SpecChanged: true}).
					running("member-a", "pa", "sa", 0, 10, 1).running("member-b", "pb", "sb", 0, 10, 2).
					sample("member-a", 9, 30, "pa").sample("member-b", 9, 30, "pb")
			},
			want: []string{InvOneDB},
		},
		"repointed at one database while both ran, one stopped within the bound": {
			build: func() *rb {
				return onePipeline("member-a", "member-b").running("member-a", "pa", "sa", 0, 10, 1).running("member-b", "pb", "sb", 0, 10, 2).
					op(Repoint{Member: "member-a", DB: SharedDB}, 3, 3.1).op(Repoint{Member: "member-b", DB: SharedDB}, 4, 4.1).
					sample("member-b", 15, 20, "pb").gone("member-b", "pb", "sb", 0, 21, 16).sample("member-b", 17, 22).
					sample("member-a", 30, 30, "pa")
			},
		},
		"repointed at one database while both ran, both past the bound": {
			build: func() *rb {
				return onePipeline("member-a", "member-b").running("member-a", "pa", "sa", 0, 10, 1).running("member-b", "pb", "sb", 0, 10, 2).
					op(Repoint{Member: "member-a", DB: SharedDB}, 3, 3.1).op(Repoint{Member: "member-b", DB: SharedDB}, 4, 4.1).
					sample("member-a", 30, 30, "pa").sample("member-b", 30, 30, "pb")
			},
			want: []string{InvOneDB},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.build()
			res := Check(&b.rec)
			if got := invariants(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("violations %v, want %v\n%s", got, tc.want, Report(&b.rec, res))
			}
		})
	}
}

func TestCheckStoppedHandReaders(t *testing.T) {
	for name, tc := range map[string]struct {
		build func() *rb
		want  []string
	}{
		"a pod made by hand, deleted within the bound": {
			build: func() *rb {
				return onePipeline("member-a").running("member-a", "pa", "sa", 0, 10, 1).
					op(HandPod{Member: "member-a", Name: "p1"}, 2, 2.1).touched("h").
					namedPod("member-a", Added, "h", "p1-coordinator-by-hand-x", "", "p1", 20, 2.2).sample("member-a", 3, 21, "pa", "h").
					namedPod("member-a", Deleted, "h", "p1-coordinator-by-hand-x", "", "p1", 30, 20).sample("member-a", 21, 31, "pa").
					sample("member-a", 60, 40, "pa")
			},
		},
		"a pod made by hand, still there past the bound": {
			build: func() *rb {
				return onePipeline("member-a").running("member-a", "pa", "sa", 0, 10, 1).
					op(HandPod{Member: "member-a", Name: "p1"}, 2, 2.1).touched("h").
					namedPod("member-a", Added, "h", "p1-coordinator-by-hand-x", "", "p1", 20, 2.2).sample("member-a", 40, 21, "pa", "h")
			},
			want: []string{InvOneDB, InvStopped},
		},
		"a pod made by hand while the member does not answer": {
			build: func() *rb {
				return onePipeline("member-a").running("member-a", "pa", "sa", 0, 10, 1).
					op(HandPod{Member: "member-a", Name: "p1"}, 2, 2.1).touched("h").
					op(StopMember{Member: "member-a"}, 3, 3.1).op(StartMember{Member: "member-a"}, 30, 31).
					namedPod("member-a", Added, "h", "p1-coordinator-by-hand-x", "", "p1", 20, 2.2).sample("member-a", 40, 21, "pa", "h")
			},
		},
		"a hand scale's second pod, gone within the bound": {
			build: func() *rb {
				return onePipeline("member-a").running("member-a", "pa", "sa", 0, 10, 1).
					op(Scale{Member: "member-a", Name: "p1", Replicas: 2}, 2, 2.1).touched("sa").
					running("member-a", "p1pod", "sa", 1, 20, 2.5).sample("member-a", 5, 21, "pa", "p1pod").
					gone("member-a", "p1pod", "sa", 1, 30, 6).sample("member-a", 7, 31, "pa").sample("member-a", 60, 40, "pa")
			},
		},
		"a second pod no hand made": {
			build: func() *rb {
				return onePipeline("member-a").running("member-a", "pa", "sa", 0, 10, 1).
					running("member-a", "p1pod", "sa", 1, 20, 2.5).sample("member-a", 5, 21, "pa", "p1pod").
					gone("member-a", "p1pod", "sa", 1, 30, 6).sample("member-a", 7, 31, "pa").sample("member-a", 60, 40, "pa")
			},
			want: []string{InvOneDB},
		},
		"a restored reader in a member left, never stopped": {
			build: func() *rb {
				return onePipeline("member-b").running("member-b", "pb", "sb", 0, 10, 1).sample("member-b", 60, 40, "pb").
					stsAt("member-a", "restored", "u1", Added, 15, 2.2).
					op(Restore{Member: "member-a", Name: "p1", From: "member-a"}, 2, 2.1).touched("restored").
					running("member-a", "pr", "restored", 0, 20, 3).sample("member-a", 60, 40, "pr")
			},
			want: []string{InvStopped},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := tc.build()
			res := Check(&b.rec)
			if got := invariants(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("violations %v, want %v\n%s", got, tc.want, Report(&b.rec, res))
			}
		})
	}
}

func TestCheckStoppedDepartures(t *testing.T) {
	moved := func() *rb {
		return onePipeline("member-a").running("member-a", "pa", "sa", 0, 10, 1).sample("member-a", 5, 20, "pa").
			op(Place{Name: "p1"}, 2, 2.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{}, SpecChanged: true})
	}
	if b := moved().gone("member-a", "pa", "sa", 0, 30, 6).sample("member-a", 7, 31); Check(&b.rec).Failed() {
		t.Fatalf("a reader stopped after its placement left is reported:\n%s", Report(&b.rec, Check(&b.rec)))
	}
	b := moved().sample("member-a", 50, 90, "pa")
	res := Check(&b.rec)
	if got := invariants(res); !reflect.DeepEqual(got, []string{InvStopped}) || !strings.Contains(res.Violations[0].Summary, "left member-a") {
		t.Fatalf("a reader never stopped after its placement left: violations %v\n%s", got, Report(&b.rec, res))
	}
	b = moved().op(Terminate{Name: "p1"}, 2.2, 2.3, PipelineRef{Name: "p1", UID: "u1"}).sample("member-a", 50, 90, "pa")
	if res := Check(&b.rec); res.Failed() {
		t.Fatalf("a terminated pipeline's reader (the hub may not write) is reported:\n%s", Report(&b.rec, res))
	}
}

// A pod made by hand in a member before the pipeline leaves it, while its lease names that
// member: the move waits for it like for any reader there.
func TestHandPodBeforeAMoveIsWaitedFor(t *testing.T) {
	build := func(entry bool) *rb {
		b := onePipeline("member-a").hubSample(0.1, 1).hubSample(5, 20).
			running("member-a", "pa", "sa", 0, 10, 1).
			op(HandPod{Member: "member-a", Name: "p1"}, 2, 2.1).touched("h").
			namedPod("member-a", Added, "h", "p1-coordinator-by-hand-x", "", "p1", 20, 2.2).sample("member-a", 2.5, 21, "pa", "h").
			op(Place{Name: "p1"}, 3, 3.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-b"}, SpecChanged: true}).
			gone("member-a", "pa", "sa", 0, 25, 3.4).sample("member-a", 3.5, 26, "h").
			running("member-b", "pb", "sb", 0, 10, 4).sample("member-b", 10, 20, "pb").
			sample("member-a", 10, 27, "h").namedPod("member-a", Deleted, "h", "p1-coordinator-by-hand-x", "", "p1", 30, 12).sample("member-a", 13, 31)
		if entry {
			b.lease("l1", "u1", 2, 0.5, "member-a").lease("l1", "u1", 21, 12, "member-b")
		}
		return b
	}
	res := Check(&build(true).rec)
	if got := invariants(res); !reflect.DeepEqual(got, []string{InvStopFirst}) {
		t.Fatalf("violations %v, want [%s]\n%s", got, InvStopFirst, Report(&build(true).rec, res))
	}
	if res := Check(&build(false).rec); res.Failed() {
		t.Fatalf("a pod made by hand in a member no lease named is judged as the hub's:\n%s", Report(&build(false).rec, res))
	}
}

// A pod no StatefulSet owns belongs to the pipeline its label names: the one of that name
// created last before it.
func TestPodTiedByItsNameLabel(t *testing.T) {
	b := newRB().
		op(Create{Name: "p1"}, 0.4, 0.45, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
		op(Delete{Name: "p1"}, 1, 1.1, PipelineRef{Name: "p1", UID: "u1"}).
		op(Create{Name: "p1"}, 2, 2.1, PipelineRef{Name: "p1", UID: "u2", Placement: []string{"member-a"}}).
		sample("member-a", 2.5, 9).namedPod("member-a", Added, "h", "by-hand", "", "p1", 10, 3).sample("member-a", 4, 11, "h")
	cc := &checkContext{rec: &b.rec, pipes: pipelines(&b.rec, nil)}
	lives := podLives(&b.rec, newClocks(b.rec.Samples, b.rec.Events), ownerPipelines(&b.rec), pipelineByName(cc.pipes))
	if len(lives) != 1 || lives[0].Pipeline != "u2" {
		t.Fatalf("lives %v, want the pod tied to u2", lives)
	}
}

// A person's edit of a member object is no hub write, in the terminal window or not.
func TestHandWritesAreNoHubWrites(t *testing.T) {
	b := newRB().hubSample(9.0, 49).
		op(Create{Name: "p1"}, 0, 0.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
		op(Terminate{Name: "p1"}, 10, 10.1, PipelineRef{Name: "p1", UID: "u1", RV: 50}).
		op(Scale{Member: "member-a", Name: "p1", Replicas: 0}, 20, 20.2).touched("sa").
		sample("member-a", 19.9, 199).sample("member-a", 20.3, 201)
	b.rec.Events = append(b.rec.Events, Event{Cluster: "member-a", Kind: "statefulsets", Type: Modified, RVLo: 200, RVHi: 200,
		Recv: sec(20.25), HubWrite: true, Obj: ObjInfo{UID: "sa", Name: "p1-coordinator", PipelineUID: "u1", RV: 200}})
	if res := Check(&b.rec); res.Failed() {
		t.Fatalf("a hand scale is taken for a hub write:\n%s", Report(&b.rec, res))
	}
	b.rec.Ops[2].Touched = nil
	if res := Check(&b.rec); res.Counts()[InvTerminalWrite] != 1 {
		t.Fatalf("the same write by the hub is not reported: %v", invariants(res))
	}
}

func TestBlockedSpans(t *testing.T) {
	b := newRB().
		op(Create{Name: "p1"}, 0, 0.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a"}}).
		op(Deregister{Member: "member-a"}, 1, 1.1).op(Register{Member: "member-a"}, 2, 2.1).
		op(PauseKubelet{Member: "member-a"}, 100, 100.1).op(ResumeKubelet{Member: "member-a"}, 101, 101.1).
		op(Hold{Member: "member-a", Name: "p2"}, 200, 200.1).op(Release{}, 201, 201.1).
		op(Hold{Member: "member-a", Name: "p1"}, 300, 300.1).
		op(StopMember{Member: "member-b"}, 400, 400.1).
		op(Heal{}, 500, 501)
	f := pipelines(&b.rec, nil)["u1"]
	want := []span{{sec(1), sec(62.1)}, {sec(100), sec(104.1)}, {sec(300), sec(501)}}
	if got := blockedSpans(&b.rec, "member-a", f); !reflect.DeepEqual(got, want) {
		t.Fatalf("blocked %v, want %v", got, want)
	}
	want = []span{{sec(400), sec(561)}}
	if got := blockedSpans(&b.rec, "member-b", f); !reflect.DeepEqual(got, want) {
		t.Fatalf("blocked in member-b %v, want %v", got, want)
	}
}

// Removing an alias leaves the pipelines it placed orphaned on its member, and only those: the
// hub cannot act there for them until the alias is back.
func TestBlockedWhileAliasGone(t *testing.T) {
	b := newRB().
		op(Create{Name: "p1"}, 0, 0.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a-alias"}}).
		op(Create{Name: "p2"}, 0.2, 0.3, PipelineRef{Name: "p2", UID: "u2", Placement: []string{"member-a"}}).
		op(Alias{Member: "member-a", On: true}, 1, 1.1).
		op(Alias{Member: "member-a"}, 10, 10.1).
		op(Alias{Member: "member-a", On: true}, 20, 20.1)
	pipes := pipelines(&b.rec, nil)
	if got, want := blockedSpans(&b.rec, "member-a", pipes["u1"]), []span{{sec(10), sec(80.1)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("p1 (placed by the alias) blocked %v, want %v", got, want)
	}
	if got := blockedSpans(&b.rec, "member-a", pipes["u2"]); len(got) != 0 {
		t.Errorf("p2 (placed by the member's own name) blocked %v, want never", got)
	}
	if got := blockedSpans(&b.rec, "member-b", pipes["u1"]); len(got) != 0 {
		t.Errorf("p1 in member-b blocked %v, want never", got)
	}
}

// In the documented rename (the alias registered, the pipeline placed by it, the member's own
// entry removed) the hub still reaches the member for that pipeline; for one placed by the
// member's own name only, it cannot. Heal removing the alias leaves a pipeline placed by the alias
// only orphaned there.
func TestBlockedAcrossARename(t *testing.T) {
	b := newRB().
		op(Create{Name: "p1"}, 0, 0.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a-alias"}}).
		op(Create{Name: "p2"}, 0.2, 0.3, PipelineRef{Name: "p2", UID: "u2", Placement: []string{"member-a"}}).
		op(Create{Name: "p3"}, 0.4, 0.5, PipelineRef{Name: "p3", UID: "u3", Placement: []string{"member-a", "member-a-alias"}}).
		op(Alias{Member: "member-a", On: true}, 1, 1.1).
		op(Deregister{Member: "member-a"}, 10, 10.1).
		op(Heal{}, 100, 101)
	pipes := pipelines(&b.rec, nil)
	if got, want := blockedSpans(&b.rec, "member-a", pipes["u1"]), []span{{sec(100), forever}}; !reflect.DeepEqual(got, want) {
		t.Errorf("p1 (placed by the alias) blocked %v, want from the heal on", got)
	}
	if got, want := blockedSpans(&b.rec, "member-a", pipes["u2"]), []span{{sec(10), sec(161)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("p2 (placed by the member's own name) blocked %v, want %v", got, want)
	}
	if got := blockedSpans(&b.rec, "member-a", pipes["u3"]); len(got) != 0 {
		t.Errorf("p3 (placed by both names) blocked %v, want never: the heal registers the member's own name again", got)
	}
	withFailed := newRB().
		op(Create{Name: "p1"}, 0, 0.1, PipelineRef{Name: "p1", UID: "u1", Placement: []string{"member-a-alias"}}).
		op(Alias{Member: "member-a", On: true}, 1, 1.1).
		op(Alias{Member: "member-a"}, 10, 10.1)
	withFailed.rec.Ops[2].Err = "the hub API server refused"
	if got := blockedSpans(&withFailed.rec, "member-a", pipelines(&withFailed.rec, nil)["u1"]); len(got) != 0 {
		t.Errorf("a failed alias removal blocked %v, want never", got)
	}
}

// A placement changed while the member's own entry is gone reaches it through its alias or not,
// and the hub can act there accordingly; registered again, the member is reached by its own name.
func TestBlockedWhenAPlacementChangesAfterARename(t *testing.T) {
	ref := func(placement ...string) PipelineRef {
		return PipelineRef{Name: "p1", UID: "u1", Placement: placement, SpecChanged: true}
	}
	b := newRB().
		op(Create{Name: "p1"}, 0, 0.1, ref("member-a-alias")).
		op(Alias{Member: "member-a", On: true}, 1, 1.1).
		op(Deregister{Member: "member-a"}, 2, 2.1).
		op(Place{Name: "p1"}, 10, 10.1, ref("member-a")).
		op(Place{Name: "p1"}, 20, 20.1, ref("member-a-alias")).
		op(Place{Name: "p1"}, 30, 30.1, ref("member-a", "member-a-alias")).
		op(Alias{Member: "member-a"}, 40, 40.1).
		op(Register{Member: "member-a"}, 50, 50.1)
	want := []span{{sec(10), sec(80.1)}, {sec(40), sec(110.1)}}
	if got := blockedSpans(&b.rec, "member-a", pipelines(&b.rec, nil)["u1"]); !reflect.DeepEqual(got, mergeSpans(want)) {
		t.Fatalf("blocked %v, want %v", got, mergeSpans(want))
	}
}
