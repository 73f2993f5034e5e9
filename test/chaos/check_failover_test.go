package chaos

import (
	"reflect"
	"testing"
)

// opRecords numbers ops one second apart, each taking 0.1 s.
func opRecords(ops ...Op) []OpRecord {
	out := make([]OpRecord, len(ops))
	for i, o := range ops {
		out[i] = OpRecord{Index: i, Op: o, Start: sec(float64(i + 1)), End: sec(float64(i+1) + 0.1)}
	}
	return out
}

func TestLosses(t *testing.T) {
	a, b := "member-a", "member-b"
	for name, tc := range map[string]struct {
		ops  []OpRecord
		want []loss
	}{
		"stopped, started": {
			ops:  opRecords(StopMember{Member: a}, StartMember{Member: a}),
			want: []loss{{Member: a, In: span{sec(1.1), sec(2)}, Op: 0}},
		},
		"partitioned, then slowed: the slow path opens it": {
			ops:  opRecords(Partition{Member: a}, SlowPath{Member: a, Millis: 800}),
			want: []loss{{Member: a, In: span{sec(1.1), sec(2)}, Op: 0}},
		},
		"slowed only: not lost": {
			ops: opRecords(SlowPath{Member: a, Millis: 4000}, Reconnect{Member: a}),
		},
		"partitioned, never reconnected": {
			ops:  opRecords(Partition{Member: a}),
			want: []loss{{Member: a, In: span{sec(1.1), forever}, Op: 0}},
		},
		"stopped, partitioned, started, reconnected: lost until the reconnect": {
			ops:  opRecords(StopMember{Member: a}, Partition{Member: a}, StartMember{Member: a}, Reconnect{Member: a}),
			want: []loss{{Member: a, In: span{sec(1.1), sec(4)}, Op: 0}},
		},
		"partitioned, stopped, reconnected, started: lost until the start": {
			ops:  opRecords(Partition{Member: a}, StopMember{Member: a}, Reconnect{Member: a}, StartMember{Member: a}),
			want: []loss{{Member: a, In: span{sec(1.1), sec(4)}, Op: 0}},
		},
		"stopped, then hung: one loss, hanging from the hang": {
			ops:  opRecords(StopMember{Member: a}, Partition{Member: a, Hang: true}, StartMember{Member: a}, Heal{}),
			want: []loss{{Member: a, In: span{sec(1.1), sec(4)}, Hang: true, HangFrom: sec(2.1), Op: 0}},
		},
		"two members, each its own loss": {
			ops: opRecords(StopMember{Member: a}, Partition{Member: b}, StartMember{Member: a}, Reconnect{Member: b}),
			want: []loss{{Member: a, In: span{sec(1.1), sec(3)}, Op: 0},
				{Member: b, In: span{sec(2.1), sec(4)}, Op: 1}},
		},
		"lost twice": {
			ops: opRecords(StopMember{Member: a}, StartMember{Member: a}, Partition{Member: a}, Reconnect{Member: a}),
			want: []loss{{Member: a, In: span{sec(1.1), sec(2)}, Op: 0},
				{Member: a, In: span{sec(3.1), sec(4)}, Op: 2}},
		},
		"a stop that failed cuts nothing": {
			ops: func() []OpRecord {
				ops := opRecords(StopMember{Member: a}, StartMember{Member: a})
				ops[0].Err = "refused"
				return ops
			}(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := losses(tc.ops); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("losses\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
