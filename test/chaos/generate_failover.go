package chaos

import "time"

// The generator's failover histories: pipelines with fenced and failover placements, and the
// faults that make a failover placement move by itself: the member it runs on killed, cut off
// from the hub only (refused or hanging), or flapping around the threshold.

// failoverChoices adds the steps of failover histories.
func (g *generator) failoverChoices(add func(w int, ok bool, do func())) {
	fo := g.failoverPipes()
	add(3, len(g.up()) > 1 && len(g.cut) < 2, g.partition)
	add(8, len(g.cut) > 0, g.reconnect)
	add(30, len(fo) > 0 && len(g.down) == 0 && len(g.cut) == 0, func() { g.lose(fo) })
	add(10, len(fo) > 0 && len(g.down) == 0 && len(g.cut) == 0, func() { g.flap(fo) })
}

// failoverPipes are the existing pipelines with a failover placement.
func (g *generator) failoverPipes() []string {
	var out []string
	for _, n := range g.existing() {
		if g.pipes[n].failover != nil {
			out = append(out, n)
		}
	}
	return out
}

// failoverSpec draws a failover placement: two or three candidates in a random order, sometimes
// the selector too, and a short threshold (the hub's least is 10 s).
func (g *generator) failoverSpec() *FailoverSpec {
	ms := append([]string(nil), Members...)
	g.r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	n := 2 + g.r.IntN(2)
	return &FailoverSpec{Candidates: ms[:n], CandidateSelector: g.r.IntN(100) < 20, ThresholdMillis: 10000 + 1000*g.r.IntN(5)}
}

// where is the member the model believes failover pipeline name runs on: the candidate it was
// last sent to, the first one at first.
func (g *generator) where(name string) string {
	p := g.pipes[name]
	if p.runsOn == "" {
		p.runsOn = p.failover.Candidates[0]
	}
	return p.runsOn
}

// partition cuts a member off from the hub only: refused mostly, hanging sometimes.
func (g *generator) partition() {
	open := g.openPaths()
	if len(open) == 0 {
		return
	}
	m := g.pick(open)
	g.emit(Partition{Member: m, Hang: g.r.IntN(100) < 30})
	g.cut[m] = true
}

// openPaths are the members up whose path from the hub is neither cut nor slow.
func (g *generator) openPaths() []string {
	var open []string
	for _, m := range g.up() {
		if !g.cut[m] {
			open = append(open, m)
		}
	}
	return open
}

func (g *generator) reconnect() {
	for _, m := range Members {
		if g.cut[m] {
			g.emit(Reconnect{Member: m})
			delete(g.cut, m)
			return
		}
	}
}

// lose cuts off the member a failover pipeline runs on (its API server killed, or the hub's
// path refused or hanging) for long enough that the pipeline moves by itself within the
// history, then mostly brings it back.
func (g *generator) lose(names []string) {
	name := g.pick(names)
	p := g.pipes[name]
	m := g.where(name)
	threshold := ms(p.failover.ThresholdMillis)
	bound := threshold + fenceTTL + fenceGrace + fenceMargin + failoverSlack
	var back Op
	switch k := g.r.IntN(100); {
	case k < 50:
		g.emit(StopMember{Member: m})
		back = StartMember{Member: m}
	case k < 80:
		g.emit(Partition{Member: m})
		back = Reconnect{Member: m}
	default:
		g.emit(Partition{Member: m, Hang: true})
		back = Reconnect{Member: m}
		bound += lateWriteFence
	}
	g.ops = append(g.ops, Wait{Millis: int((bound + time.Duration(g.r.IntN(5))*time.Second) / time.Millisecond)})
	for _, c := range p.failover.Candidates {
		if c != m {
			p.runsOn = c
			break
		}
	}
	if g.r.IntN(100) < 80 {
		g.emit(back)
		return
	}
	if _, stop := back.(StartMember); stop {
		g.down[m] = true
	} else {
		g.cut[m] = true
	}
}

// flap cuts the member a failover pipeline runs on off and back two or three times, each outage
// within 3 s of the threshold, with short returns between: mostly its path from the hub (a cut
// takes effect at once), sometimes its API server (which takes seconds to start again, so the
// outage runs longer than drawn).
func (g *generator) flap(names []string) {
	name := g.pick(names)
	m := g.where(name)
	threshold := g.pipes[name].failover.ThresholdMillis
	var down, up Op = Partition{Member: m}, Reconnect{Member: m}
	if g.r.IntN(100) < 30 {
		down, up = StopMember{Member: m}, StartMember{Member: m}
	}
	for range 2 + g.r.IntN(2) {
		g.emit(down)
		g.ops = append(g.ops, Wait{Millis: threshold - 3000 + g.r.IntN(6000)})
		g.emit(up)
		g.ops = append(g.ops, Wait{Millis: 1000 + g.r.IntN(3000)})
	}
}
