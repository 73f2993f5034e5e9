package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// maxNotes caps the unproven overlaps a report prints.
const maxNotes = 20

// Report is the text printed for a history: the verdict, each violation with its evidence, the
// notes, and the ops as they ran (with times and errors) so that the history reads as it
// happened.
func Report(rec *Recording, res Result) string {
	var b strings.Builder
	verdict := "no violation"
	if res.Failed() {
		verdict = fmt.Sprintf("%d violation(s)", len(res.Violations))
	}
	fmt.Fprintf(&b, "history %s in namespace %s: %d ops, %d faults, %s\n", rec.History.Name, strings.Join(rec.namespaces(), ","),
		len(rec.History.Ops), rec.History.Faults(), verdict)
	fmt.Fprintf(&b, "checked: %d coordinator pods (%d made by hand), %d stop-before-start waits, %d departures, %d terminal windows, %d hub writes to members, %d deletions\n",
		res.Seen.Pods, res.Seen.HandReaders, res.Seen.Waits, res.Seen.Departures, res.Seen.TerminalWindows, res.Seen.HubWrites, res.Seen.Deletions)
	fmt.Fprintf(&b, "fenced: %d reader stretches cut by the simulated fence, %d failover windows judged (I6)\n", res.Seen.FencedReaders, res.Seen.FailoverWindows)
	for _, v := range res.Violations {
		b.WriteString(v.String())
	}
	if len(res.Notes) > 0 {
		fmt.Fprintf(&b, "%d note(s), not violations (possible overlaps the observations do not prove, failovers seen, fenced readers):\n", len(res.Notes))
		for i, n := range res.Notes {
			if i == maxNotes {
				fmt.Fprintf(&b, "    ... %d more\n", len(res.Notes)-maxNotes)
				break
			}
			fmt.Fprintf(&b, "    %s\n", n)
		}
	}
	b.WriteString("ops as they ran (times since the recording started):\n")
	for _, o := range rec.Ops {
		fmt.Fprintf(&b, "  #%02d [%s..%s] %s%s%s\n", o.Index, stampString(o.Start), stampString(o.End), o.Op, refsString(o.Pipelines), errSuffix(o.Err))
	}
	fmt.Fprintf(&b, "settled at %s; recorded %d samples and %d events\n", stampString(rec.Settled), len(rec.Samples), len(rec.Events))
	return b.String()
}

func refsString(rs []PipelineRef) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s=uid %s gen %d", r.Name, short(r.UID), r.Generation))
	}
	if len(parts) == 0 {
		return ""
	}
	return " {" + strings.Join(parts, ", ") + "}"
}

// Save writes the history (replayable), the whole recording (to check again:
// -chaos.recheck) and the report of a run to dir, and returns the history's path.
func Save(dir string, rec *Recording, res Result) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%s", rec.History.Name, time.Now().UTC().Format("20060102T150405")))
	if err := rec.History.Save(base + ".json"); err != nil {
		return "", err
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(base+".recording.json", raw, 0o644); err != nil {
		return "", err
	}
	report := Report(rec, res) + "\n" + rec.History.String()
	return base + ".json", os.WriteFile(base+".report.txt", []byte(report), 0o644)
}

// Tally sums the runs of a session for docs/reliability.md.
type Tally struct {
	Histories, Ops, Faults int
	// Violations counts violations per invariant; Broken the histories with at least one.
	Violations, Broken map[string]int
	Failed             []string
	Took               time.Duration
	// Kinds counts the ops of each kind the histories drew (waits left out).
	Kinds map[string]int
	// FencedReaders and FailoverWindows add up what the histories' checks saw (Seen).
	FencedReaders, FailoverWindows int
}

// Add counts one checked history.
func (t *Tally) Add(rec *Recording, res Result) {
	if t.Violations == nil {
		t.Violations, t.Broken, t.Kinds = map[string]int{}, map[string]int{}, map[string]int{}
	}
	for _, o := range rec.History.Ops {
		if _, wait := o.(Wait); !wait {
			t.Kinds[o.Kind()]++
		}
	}
	t.Histories++
	t.Ops += len(rec.History.Ops)
	t.Faults += rec.History.Faults()
	t.FencedReaders += res.Seen.FencedReaders
	t.FailoverWindows += res.Seen.FailoverWindows
	for inv, n := range res.Counts() {
		t.Violations[inv] += n
		t.Broken[inv]++
	}
	if res.Failed() {
		t.Failed = append(t.Failed, rec.History.Name)
	}
}

// Table is the markdown table docs/reliability.md shows.
func (t Tally) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| histories | operations | faults | wall time |\n|---|---|---|---|\n| %d | %d | %d | %s |\n\n",
		t.Histories, t.Ops, t.Faults, t.Took.Round(time.Second))
	b.WriteString("| invariant | violations | histories violating it |\n|---|---|---|\n")
	for _, inv := range Invariants {
		fmt.Fprintf(&b, "| %s | %d | %d |\n", inv, t.Violations[inv], t.Broken[inv])
	}
	if len(t.Failed) > 0 {
		fmt.Fprintf(&b, "\nhistories with violations: %s\n", strings.Join(t.Failed, ", "))
	}
	fmt.Fprintf(&b, "\nfenced reader stretches cut by the simulated fence: %d; failover windows judged (I6): %d\n", t.FencedReaders, t.FailoverWindows)
	fmt.Fprintf(&b, "\nops by kind (waits left out): %s\n", kindsString(t.Kinds))
	return b.String()
}

// kindsString lists op counts by kind, most drawn first.
func kindsString(kinds map[string]int) string {
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if kinds[ks[i]] != kinds[ks[j]] {
			return kinds[ks[i]] > kinds[ks[j]]
		}
		return ks[i] < ks[j]
	})
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	return strings.Join(parts, ", ")
}
