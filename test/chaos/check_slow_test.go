package chaos

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSlowSpans(t *testing.T) {
	a, b := "member-a", "member-b"
	const lag = webhookConfigLag
	for name, tc := range map[string]struct {
		ops  []OpRecord
		want []slowSpan
	}{
		"slow path, reconnected": {
			ops:  opRecords(SlowPath{Member: a, Millis: 800}, Reconnect{Member: a}),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(2.1)}, Late: 800 * time.Millisecond, Trip: 1600 * time.Millisecond, Op: 0}},
		},
		"slow path replaced by a partition": {
			ops:  opRecords(SlowPath{Member: a, Millis: 800}, Partition{Member: a}),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(2.1)}, Late: 800 * time.Millisecond, Trip: 1600 * time.Millisecond, Op: 0}},
		},
		"admission never dropped": {
			ops:  opRecords(SlowAdmission{Member: b, Millis: 5000}),
			want: []slowSpan{{Member: b, In: span{sec(1), forever}, Late: 5 * time.Second, Trip: 5 * time.Second, Op: 0}},
		},
		"a reconnect does not drop a webhook; heal ends both, the webhook a moment later": {
			ops: opRecords(SlowAdmission{Member: a, Millis: 9000}, SlowPath{Member: a, Millis: 300}, Reconnect{Member: a}, Heal{}),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(4.1) + lag}, Late: 9 * time.Second, Trip: 9 * time.Second, Op: 0},
				{Member: a, In: span{sec(2), sec(3.1)}, Late: 300 * time.Millisecond, Trip: 600 * time.Millisecond, Op: 1}},
		},
		"slowed again while slow: the longer delay counts": {
			ops:  opRecords(SlowAdmission{Member: a, Millis: 1000}, SlowAdmission{Member: a, Millis: 5000}, DropAdmission{Member: a}),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(3.1) + lag}, Late: 5 * time.Second, Trip: 5 * time.Second, Op: 0}},
		},
		"a webhook whose removal failed stays until heal": {
			ops:  withErr(opRecords(SlowAdmission{Member: a, Millis: 1000}, DropAdmission{Member: a}, Heal{}), 1),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(3.1) + lag}, Late: time.Second, Trip: time.Second, Op: 0}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := slowSpans(tc.ops); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("slowSpans = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A slow member opens a terminal window later for its own writes only: a write sent to it until
// the window would have opened, while it was slow, may land that much later.
func TestLateTerminal(t *testing.T) {
	b := Bounds{MemberTimeout: 3 * time.Second}
	term := &OpRecord{Index: 4, Op: Terminate{Name: "p0"}, Start: sec(10), End: sec(10.5)}
	for name, tc := range map[string]struct {
		slow  []slowSpan
		from  float64 // the window's start set before (0: 13.5, the termination + --member-timeout)
		wantA float64 // the start for member a's writes
	}{
		"no slow member":                      {wantA: 13.5},
		"slow long before, ended long before": {slow: []slowSpan{{Member: "a", In: span{sec(1), sec(5)}, Late: 5 * time.Second}}, wantA: 13.5},
		"slow until just before the termination: a held write lands after": {
			slow: []slowSpan{{Member: "a", In: span{sec(1), sec(9.9)}, Late: 9 * time.Second}}, wantA: 18.9},
		"slow through the window":      {slow: []slowSpan{{Member: "a", In: span{sec(1), forever}, Late: 5 * time.Second}}, wantA: 18.5},
		"slow from after it opened":    {slow: []slowSpan{{Member: "a", In: span{sec(14), forever}, Late: 5 * time.Second}}, wantA: 13.5},
		"another member slow":          {slow: []slowSpan{{Member: "b", In: span{sec(1), forever}, Late: 9 * time.Second}}, wantA: 13.5},
		"a frozen hub sent until 20 s": {slow: []slowSpan{{Member: "a", In: span{sec(1), forever}, Late: 5 * time.Second}}, from: 20, wantA: 25},
	} {
		t.Run(name, func(t *testing.T) {
			w := terminalWindow{In: span{sec(13.5), forever}, Why: "base"}
			if tc.from > 0 {
				w.In.from = sec(tc.from)
			}
			lateTerminal(&w, term, tc.slow, b)
			in, why := w.at("a", "statefulsets")
			if in.from != sec(tc.wantA) {
				t.Fatalf("member a's window opens at %s, want %s (%s)", stampString(in.from), stampString(sec(tc.wantA)), why)
			}
			if in.from != w.In.from && !strings.Contains(why, "may be committed") {
				t.Errorf("the window's reason does not name the slow member: %q", why)
			}
			if inB, _ := w.at("member-c", "statefulsets"); inB.from != w.In.from {
				t.Errorf("a member that was never slow opens at %s, want %s", stampString(inB.from), stampString(w.In.from))
			}
		})
	}
}

// The hub is not held to I5's bound on a member whose requests may time out while it is slow,
// nor for MemberRecover (and, for a webhook, its longest hold) after; a member slow within
// --member-timeout holds nothing up.
func TestBlockedWhileSlow(t *testing.T) {
	b := Bounds{MemberRecover: 60 * time.Second, MemberTimeout: 3 * time.Second}
	rec := &Recording{Bounds: b, Ops: opRecords(SlowPath{Member: "member-a", Millis: 1500}, Reconnect{Member: "member-a"},
		SlowAdmission{Member: "member-b", Millis: 5000}, DropAdmission{Member: "member-b"},
		SlowPath{Member: "member-c", Millis: 800}, SlowAdmission{Member: "member-c", Millis: 1000}, Heal{})}
	if got, want := blockedSpans(rec, "member-a", nil), []span{{sec(1), sec(2.1) + 60*time.Second}}; !reflect.DeepEqual(got, want) {
		t.Errorf("member-a blocked %v, want %v", got, want)
	}
	if got, want := blockedSpans(rec, "member-b", nil), []span{{sec(3), sec(4.1) + 90*time.Second}}; !reflect.DeepEqual(got, want) {
		t.Errorf("member-b blocked %v, want %v", got, want)
	}
	if got := blockedSpans(rec, "member-c", nil); len(got) != 0 {
		t.Errorf("member-c (slow within --member-timeout) blocked %v, want never", got)
	}
}

// withErr marks ops[i] as failed.
func withErr(ops []OpRecord, i int) []OpRecord {
	ops[i].Err = "connection refused"
	return ops
}
