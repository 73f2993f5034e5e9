package chaos

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSlowSpans(t *testing.T) {
	a, b := "member-a", "member-b"
	for name, tc := range map[string]struct {
		ops  []OpRecord
		want []slowSpan
	}{
		"slow path, reconnected": {
			ops:  opRecords(SlowPath{Member: a, Millis: 800}, Reconnect{Member: a}),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(2.1)}, Late: 800 * time.Millisecond, Op: 0}},
		},
		"slow path replaced by a partition": {
			ops:  opRecords(SlowPath{Member: a, Millis: 800}, Partition{Member: a}),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(2.1)}, Late: 800 * time.Millisecond, Op: 0}},
		},
		"admission never dropped": {
			ops:  opRecords(SlowAdmission{Member: b, Millis: 5000}),
			want: []slowSpan{{Member: b, In: span{sec(1), forever}, Late: 5 * time.Second, Op: 0}},
		},
		"a reconnect does not drop a webhook; heal ends both": {
			ops: opRecords(SlowAdmission{Member: a, Millis: 9000}, SlowPath{Member: a, Millis: 300}, Reconnect{Member: a}, Heal{}),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(4.1)}, Late: 9 * time.Second, Op: 0},
				{Member: a, In: span{sec(2), sec(3.1)}, Late: 300 * time.Millisecond, Op: 1}},
		},
		"a webhook whose removal failed stays until heal": {
			ops:  withErr(opRecords(SlowAdmission{Member: a, Millis: 1000}, DropAdmission{Member: a}, Heal{}), 1),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(3.1)}, Late: time.Second, Op: 0}},
		},
		"slowed again while slow: the longer delay counts": {
			ops:  opRecords(SlowAdmission{Member: a, Millis: 1000}, SlowAdmission{Member: a, Millis: 5000}, DropAdmission{Member: a}),
			want: []slowSpan{{Member: a, In: span{sec(1), sec(3.1)}, Late: 5 * time.Second, Op: 0}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := slowSpans(tc.ops); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("slowSpans = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLateTerminal(t *testing.T) {
	b := Bounds{MemberTimeout: 3 * time.Second}
	term := &OpRecord{Index: 4, Op: Terminate{Name: "p0"}, Start: sec(10), End: sec(10.5)}
	base := span{sec(13.5), forever}
	for name, tc := range map[string]struct {
		slow []slowSpan
		want Stamp
	}{
		"no slow member":              {want: sec(13.5)},
		"slow before, ended before":   {slow: []slowSpan{{Member: "a", In: span{sec(1), sec(9)}, Late: 5 * time.Second}}, want: sec(13.5)},
		"slow through the window":     {slow: []slowSpan{{Member: "a", In: span{sec(1), forever}, Late: 5 * time.Second}}, want: sec(18.5)},
		"slow from after it opened":   {slow: []slowSpan{{Member: "a", In: span{sec(14), forever}, Late: 5 * time.Second}}, want: sec(13.5)},
		"slowed meanwhile, the worst": {slow: []slowSpan{{Member: "a", In: span{sec(11), sec(12)}, Late: time.Second}, {Member: "b", In: span{sec(12), sec(20)}, Late: 9 * time.Second}}, want: sec(22.5)},
	} {
		t.Run(name, func(t *testing.T) {
			w := terminalWindow{In: base, Why: "base"}
			lateTerminal(&w, term, tc.slow, b)
			if w.In.from != tc.want {
				t.Fatalf("window opens at %s, want %s (%s)", stampString(w.In.from), stampString(tc.want), w.Why)
			}
			if tc.want != base.from && !strings.Contains(w.Why, "commits a write") {
				t.Errorf("the window's reason does not name the slow member: %q", w.Why)
			}
		})
	}
}

// The hub is not held to I5's bound while a member is slow, nor for MemberRecover (and, for a
// webhook, its longest hold) after.
func TestBlockedWhileSlow(t *testing.T) {
	b := Bounds{MemberRecover: 60 * time.Second}
	rec := &Recording{Bounds: b, Ops: opRecords(SlowPath{Member: "member-a", Millis: 800}, Reconnect{Member: "member-a"},
		SlowAdmission{Member: "member-b", Millis: 5000}, DropAdmission{Member: "member-b"})}
	if got, want := blockedSpans(rec, "member-a", nil), []span{{sec(1), sec(2.1) + 60*time.Second}}; !reflect.DeepEqual(got, want) {
		t.Errorf("member-a blocked %v, want %v", got, want)
	}
	if got, want := blockedSpans(rec, "member-b", nil), []span{{sec(3), sec(4.1) + 90*time.Second}}; !reflect.DeepEqual(got, want) {
		t.Errorf("member-b blocked %v, want %v", got, want)
	}
	if got := blockedSpans(rec, "member-c", nil); len(got) != 0 {
		t.Errorf("member-c blocked %v, want never", got)
	}
}

// withErr marks ops[i] as failed.
func withErr(ops []OpRecord, i int) []OpRecord {
	ops[i].Err = "connection refused"
	return ops
}
