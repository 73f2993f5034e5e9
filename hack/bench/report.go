package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// report is everything one invocation of the bench measured.
type report struct {
	o       options
	results []result
	// baseRSS is VmRSS of a hub with no member and no pipeline, KiB.
	baseRSS int64
	took    time.Duration
	at      time.Time
	commit  string
}

func secs(d time.Duration) float64 { return d.Seconds() }

func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

// row is a markdown table row.
func row(cells ...string) string { return "| " + strings.Join(cells, " | ") + " |" }

// header is a markdown table header.
func header(cells ...string) string {
	return row(cells...) + "\n|" + strings.Repeat("---|", len(cells))
}

var mainColumns = []string{
	"C×P", "placements (objects)", "floor s", "hub s", "hub/floor", "machine busy % (others), floor / hub runs",
	"member writes/object, create (floor)", "member reads/placement, create", "member reads/placement, no-op reconcile",
	"hub writes/pipeline, create", "hub reconciles/pipeline, create", "idle: member writes", "idle: hub writes",
	"1 member down: healthy conv. s", "down/all-up", "1 member hung: healthy conv. s", "hung/all-up",
	"hub peak RSS MiB", "RSS MiB per 1,000 placements", "empty hub RSS MiB per member, + what each adds",
}

func tableRow(r result, baseRSS int64) string { return row(mainCells(r, baseRSS)...) }

// mainCells are the cells of r's row of the main table, in the order of mainColumns. baseRSS is
// the RSS of the hub with no member, KiB.
func mainCells(r result, baseRSS int64) []string {
	perPlacement := func(n int) float64 { return float64(n) / float64(r.placements) }
	perPipeline := func(n int) float64 { return float64(n) / float64(r.P) }
	dead, deadRatio := degradedCells(r, func(p pairRun) degradedRun { return p.dead })
	hung, hungRatio := degradedCells(r, func(p pairRun) degradedRun { return p.hung })
	return []string{
		r.String(), fmt.Sprintf("%d (%d)", r.placements, r.objects),
		collect(r, func(p pairRun) float64 { return secs(p.floor) }).format(2),
		collect(r, func(p pairRun) float64 { return secs(p.hub) }).format(2),
		collect(r, func(p pairRun) float64 { return secs(p.hub) / secs(p.floor) }).format(2),
		busyCell(r),
		writesPerObject(r),
		collect(r, func(p pairRun) float64 { return perPlacement(p.hubMembers.reads()) }).format(2),
		collect(r, func(p pairRun) float64 { return perPlacement(p.noop.members.reads()) }).format(2),
		collect(r, func(p pairRun) float64 { return perPipeline(p.hubWrites.total()) }).format(2),
		collect(r, func(p pairRun) float64 { return perPipeline(p.reconciles) }).format(2),
		r.idleMembers.String(), r.idleHub.String(), dead, deadRatio, hung, hungRatio,
		collect(r, func(p pairRun) float64 { return float64(p.hwm) / 1024 }).format(1),
		collect(r, func(p pairRun) float64 { return float64(p.rssEnd-p.rssEmpty) / 1024 * perPlacement(1000) }).format(1),
		collect(r, func(p pairRun) float64 { return float64(p.rssEmpty) / 1024 / float64(r.C) }).format(1) + ", +" +
			collect(r, func(p pairRun) float64 { return float64(p.rssEmpty-baseRSS) / 1024 / float64(r.C) }).format(1),
	}
}

// busyCell is the median busy share of the machine in the floor and in the hub runs, with the
// share of other processes in parentheses: "99 (46) / 100 (49)".
func busyCell(r result) string {
	pct := func(f func(pairRun) float64) float64 { return 100 * collect(r, f).median() }
	return fmt.Sprintf("%.0f (%.0f) / %.0f (%.0f)",
		pct(func(p pairRun) float64 { return p.floorCPU.utilisation() }), pct(func(p pairRun) float64 { return p.floorCPU.othersShare() }),
		pct(func(p pairRun) float64 { return p.hubCPU.utilisation() }), pct(func(p pairRun) float64 { return p.hubCPU.othersShare() }))
}

// writesPerObject is the member writes per object placed in the hub's create runs, by verb, and
// the floor's in parentheses.
func writesPerObject(r result) string {
	hub := collect(r, func(p pairRun) float64 { return float64(p.hubMembers.memberWrites().total()) / float64(r.objects) })
	floor := collect(r, func(p pairRun) float64 { return float64(p.floorMembers.memberWrites().total()) / float64(r.objects) })
	verbs := map[string]int{}
	for _, p := range r.runs {
		for v, n := range p.hubMembers.memberWrites().byVerb() {
			verbs[v] += n
		}
	}
	keys := sortedKeys(verbs)
	parts := make([]string, len(keys))
	for i, v := range keys {
		parts[i] = fmt.Sprintf("%s %.2f", v, float64(verbs[v])/float64(r.objects*len(r.runs)))
	}
	return fmt.Sprintf("%s (%s) (%s)", hub.format(2), strings.Join(parts, ", "), floor.format(2))
}

// degradedCells formats the dead or hung runs of r: their time and their ratio to the all-up run.
func degradedCells(r result, of func(pairRun) degradedRun) (string, string) {
	if r.C < 2 {
		return "n/a (C=1)", "n/a"
	}
	var took, ratio spread
	failed := 0
	for _, p := range r.runs {
		d := of(p)
		if d.err != "" {
			failed++
			continue
		}
		took, ratio = append(took, secs(d.took)), append(ratio, secs(d.took)/secs(p.hub))
	}
	if failed == len(r.runs) {
		return "timeout", "-"
	}
	note := ""
	if failed > 0 {
		note = fmt.Sprintf("; timeout in %d of %d runs", failed, len(r.runs))
	}
	return fmt.Sprintf("%s (%d placements%s)", took.format(2), of(r.runs[0]).placements, note), ratio.format(2)
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
