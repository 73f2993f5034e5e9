package main

import (
	"fmt"
	"strings"
	"time"
)

// tables is the generated part of docs/benchmarks.md: the main table and its details.
func (rep report) tables() string {
	var b strings.Builder
	b.WriteString(header(mainColumns...) + "\n")
	for _, r := range rep.results {
		b.WriteString(tableRow(r, rep.baseRSS) + "\n")
	}
	fmt.Fprintf(&b, "\nA hub with no member and no pipeline: RSS %s MiB (the part of the empty hub's RSS that members do not add).\n", mib(rep.baseRSS))
	busy, others := machineShare(rep.results)
	fmt.Fprintf(&b, "\nHow busy the machine was over every create run of this invocation: %.0f%% of all CPU time busy, %.0f%% spent by processes other than the bench's (its API servers, etcds, hub and itself).\n", 100*busy, 100*others)
	b.WriteString("\nMember requests per placement, by verb (WATCH: watches started), in the hub's create runs, in the no-op reconciles (a label set on every pipeline: one reconcile each, nothing to change) and in the floor's create runs:\n\n")
	b.WriteString(verbTable(rep.results))
	b.WriteString("\nBy request, first run of each size (member requests summed over the members):\n\n")
	for _, r := range rep.results {
		p := r.runs[0]
		fmt.Fprintf(&b, "- %s create, hub writes to the hub API server: %v\n", r.size, p.hubWrites)
		fmt.Fprintf(&b, "- %s create, member requests: %v\n", r.size, p.hubMembers)
		fmt.Fprintf(&b, "- %s no-op reconcile (%d reconciles), member requests: %v; hub writes: %v\n", r.size, p.noop.reconciles, p.noop.members, p.noop.hubWrites)
	}
	b.WriteString("\nEach run (floor, then hub, in fresh namespaces; **busy**: share of all CPU time that was busy during the create run, every process on the machine; **others**: the share used by processes other than the bench's):\n\n")
	b.WriteString(runTable(rep.results))
	fmt.Fprintf(&b, "\nCPU time (seconds, all cores, mean of the runs) used during the create runs, by process, and how busy the machine was (busy CPU time / all CPU time, every process on the machine):\n\n")
	b.WriteString(header(cpuColumns...) + "\n")
	for _, r := range rep.results {
		b.WriteString(cpuRow(r) + "\n")
	}
	return b.String()
}

// machineShare is, over every create run, the busy share of all CPU time and the share spent by
// processes other than the bench's.
func machineShare(rs []result) (busy, others float64) {
	var sum cpuUse
	for _, r := range rs {
		for _, p := range r.runs {
			sum = sum.add(p.floorCPU).add(p.hubCPU)
		}
	}
	return sum.utilisation(), sum.othersShare()
}

var verbColumns = []string{"GET", "LIST", "WATCH", "APPLY", "PATCH", "POST", "PUT", "DELETE"}

func verbTable(rs []result) string {
	cols := append([]string{"C×P", "step"}, verbColumns...)
	cols = append(cols, "other", "reads (GET+LIST)")
	var b strings.Builder
	b.WriteString(header(cols...) + "\n")
	steps := []struct {
		name string
		of   func(pairRun) requests
	}{
		{"create", func(p pairRun) requests { return p.hubMembers }},
		{"no-op reconcile", func(p pairRun) requests { return p.noop.members }},
		{"floor create", func(p pairRun) requests { return p.floorMembers }},
	}
	for _, r := range rs {
		for _, st := range steps {
			per := func(f func(map[string]int) int) string {
				return collect(r, func(p pairRun) float64 { return float64(f(st.of(p).byVerb())) / float64(r.placements) }).format(2)
			}
			cells := []string{r.String(), st.name}
			for _, v := range verbColumns {
				cells = append(cells, per(func(m map[string]int) int { return m[v] }))
			}
			cells = append(cells, per(otherVerbs), per(func(m map[string]int) int { return m["GET"] + m["LIST"] }))
			b.WriteString(row(cells...) + "\n")
		}
	}
	return b.String()
}

// otherVerbs counts the verbs verbColumns has no column for.
func otherVerbs(m map[string]int) int {
	n := 0
	for v, c := range m {
		known := false
		for _, k := range verbColumns {
			known = known || k == v
		}
		if !known {
			n += c
		}
	}
	return n
}

func runTable(rs []result) string {
	var b strings.Builder
	b.WriteString(header("C×P", "run", "floor s", "hub s", "hub/floor", "down/all-up", "hung/all-up",
		"busy: floor run", "busy: hub run", "others: floor run", "others: hub run") + "\n")
	pct := func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }
	for _, r := range rs {
		for i, p := range r.runs {
			b.WriteString(row(r.String(), fmt.Sprint(i+1), fmt.Sprintf("%.2f", secs(p.floor)), fmt.Sprintf("%.2f", secs(p.hub)),
				fmt.Sprintf("%.2f", secs(p.hub)/secs(p.floor)), ratioCell(r, p.dead, p.hub), ratioCell(r, p.hung, p.hub),
				pct(p.floorCPU.utilisation()), pct(p.hubCPU.utilisation()), pct(p.floorCPU.othersShare()), pct(p.hubCPU.othersShare())) + "\n")
		}
	}
	return b.String()
}

func ratioCell(r result, d degradedRun, allUp time.Duration) string {
	switch {
	case r.C < 2:
		return "n/a"
	case d.err != "":
		return "timeout"
	}
	return fmt.Sprintf("%.2f", secs(d.took)/secs(allUp))
}

var cpuColumns = []string{
	"C×P", "floor: API servers + etcd (members'; the hub's idle)", "floor: bench", "floor: total (machine busy)",
	"hub run: hub process", "hub run: hub API server + etcd", "hub run: members' API servers + etcd", "hub run: bench",
	"hub run: total (machine busy)", "hub run − floor",
}

func cpuRow(r result) string {
	var f, h cpuUse
	for _, p := range r.runs {
		f, h = f.add(p.floorCPU), h.add(p.hubCPU)
	}
	n := float64(len(r.runs))
	f, h = f.scale(1/n), h.scale(1/n)
	return fmt.Sprintf("| %s | %.2f | %.2f | %.2f (%.0f%%) | %.2f | %.2f | %.2f | %.2f | %.2f (%.0f%%) | %+.2f |",
		r.size, f.members+f.hubAPI, f.bench, f.ours(), 100*f.utilisation(),
		h.hub, h.hubAPI, h.members, h.bench, h.ours(), 100*h.utilisation(), h.ours()-f.ours())
}
