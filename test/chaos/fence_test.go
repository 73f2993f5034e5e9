package chaos

import (
	"cmp"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fence"
)

func TestSimulateFence(t *testing.T) {
	cfg := fence.Config{TTL: 4 * time.Second, Grace: 2 * time.Second}
	renewals := func(from, to float64) []fenceWrite {
		var out []fenceWrite
		for s := from; s <= to; s++ {
			out = append(out, fenceWrite{At: sec(s), Token: "t" + sec(s).String()})
		}
		return out
	}
	for name, tc := range map[string]struct {
		from   float64
		writes []fenceWrite
		want   []span
	}{
		"renewed every second, then stopped: runs from the first renewal after its first read until the last one + ttl + grace": {
			from: 0.5, writes: renewals(0, 10), want: []span{{sec(1), sec(16)}},
		},
		"no renewal after its first read: never runs": {
			from: 11, writes: renewals(0, 10), want: nil,
		},
		"a gap longer than ttl: killed, and started again on the next renewal": {
			from: 0.5, writes: append(renewals(0, 3), renewals(20, 22)...), want: []span{{sec(1), sec(9)}, {sec(20), sec(28)}},
		},
		"renewed until the horizon: still running": {
			from: 0.5, writes: renewals(0, 60), want: []span{{sec(1), forever}},
		},
		"a renewal seen while stopping, then none: started again right after the kill": {
			from: 0.5, writes: []fenceWrite{{sec(1), "a"}, {sec(2), "b"}, {sec(6.5), "c"}}, want: []span{{sec(1), sec(8)}, {sec(8), sec(12.5)}},
		},
		"the Lease deleted: no renewal": {
			from: 0.5, writes: []fenceWrite{{sec(0), "a"}, {sec(1), "b"}, {sec(2), ""}, {sec(3), ""}}, want: []span{{sec(1), sec(7)}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := simulateFence(cfg, sec(tc.from), sec(60), tc.writes)
			for i := range got {
				// The fence dates a renewal by the read just before it: 1 ns early here.
				got[i].from, got[i].to = roundMs(got[i].from), roundMs(got[i].to)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("runs %v, want %v", got, tc.want)
			}
		})
	}
}

// hubFence is the fence's command line as the hub renders it for p1 (u1) in chaos-0, with the
// suite's settings (ttl 4 s, grace 2 s), flags replaced or added by extra.
func hubFence(extra ...string) []string {
	flags := map[string]string{"--lease": "chaos-0/p1-fence", "--ttl": "4s", "--grace": "2s", "--holder": "u1"}
	for i := 0; i+1 < len(extra); i += 2 {
		flags[extra[i]] = extra[i+1]
	}
	out := []string{coordinator.FenceBinary}
	for _, f := range []string{"--lease", "--ttl", "--grace", "--holder", "--kubeconfig"} {
		if v, ok := flags[f]; ok && v != "-" {
			out = append(out, f, v)
		}
	}
	return append(out, "--", "urutau-coordinator", "run")
}

// fencedFailover: p1 (u1) a failover pipeline over [member-a, member-b], its fenced pod in a
// renewed every second from 1 s; a stopped at 10 s (renewals end at 10 s), b's pod from bStart.
func fencedFailover(bStart float64) *rb { return fencedFailoverCmd(bStart, hubFence()) }

// fencedFailoverCmd is fencedFailover with a's pod created with command line cmd.
func fencedFailoverCmd(bStart float64, cmd []string) *rb {
	b := newRB()
	b.rec.Bounds.FenceTTL, b.rec.Bounds.FenceGrace, b.rec.Bounds.FenceMargin = 4*time.Second, 2*time.Second, time.Second
	b.rec.Bounds.FailoverSlack = 10 * time.Second
	ref := PipelineRef{Name: "p1", UID: "u1", Identity: "mysql:1", Failover: &FailoverSpec{Candidates: []string{"member-a", "member-b"}, ThresholdMillis: 10000}}
	b.op(Create{Name: "p1"}, 0, 0.1, ref).pipeline("u1", "p1", "mysql:1", 5, 0.2).
		sts("member-a", "sa", "u1").sts("member-b", "sb", "u1").
		op(StopMember{Member: "member-a"}, 10, 10.1)
	for s := 1; s <= 10; s++ {
		rv := int64(100 + s)
		b.rec.Events = append(b.rec.Events, Event{Cluster: "member-a", Kind: kindFences, Type: Modified, Recv: sec(float64(s) + 0.05), RVLo: rv, RVHi: rv,
			Obj: ObjInfo{UID: "la", Name: "p1-fence", RV: rv, Holder: "u1", Renew: sec(float64(s)).String()}})
		b.sample("member-a", float64(s)-0.01, rv-1, "pa")
	}
	b.rec.Events = append(b.rec.Events, Event{Cluster: "member-a", Kind: kindPods, Type: Added, Recv: sec(0.5), RVLo: 50, RVHi: 50,
		Obj: ObjInfo{UID: "pa", Name: "pa", RV: 50, Owner: "sa", Phase: "Running", Fenced: true, Command: cmd}})
	b.sample("member-a", 0.4, 49).sample("member-a", 0.6, 50, "pa").sample("member-a", 99, 200, "pa")
	b.rec.Events = append(b.rec.Events, Event{Cluster: "member-b", Kind: kindPods, Type: Added, Recv: sec(bStart + 0.1), RVLo: 70, RVHi: 70,
		Obj: ObjInfo{UID: "pb", Name: "pb", RV: 70, Owner: "sb", Phase: "Running"}})
	b.sample("member-b", bStart-0.2, 69).sample("member-b", bStart+0.05, 70, "pb").sample("member-b", max(99, bStart+5), 300, "pb")
	return b
}

func TestCheckFencedFailoverOverlap(t *testing.T) {
	for name, tc := range map[string]struct {
		bStart float64
		want   bool
	}{
		"b starts after a's fence killed a's reader (10 s + ttl + grace)": {bStart: 17, want: false},
		"b starts while a's reader may still run":                         {bStart: 13, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			res := Check(&fencedFailover(tc.bStart).rec)
			got := res.Counts()[InvStopFirst] > 0
			if got != tc.want {
				t.Errorf("stop-before-start violated: %v, want %v\n%v", got, tc.want, res.Violations)
			}
			if res.Seen.FencedReaders != 1 {
				t.Errorf("fenced reader stretches %d, want 1", res.Seen.FencedReaders)
			}
		})
	}
}

// Each fenced pod is judged by its own fence's command line, not the suite's settings.
func TestFenceCommandLine(t *testing.T) {
	for name, tc := range map[string]struct {
		cmd     []string
		bStart  float64
		overlap bool // b's reader overlaps a's
		readers int  // stretches cut by the simulated fence
	}{
		"the suite's settings: a's reader is killed at 10 s + 4 s + 2 s": {cmd: hubFence(), bStart: 17, readers: 1},
		"a longer ttl: a's reader runs until 10 s + 10 s + 2 s":          {cmd: hubFence("--ttl", "10s"), bStart: 17, overlap: true, readers: 1},
		"a refused command line (no --ttl): no reader ever runs":         {cmd: hubFence("--ttl", "-"), bStart: 13},
		"a refused command line (no command): no reader ever runs":       {cmd: hubFence()[:9], bStart: 13},
		"another holder: no renewal counts, no reader":                   {cmd: hubFence("--holder", "u9"), bStart: 13},
		"any holder: the hub's renewals count":                           {cmd: hubFence("--holder", "-"), bStart: 17, readers: 1},
		"another namespace: a Lease not recorded, no cut":                {cmd: hubFence("--lease", "other/p1-fence"), bStart: 17, overlap: true},
		"another cluster's API (--kubeconfig): no cut":                   {cmd: hubFence("--kubeconfig", "/k"), bStart: 17, overlap: true},
		"another name, never written: no reader":                         {cmd: hubFence("--lease", "chaos-0/p2-fence"), bStart: 13},
		"no command line recorded (older recordings): the suite's":       {cmd: nil, bStart: 13, overlap: true, readers: 1},
	} {
		t.Run(name, func(t *testing.T) {
			res := Check(&fencedFailoverCmd(tc.bStart, tc.cmd).rec)
			if got := res.Counts()[InvStopFirst] > 0; got != tc.overlap {
				t.Errorf("stop-before-start violated: %v, want %v\n%v", got, tc.overlap, res.Violations)
			}
			if res.Seen.FencedReaders != tc.readers {
				t.Errorf("fenced reader stretches %d, want %d", res.Seen.FencedReaders, tc.readers)
			}
		})
	}
}

// Renewals written by hand (no label, holderIdentity "kubectl") on a's Lease from 11 s to 20 s,
// after the hub's stopped: they count for a fence whose --holder accepts them.
func TestHandRenewals(t *testing.T) {
	for name, tc := range map[string]struct {
		cmd     []string
		overlap bool // b's reader (from 17 s) overlaps a's
	}{
		"--holder the pipeline's: the hand's do not count, killed at 10 s + 6 s": {cmd: hubFence()},
		"no --holder: every renewal counts, a runs until 20 s + 6 s":             {cmd: hubFence("--holder", "-"), overlap: true},
		"--holder kubectl: only the hand's count, a runs 11 s to 26 s":           {cmd: hubFence("--holder", "kubectl"), overlap: true},
	} {
		t.Run(name, func(t *testing.T) {
			b := fencedFailoverCmd(17, tc.cmd)
			for s := 11; s <= 20; s++ {
				rv := int64(120 + s)
				b.rec.Events = append(b.rec.Events, Event{Cluster: "member-a", Kind: kindFences, Type: Modified, Recv: sec(float64(s) + 0.05), RVLo: rv, RVHi: rv,
					Obj: ObjInfo{UID: "la", Name: "p1-fence", RV: rv, Holder: "kubectl", Renew: "hand" + sec(float64(s)).String()}})
				b.sample("member-a", float64(s)-0.01, rv-1, "pa")
			}
			res := Check(&b.rec)
			if got := res.Counts()[InvStopFirst] > 0; got != tc.overlap {
				t.Errorf("stop-before-start violated: %v, want %v\n%v", got, tc.overlap, res.Violations)
			}
		})
	}
}

func TestCheckFailoverLiveness(t *testing.T) {
	status := func(b *rb, member string, rv int64, recv float64) *rb {
		b.rec.Events = append(b.rec.Events, Event{Cluster: hubCluster, Kind: kindPipelines, Type: Modified, Recv: sec(recv), RVLo: rv, RVHi: rv,
			Obj: ObjInfo{UID: "u1", Name: "p1", RV: rv, Pipeline: &PipelineInfo{Identity: "mysql:1", FailoverMember: member}}})
		b.hubSample(recv-0.2, rv-1)
		return b
	}
	abc := []string{"member-a", "member-b", "member-c"}
	// a is lost at 10.1 s; the deadline is 37.1 s, the reader's 107.1 s; b's reader surely runs
	// from bStart+0.1 (17 s).
	for name, tc := range map[string]struct {
		candidates []string // nil: a and b
		movedAt    float64  // 0: never
		moveTo     string   // "": member-b
		bStart     float64  // 0: 17
		restart    float64  // a started again at (0: never)
		extra      []Op     // ops at 20 s, 21 s, ...
		late       []Op     // ops at 60 s, 61 s, ...
		want       int      // I6 violations
		windows    int
	}{
		"a hub killed meanwhile: not judged":               {extra: []Op{KillHub{Hub: 0}}, windows: 0},
		"b out of the inventory meanwhile: not judged":     {extra: []Op{Deregister{Member: "member-b"}}, windows: 0},
		"p1 terminated meanwhile: not judged":              {extra: []Op{Terminate{Name: "p1"}}, windows: 0},
		"another member partitioned: still judged":         {extra: []Op{Partition{Member: "member-c"}}, want: 1, windows: 1},
		"another member slowed: still judged":              {extra: []Op{SlowAdmission{Member: "member-c", Millis: 9000}}, want: 1, windows: 1},
		"b's writes slowed meanwhile: not judged":          {extra: []Op{SlowAdmission{Member: "member-b", Millis: 9000}}, windows: 0},
		"b's path slowed meanwhile: not judged":            {extra: []Op{SlowPath{Member: "member-b", Millis: 1500}, Reconnect{Member: "member-b"}}, windows: 0},
		"b's path slowed a little meanwhile: still judged": {extra: []Op{SlowPath{Member: "member-b", Millis: 300}, Reconnect{Member: "member-b"}}, want: 1, windows: 1},
		"a itself slowed meanwhile: still judged":          {extra: []Op{SlowAdmission{Member: "member-a", Millis: 9000}}, want: 1, windows: 1},
		"moved within the bound":                           {movedAt: 25, want: 0, windows: 1},
		"never moved":                                      {want: 1, windows: 1},
		"moved too late":                                   {movedAt: 60, want: 1, windows: 1},
		"a back before the deadline: not judged":           {restart: 20, want: 0, windows: 0},
		"a back after the deadline, never moved":           {restart: 80, want: 1, windows: 1},
		// A move passes once a reader surely ran where it went, when that member stayed usable.
		// The reader may wait 70 s more for a renewal the stop left unanswered (107.1 s).
		"moved in time, b's reader after the decision's deadline, before the reader's": {movedAt: 25, bStart: 50, want: 0, windows: 1},
		"moved in time, b's reader only after the reader's deadline":                   {movedAt: 25, bStart: 110, want: 1, windows: 1},
		"moved in time, a hub killed before the reader's deadline: the reader not judged": {movedAt: 25, bStart: 110,
			late: []Op{KillHub{Hub: 0}}, want: 0, windows: 1},
		"moved in time to c, no reader there": {candidates: abc, movedAt: 25, moveTo: "member-c", want: 1, windows: 1},
		"moved in time to c, lost meanwhile: the move is all the hub could do": {candidates: abc, movedAt: 25, moveTo: "member-c",
			extra: []Op{Partition{Member: "member-c"}}, want: 0, windows: 1},
		// Judged while some other named candidate stays usable.
		"c lost meanwhile, b usable: judged":                      {candidates: abc, extra: []Op{Partition{Member: "member-c"}}, want: 1, windows: 1},
		"c out of the inventory, b usable: judged, moved":         {candidates: abc, movedAt: 25, extra: []Op{Deregister{Member: "member-c"}}, want: 0, windows: 1},
		"b and c lost meanwhile: not judged":                      {candidates: abc, extra: []Op{StopMember{Member: "member-b"}, Partition{Member: "member-c"}}, windows: 0},
		"b stopped, c out of the inventory meanwhile: not judged": {candidates: abc, extra: []Op{StopMember{Member: "member-b"}, Deregister{Member: "member-c"}}, windows: 0},
	} {
		t.Run(name, func(t *testing.T) {
			b := fencedFailover(cmp.Or(tc.bStart, 17))
			if tc.candidates != nil {
				b.rec.Ops[0].Pipelines[0].Failover.Candidates = tc.candidates
			}
			status(b, "member-a", 10, 2)
			if tc.movedAt > 0 {
				status(b, cmp.Or(tc.moveTo, "member-b"), 300, tc.movedAt)
			}
			if tc.restart > 0 {
				b.op(StartMember{Member: "member-a"}, tc.restart, tc.restart+1)
			}
			for i, o := range tc.extra {
				b.op(o, 20+float64(i), 20.1+float64(i), PipelineRef{Name: "p1", UID: "u1"})
			}
			for i, o := range tc.late {
				b.op(o, 60+float64(i), 60.1+float64(i), PipelineRef{Name: "p1", UID: "u1"})
			}
			res := Check(&b.rec)
			if got := res.Counts()[InvFailover]; got != tc.want {
				t.Errorf("I6 violations %d, want %d\n%v", got, tc.want, res.Violations)
			}
			if res.Seen.FailoverWindows != tc.windows {
				t.Errorf("windows judged %d, want %d", res.Seen.FailoverWindows, tc.windows)
			}
			if tc.want == 0 && tc.windows > 0 && !strings.Contains(strings.Join(res.Notes, "\n"), "left member-a") {
				t.Errorf("no note of the failover: %v", res.Notes)
			}
		})
	}
}

func roundMs(s Stamp) Stamp {
	if s >= forever {
		return s
	}
	return s.Round(time.Millisecond)
}

func TestSurePieces(t *testing.T) {
	for name, tc := range map[string]struct {
		m           span
		early, late []span
		want        []readerPiece
	}{
		"no span both datings agree on: one piece, nothing sure": {
			m: span{sec(5), sec(10)}, early: []span{{sec(5), sec(7)}}, late: []span{{sec(8), sec(10)}},
			want: []readerPiece{{maybe: span{sec(5), sec(10)}, sure: span{forever, dawn}}},
		},
		"one sure span": {
			m: span{sec(5), sec(81)}, early: []span{{sec(5), sec(80)}}, late: []span{{sec(6), sec(81)}},
			want: []readerPiece{{maybe: span{sec(5), sec(81)}, sure: span{sec(6), sec(80)}}},
		},
		"two sure spans: both judged, in disjoint pieces": {
			m: span{sec(5), sec(81)}, early: []span{{sec(5), sec(40)}, {sec(42), sec(80)}}, late: []span{{sec(6), sec(81)}},
			want: []readerPiece{
				{maybe: span{sec(5), sec(42) - 1}, sure: span{sec(6), sec(40)}},
				{maybe: span{sec(42), sec(81)}, sure: span{sec(42), sec(80)}},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := surePieces(tc.m, tc.early, tc.late); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("pieces %v, want %v", got, tc.want)
			}
		})
	}
}

// A move that starts no reader passes while another pipeline of the same source identity may
// hold one: the reader lease rightly keeps the moved one from starting anywhere (chaos seed
// 340013: two pipelines of one identity, one created with the webhook bypassed).
func TestContended(t *testing.T) {
	win := span{sec(10), sec(40)}
	cc := &checkContext{pipes: map[string]*pipelineFacts{
		"u1": {UID: "u1", Identity: "mysql:1"}, "u2": {UID: "u2", Identity: "mysql:1"}, "u3": {UID: "u3", Identity: "mysql:2"},
		"n1": {UID: "n1"}, "n2": {UID: "n2"}}}
	for name, tc := range map[string]struct {
		pods []*podLife
		want bool
	}{
		"no other reader": {nil, false},
		"its own reader":  {[]*podLife{{Pipeline: "u1", Maybe: span{sec(0), forever}}}, false},
		"another pipeline of its identity, in the window":    {[]*podLife{{Pipeline: "u2", Maybe: span{sec(30), sec(50)}}}, true},
		"another pipeline of its identity, before it only":   {[]*podLife{{Pipeline: "u2", Maybe: span{sec(0), sec(5)}}}, false},
		"another identity's reader":                          {[]*podLife{{Pipeline: "u3", Maybe: span{sec(0), forever}}}, false},
		"a pod of a pipeline the recording does not know of": {[]*podLife{{Pipeline: "u9", Maybe: span{sec(0), forever}}}, false},
		"a pod a person made for another pipeline":           {[]*podLife{{Pipeline: "u2", Maybe: span{sec(0), forever}, hand: &handMark{}}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			cc.pods = tc.pods
			if got := cc.contended(cc.pipes["u1"], win); got != tc.want {
				t.Errorf("contended = %v, want %v", got, tc.want)
			}
			// Two pipelines whose identity is unknown are not one identity.
			cc.pods = []*podLife{{Pipeline: "n2", Maybe: span{sec(0), forever}}}
			if cc.contended(cc.pipes["n1"], win) {
				t.Error("an unknown identity contended with another unknown one")
			}
		})
	}
}
