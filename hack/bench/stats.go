package main

import (
	"fmt"
	"slices"
)

// spread is one quantity measured once per run of a size.
type spread []float64

// collect is f of every run of r.
func collect(r result, f func(pairRun) float64) spread {
	s := make(spread, len(r.runs))
	for i, run := range r.runs {
		s[i] = f(run)
	}
	return s
}

// median is the middle value (the mean of the two middle ones for an even count); 0 when empty.
func (s spread) median() float64 {
	if len(s) == 0 {
		return 0
	}
	v := slices.Clone(s)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// format writes the median with prec decimals and, when the runs differ at that precision, their
// range: "1.52 (1.37–1.95)".
func (s spread) format(prec int) string {
	if len(s) == 0 {
		return "-"
	}
	med := fmt.Sprintf("%.*f", prec, s.median())
	lo, hi := fmt.Sprintf("%.*f", prec, slices.Min(s)), fmt.Sprintf("%.*f", prec, slices.Max(s))
	if lo == hi {
		return med
	}
	return fmt.Sprintf("%s (%s–%s)", med, lo, hi)
}
