package chaos

// The generator's slow members: a path to the hub that answers late, and an admission webhook
// that holds the hub's writes. Either may outlast --member-timeout, so that the hub gives up on
// writes the member still commits (late writes, docs/architecture.md "Fencing late writes").

// pathDelays and admissionDelays are the delays drawn, in milliseconds: some within
// --member-timeout (slow but answering), some about it (some answers in time, some not), some
// beyond it. A path delay beyond it delivers what the hub sent after the hub gave up: a request
// in flight when the path slowed is committed after the hub's timeout (a late write). An
// admission webhook cannot do that: the member cancels the request, and the webhook call, when
// the hub's client gives up.
var (
	pathDelays      = []int{300, 800, 1400, 1500, 2500, 3500}
	admissionDelays = []int{1000, 2500, 5000, 9000}
)

// slowChoices adds the steps of slow members.
func (g *generator) slowChoices(add func(w int, ok bool, do func())) {
	add(2, len(g.up()) > 1 && len(g.cut) < 2, g.slowPath)
	add(2, len(g.slowAdmission) == 0, g.admission)
	add(6, len(g.slowAdmission) > 0, g.dropAdmission)
}

// slowPath slows one member's path to the hub; reconnect ends it as it ends a partition.
func (g *generator) slowPath() {
	open := g.openPaths()
	if len(open) == 0 {
		return
	}
	m := g.pick(open)
	g.emit(SlowPath{Member: m, Millis: pathDelays[g.r.IntN(len(pathDelays))]})
	g.cut[m] = true
}

func (g *generator) admission() {
	m := g.pick(Members)
	g.emit(SlowAdmission{Member: m, Millis: admissionDelays[g.r.IntN(len(admissionDelays))]})
	g.slowAdmission[m] = true
}

func (g *generator) dropAdmission() {
	for _, m := range Members {
		if g.slowAdmission[m] {
			g.emit(DropAdmission{Member: m})
			delete(g.slowAdmission, m)
			return
		}
	}
}
