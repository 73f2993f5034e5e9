package chaos

import (
	"strings"
	"testing"
)

func TestTallyCountsOpsByKind(t *testing.T) {
	var tally Tally
	rec := &Recording{History: History{Ops: []Op{Create{Name: "p0"}, Wait{Millis: 1}, Scale{Replicas: 2}, Scale{}, Heal{}}}}
	tally.Add(rec, Result{Violations: []Violation{{Invariant: InvStopped}}})
	table := tally.Table()
	for _, want := range []string{"ops by kind (waits left out): scale 2, create 1, heal 1", "| " + InvStopped + " | 1 | 1 |"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}
