package chaos

import (
	"fmt"
	"sort"
)

// Bounds of time the checker uses where nothing is known.
const (
	dawn    Stamp = -1 << 62
	forever Stamp = 1 << 62
	// maxRV is a revision beyond any.
	maxRV int64 = 1<<63 - 1
)

// clock turns one cluster's revisions into times, with no assumption about how late a watch
// is: a poll that was sent at Start and answered revision RV proves that every revision above
// RV was committed after Start (the answer was true at some moment after the poll was sent),
// and every revision at or below RV before End. A watch event of revision x received at Recv
// proves x was committed before Recv. So for each revision the clock gives an earliest and a
// latest moment of its commit, and two moments of different clusters compare soundly.
type clock struct {
	rvs []int64
	// prefStart[i] is the latest Start among points 0..i (sorted by revision).
	prefStart []Stamp
	// sufEnd[i] is the earliest End among points i..n-1.
	sufEnd []Stamp
}

type clockPoint struct {
	rv         int64
	start, end Stamp
}

// newClocks builds every cluster's clock from the samples and events of a recording.
func newClocks(samples []Sample, events []Event) map[string]*clock {
	points := map[string][]clockPoint{}
	for _, s := range samples {
		points[s.Cluster] = append(points[s.Cluster], clockPoint{s.RV, s.Start, s.End})
	}
	for _, e := range events {
		// An event says nothing of when its revision was committed but that it was before Recv.
		points[e.Cluster] = append(points[e.Cluster], clockPoint{e.RVHi, dawn, e.Recv})
	}
	out := map[string]*clock{}
	for c, ps := range points {
		out[c] = newClock(ps)
	}
	return out
}

func newClock(ps []clockPoint) *clock {
	sort.Slice(ps, func(i, j int) bool { return ps[i].rv < ps[j].rv })
	c := &clock{rvs: make([]int64, len(ps)), prefStart: make([]Stamp, len(ps)), sufEnd: make([]Stamp, len(ps))}
	best := dawn
	for i, p := range ps {
		c.rvs[i] = p.rv
		best = max(best, p.start)
		c.prefStart[i] = best
	}
	least := forever
	for i := len(ps) - 1; i >= 0; i-- {
		least = min(least, ps[i].end)
		c.sufEnd[i] = least
	}
	return c
}

// after is the latest moment revision rv is known to have been committed after (dawn when
// nothing is known).
func (c *clock) after(rv int64) Stamp {
	if c == nil || rv <= 0 {
		return dawn
	}
	// points with revision < rv
	i := sort.Search(len(c.rvs), func(i int) bool { return c.rvs[i] >= rv })
	if i == 0 {
		return dawn
	}
	return c.prefStart[i-1]
}

// before is the earliest moment revision rv is known to have been committed by (forever when
// nothing is known).
func (c *clock) before(rv int64) Stamp {
	if c == nil || rv >= maxRV {
		return forever
	}
	i := sort.Search(len(c.rvs), func(i int) bool { return c.rvs[i] >= rv })
	if i == len(c.rvs) {
		return forever
	}
	return c.sufEnd[i]
}

// span is an interval of stamps.
type span struct{ from, to Stamp }

func (s span) empty() bool { return s.from > s.to }

func (s span) overlap(o span) span { return span{max(s.from, o.from), min(s.to, o.to)} }

func (s span) String() string { return "[" + stampString(s.from) + ", " + stampString(s.to) + "]" }

func stampString(t Stamp) string {
	switch {
	case t <= dawn:
		return "-inf"
	case t >= forever:
		return "+inf"
	}
	return fmt.Sprintf("%.3fs", t.Seconds())
}
