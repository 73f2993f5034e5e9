package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Generate writes a random history of about n operations (plus the waits between them and the
// closing Heal and DeleteAll) from seed. The same seed gives the same history on every machine:
// the generator draws only from its own PCG source and a model of what the history did so far
// (which pipelines exist, what is down), never from the fleet.
func Generate(seed uint64, n int) History {
	g := &generator{
		r:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		pipes: map[string]*genPipe{},
		down:  map[string]bool{}, paused: map[string]bool{},
		hubs: [2]bool{true, false},
		gone: map[string]bool{}, labelled: map[string]bool{}, shared: map[string]bool{}, exports: map[string]int{},
		cut: map[string]bool{}, slowAdmission: map[string]bool{}, aliased: map[string]bool{},
	}
	for len(g.ops) < 4*n && g.count < n {
		g.step()
		g.pace()
	}
	g.closeOut()
	return History{Name: fmt.Sprintf("seed-%d", seed), Seed: seed, Ops: g.ops}
}

// genPipe is the generator's belief about one pipeline (ops may fail; the checker uses what
// happened, this only keeps histories sensible).
type genPipe struct {
	identity   string
	placement  []string
	previous   []string
	terminated bool
	// selector: placed also by SelectorLabel.
	selector bool
	// life numbers the pipelines of one name, so that a restore takes only an export of the
	// live one.
	life int
	// failover is its failover placement (nil: placement and selector); runsOn where the model
	// believes it runs.
	failover *FailoverSpec
	runsOn   string
}

type generator struct {
	r      *rand.Rand
	ops    []Op
	count  int
	pipes  map[string]*genPipe
	down   map[string]bool
	paused map[string]bool
	hubs   [2]bool
	// restartDue counts ops until a dead hub fleet must be brought back.
	restartDue int
	// gone are the members out of the inventory, labelled those with SelectorLabel, shared
	// those whose source Secret names the shared database.
	gone, labelled, shared map[string]bool
	// exports are the Exports taken (member/name) and the life of the pipeline they saved.
	exports map[string]int
	// lives counts the pipelines created so far.
	lives int
	// handReaders: the history made a reader by hand, which the hub has StopBound to stop.
	handReaders bool
	// cut are the members partitioned from the hub, or whose path to it is slow.
	cut map[string]bool
	// slowAdmission are the members with a slow admission webhook.
	slowAdmission map[string]bool
	// aliased are the members registered a second time, under AliasOf.
	aliased map[string]bool
}

func (g *generator) emit(o Op) {
	g.ops = append(g.ops, o)
	g.count++
}

// choice is one kind of step and its weight, if it applies now.
type choice struct {
	weight int
	do     func()
}

func (g *generator) step() {
	if !g.hubs[0] && !g.hubs[1] {
		if g.restartDue--; g.restartDue <= 0 {
			g.startHub(g.r.IntN(2))
			return
		}
	}
	var cs []choice
	add := func(w int, ok bool, do func()) {
		if ok {
			cs = append(cs, choice{w, do})
		}
	}
	existing := g.existing()
	unused := g.unusedNames()
	add(12, len(unused) > 0, g.create)
	add(4, len(unused) >= 2, g.race)
	add(25, len(g.placeable()) > 0, g.place)
	add(6, len(existing) > 0, g.delete)
	add(5, len(existing) > 0 && len(unused) > 0, g.rename)
	add(4, len(existing) > 0, g.recreate)
	add(5, len(g.live(false)) > 0, g.terminate)
	add(4, len(existing) > 0, g.respec)
	add(5, len(g.live(true)) > 0, g.clear)
	add(5, len(g.up()) > 1 && len(g.down) < 2, g.stopMember)
	add(10, len(g.down) > 0, g.startMember)
	add(3, len(g.paused) == 0, g.pause)
	add(8, len(g.paused) > 0, g.resume)
	add(3, g.hubs[0] || g.hubs[1], g.killHub)
	add(8, !g.hubs[0] || !g.hubs[1], func() { g.startHub(g.pick2(!g.hubs[0], !g.hubs[1])) })
	add(3, g.hubs[0] || g.hubs[1], g.failover)
	add(2, g.hubs[0] || g.hubs[1], g.freezeHub)
	add(5, len(existing) > 0, g.hold)
	add(3, true, g.release)
	add(2, len(existing) > 0, g.hammer)
	g.handChoices(add)
	g.failoverChoices(add)
	g.slowChoices(add)
	total := 0
	for _, c := range cs {
		total += c.weight
	}
	k := g.r.IntN(total)
	for _, c := range cs {
		if k < c.weight {
			c.do()
			return
		}
		k -= c.weight
	}
}

// pace inserts a realistic pause: mostly short, sometimes long enough for the fleet to settle.
func (g *generator) pace() {
	switch k := g.r.IntN(100); {
	case k < 15:
		g.ops = append(g.ops, Wait{Millis: 2000 + g.r.IntN(4000)})
	case k < 30:
		// no pause: the next op races this one
	default:
		g.ops = append(g.ops, Wait{Millis: 100 + g.r.IntN(1400)})
	}
}

// closeOut ends the history: heal, and delete every pipeline. After a reader made by hand it
// first leaves the hub time to stop it, so that I5 rather than the deletion judges most.
func (g *generator) closeOut() {
	if g.handReaders {
		g.ops = append(g.ops, Wait{Millis: int(handSettle / time.Millisecond)})
	}
	g.ops = append(g.ops, Heal{}, Wait{Millis: 2000}, DeleteAll{})
}

func (g *generator) existing() []string {
	var out []string
	for _, n := range PipelineNames {
		if g.pipes[n] != nil {
			out = append(out, n)
		}
	}
	return out
}

func (g *generator) unusedNames() []string {
	var out []string
	for _, n := range PipelineNames {
		if g.pipes[n] == nil {
			out = append(out, n)
		}
	}
	return out
}

// live are existing pipelines whose termination is terminated.
func (g *generator) live(terminated bool) []string {
	var out []string
	for _, n := range g.existing() {
		if g.pipes[n].terminated == terminated {
			out = append(out, n)
		}
	}
	return out
}

func (g *generator) up() []string {
	var out []string
	for _, m := range Members {
		if !g.down[m] {
			out = append(out, m)
		}
	}
	return out
}

func (g *generator) pick(s []string) string { return s[g.r.IntN(len(s))] }

// pick2 picks index 0 or 1 among those allowed.
func (g *generator) pick2(ok0, ok1 bool) int {
	switch {
	case ok0 && ok1:
		return g.r.IntN(2)
	case ok1:
		return 1
	}
	return 0
}

// identity prefers one no pipeline uses (a duplicate goes to the webhook and is refused, unless
// bypassed); sometimes it reuses one on purpose.
func (g *generator) identity() string {
	used := map[string]bool{}
	for _, p := range g.pipes {
		used[p.identity] = true
	}
	var free []string
	for _, id := range Identities {
		if !used[id] {
			free = append(free, id)
		}
	}
	if len(free) > 0 && g.r.IntN(100) < 75 {
		return g.pick(free)
	}
	return g.pick(Identities)
}

// somePlacement is one member mostly, two sometimes, some named by an alias.
func (g *generator) somePlacement() []string {
	first := g.pick(Members)
	if g.r.IntN(100) < 20 {
		second := g.pick(Members)
		if second != first {
			return g.viaAliases(sortedCopy([]string{first, second}))
		}
	}
	return g.viaAliases([]string{first})
}

// viaAliases names some members of placement by their alias, where they have one: a third of
// them instead of the member's own name, a tenth beside it (one cluster named twice).
func (g *generator) viaAliases(placement []string) []string {
	var out []string
	for _, m := range placement {
		if !g.aliased[m] {
			out = append(out, m)
			continue
		}
		switch k := g.r.IntN(100); {
		case k < 33:
			out = append(out, AliasOf(m))
		case k < 43:
			out = append(out, m, AliasOf(m))
		default:
			out = append(out, m)
		}
	}
	return sortedCopy(out)
}

func (g *generator) create() {
	name := g.pick(g.unusedNames())
	o := Create{Name: name, Identity: g.identity(), Placement: g.somePlacement(), Bypass: g.r.IntN(100) < 20}
	o.Padded = isMySQL(o.Identity) && g.r.IntN(100) < 25
	if g.r.IntN(100) < 20 {
		o.Selector = true
		if g.r.IntN(100) < 60 {
			o.Placement = []string{}
		}
	}
	switch k := g.r.IntN(100); {
	case k < 25:
		o.Placement, o.Selector, o.Failover = nil, false, g.failoverSpec()
	case k < 40:
		o.Fenced = true
	}
	g.emit(o)
	if o.Bypass || !g.used(o.Identity) {
		g.pipes[name] = g.newPipe(o.Identity, o.Placement, o.Selector)
		g.pipes[name].failover = o.Failover
	} // else the webhook refuses it
}

// placeable are the existing pipelines a Place may change: not failover placements (the hub
// decides where those run).
func (g *generator) placeable() []string {
	var out []string
	for _, n := range g.existing() {
		if g.pipes[n].failover == nil {
			out = append(out, n)
		}
	}
	return out
}

func (g *generator) newPipe(identity string, placement []string, selector bool) *genPipe {
	g.lives++
	return &genPipe{identity: identity, placement: placement, selector: selector, life: g.lives}
}

// used tells whether an existing pipeline has identity id.
func (g *generator) used(id string) bool {
	for _, p := range g.pipes {
		if p.identity == id {
			return true
		}
	}
	return false
}

func (g *generator) race() {
	unused := g.unusedNames()
	g.r.Shuffle(len(unused), func(i, j int) { unused[i], unused[j] = unused[j], unused[i] })
	o := CreateRace{Names: sortedCopy(unused[:2]), Identity: g.identity(), Bypass: g.r.IntN(100) < 50}
	o.Padded = isMySQL(o.Identity) && g.r.IntN(100) < 40
	for range o.Names {
		o.Placements = append(o.Placements, g.somePlacement())
	}
	g.emit(o)
	for i, n := range o.Names {
		g.pipes[n] = g.newPipe(o.Identity, o.Placements[i], false)
	}
}

func (g *generator) place() {
	name := g.pick(g.placeable())
	p := g.pipes[name]
	next := g.nextPlacement(p)
	if !slices.Equal(next, p.previous) {
		next = g.viaAliases(next)
	}
	o := Place{Name: name, Placement: next, Selector: g.r.IntN(100) < 15}
	for _, m := range p.placement {
		if !slices.Contains(next, m) && g.down[m] && g.r.IntN(100) < 50 {
			o.ConfirmGone = append(o.ConfirmGone, m)
		}
	}
	g.emit(o)
	p.previous, p.placement, p.terminated, p.selector = p.placement, next, false, o.Selector
}

// nextPlacement draws a move, a flap back, an add, a removal or a swap keeping one member.
func (g *generator) nextPlacement(p *genPipe) []string {
	cur := p.placement
	others := diff(Members, cur)
	switch k := g.r.IntN(100); {
	case k < 20 && len(p.previous) > 0 && !slices.Equal(p.previous, cur):
		return p.previous
	case k < 55 && len(others) > 0:
		return []string{g.pick(others)}
	case k < 70 && len(others) > 0:
		return sortedCopy(append(slices.Clone(cur), g.pick(others)))
	case k < 82 && len(cur) >= 2:
		return diff(cur, []string{g.pick(cur)})
	case k < 90 && len(cur) >= 1 && len(others) > 0:
		return sortedCopy([]string{g.pick(cur), g.pick(others)})
	case k < 94:
		return []string{}
	}
	return g.somePlacement()
}

func (g *generator) delete() {
	name := g.pick(g.existing())
	g.emit(Delete{Name: name})
	delete(g.pipes, name)
}

// rename deletes a pipeline and creates another name with the same identity right away (what
// the docs tell users to do instead of changing the source).
func (g *generator) rename() {
	old := g.pick(g.existing())
	id := g.pipes[old].identity
	g.emit(Delete{Name: old})
	delete(g.pipes, old)
	g.ops = append(g.ops, Wait{Millis: g.r.IntN(500)})
	name := g.pick(g.unusedNames())
	o := Create{Name: name, Identity: id, Placement: g.somePlacement(), Bypass: g.r.IntN(100) < 10}
	o.Padded = isMySQL(id) && g.r.IntN(100) < 25
	g.emit(o)
	g.pipes[name] = g.newPipe(id, o.Placement, false)
}

// recreate deletes a pipeline and creates it again with the same name and identity.
func (g *generator) recreate() {
	name := g.pick(g.existing())
	id := g.pipes[name].identity
	g.emit(Delete{Name: name})
	g.ops = append(g.ops, Wait{Millis: g.r.IntN(1500)})
	o := Create{Name: name, Identity: id, Placement: g.somePlacement(), RetryMillis: 30000}
	o.Padded = isMySQL(id) && g.r.IntN(100) < 25
	g.emit(o)
	g.pipes[name] = g.newPipe(id, o.Placement, false)
}

// logLevels are what Respec sets: one of them changes the pod template, "" removes the field.
var logLevels = []string{"", "debug", "info", "warn"}

// respec changes a pipeline's spec without moving it: its coordinators roll, mid-move or not,
// and a termination is lifted.
func (g *generator) respec() {
	name := g.pick(g.existing())
	g.emit(Respec{Name: name, LogLevel: logLevels[g.r.IntN(len(logLevels))]})
	g.pipes[name].terminated = false
}

func (g *generator) terminate() {
	name := g.pick(g.live(false))
	g.emit(Terminate{Name: name})
	g.pipes[name].terminated = true
}

func (g *generator) clear() {
	name := g.pick(g.live(true))
	g.emit(Clear{Name: name})
	g.pipes[name].terminated = false
}

func (g *generator) stopMember() {
	m := g.pick(g.up())
	g.emit(StopMember{Member: m})
	g.down[m] = true
}

func (g *generator) startMember() {
	var down []string
	for _, m := range Members {
		if g.down[m] {
			down = append(down, m)
		}
	}
	m := g.pick(down)
	g.emit(StartMember{Member: m})
	delete(g.down, m)
}

func (g *generator) pause() {
	m := g.pick(Members)
	g.emit(PauseKubelet{Member: m})
	g.paused[m] = true
}

func (g *generator) resume() {
	for _, m := range Members {
		if g.paused[m] {
			g.emit(ResumeKubelet{Member: m})
			delete(g.paused, m)
			return
		}
	}
}

func (g *generator) killHub() {
	h := g.pick2(g.hubs[0], g.hubs[1])
	g.emit(KillHub{Hub: h})
	g.hubs[h] = false
	if !g.hubs[0] && !g.hubs[1] {
		g.restartDue = 1 + g.r.IntN(3)
	}
}

func (g *generator) startHub(h int) {
	g.emit(StartHub{Hub: h})
	g.hubs[h] = true
}

// failover leaves one hub running (the follower that took over); the model does not know which
// one led, so it keeps the one that is started for sure: the other of a single running hub.
func (g *generator) failover() {
	g.emit(Failover{})
	if g.hubs[0] && g.hubs[1] {
		return // one of them died; the model keeps both as possibly running: StartHub is then a no-op
	}
	g.hubs = [2]bool{!g.hubs[0], !g.hubs[1]}
}

// freezeHub freezes the leader past its leader Lease (15 s) while the other replica runs; the
// executor starts both first and restarts the frozen one once it left, so both run after it.
func (g *generator) freezeHub() {
	g.emit(FreezeHub{Millis: 18000 + 1000*g.r.IntN(9)})
	g.hubs = [2]bool{true, true}
}

func (g *generator) hold() {
	name := g.pick(g.existing())
	p := g.pipes[name]
	m := g.pick(Members)
	if len(p.placement) > 0 {
		m = g.pick(p.placement)
	}
	kinds := []string{"configmap", "service", "serviceaccount", "role", "statefulset"}
	g.emit(Hold{Member: m, Name: name, Object: g.pick(kinds)})
}

func (g *generator) release() {
	o := Release{}
	if g.r.IntN(100) < 60 {
		o.Member = g.pick(Members)
	}
	g.emit(o)
}

func (g *generator) hammer() {
	g.emit(Hammer{Name: g.pick(g.existing()), Millis: 1000 + g.r.IntN(3000)})
}

// diff is a minus b, keeping a's order.
func diff(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
