package chaos

import "slices"

// The generator's hands on members and on the inventory: what people do beside the hub.

// handChoices adds the steps of people's hands, the inventory and the source databases.
func (g *generator) handChoices(add func(w int, ok bool, do func())) {
	running := g.runningSomewhere()
	add(4, len(running) > 0, func() { g.scale(running) })
	add(3, len(running) > 0, func() { g.handPod(running) })
	add(2, len(running) > 0, func() { g.deleteSTS(running) })
	add(2, len(running) > 0, func() { g.editSTS(running) })
	add(4, len(running) > 0, func() { g.export(running) })
	restorable := g.restorable()
	add(8, len(restorable) > 0, func() { g.restore(restorable) })
	add(4, true, g.label)
	add(2, len(g.gone) == 0, g.deregister)
	add(8, len(g.gone) > 0, g.register)
	add(3, true, g.repoint)
	add(2, true, g.alias)
}

// placed is where the model believes p runs: its members and, with the selector, the labelled
// ones, of those in the inventory.
func (g *generator) placed(p *genPipe) []string {
	var out []string
	for _, m := range Members {
		if !g.gone[m] && (slices.Contains(p.placement, m) || (p.selector && g.labelled[m])) {
			out = append(out, m)
		}
	}
	return out
}

// runningSomewhere are the pipelines placed on some member.
func (g *generator) runningSomewhere() []string {
	var out []string
	for _, n := range g.existing() {
		if len(g.placed(g.pipes[n])) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// somewhere picks a pipeline of names and a member it is placed on.
func (g *generator) somewhere(names []string) (string, string) {
	name := g.pick(names)
	return name, g.pick(g.placed(g.pipes[name]))
}

func (g *generator) scale(names []string) {
	name, m := g.somewhere(names)
	replicas := 2
	if g.r.IntN(100) < 40 {
		replicas = 0
	} else {
		g.handReaders = true
	}
	g.emit(Scale{Member: m, Name: name, Replicas: replicas})
}

// handPod makes a reader by hand where the pipeline runs, or sometimes where it ran before (a
// member it may still be draining).
func (g *generator) handPod(names []string) {
	name, m := g.somewhere(names)
	if prev := g.pipes[name].previous; len(prev) > 0 && g.r.IntN(100) < 30 {
		m = g.pick(prev)
	}
	g.handReaders = true
	g.emit(HandPod{Member: m, Name: name})
}

func (g *generator) deleteSTS(names []string) {
	name, m := g.somewhere(names)
	g.emit(DeleteSTS{Member: m, Name: name, Orphan: g.r.IntN(100) < 50})
}

func (g *generator) editSTS(names []string) {
	name, m := g.somewhere(names)
	edit := EditTemplate
	if g.r.IntN(100) < 40 {
		edit = EditUnlabel
	}
	g.emit(EditSTS{Member: m, Name: name, Edit: edit})
}

func (g *generator) export(names []string) {
	name, m := g.somewhere(names)
	g.emit(Export{Member: m, Name: name})
	g.exports[exportKey(m, name)] = g.pipes[name].life
}

// restorable are the exports of live pipelines that could be restored in a member the pipeline
// is not placed on (the orphan case), as "member/name".
func (g *generator) restorable() []string {
	var out []string
	for _, n := range g.existing() {
		p := g.pipes[n]
		if len(g.placed(p)) == len(Members) {
			continue
		}
		for _, m := range Members {
			if life, ok := g.exports[exportKey(m, n)]; ok && life == p.life {
				out = append(out, exportKey(m, n))
			}
		}
	}
	slices.Sort(out)
	return out
}

// restore re-creates an export in a member the pipeline is not placed on: mostly where it was
// taken (a restore from a backup), sometimes in another (a re-applied export).
func (g *generator) restore(keys []string) {
	key := g.pick(keys)
	var from, name string
	for _, m := range Members {
		if len(key) > len(m) && key[:len(m)+1] == m+"/" {
			from, name = m, key[len(m)+1:]
		}
	}
	free := diff(Members, g.placed(g.pipes[name]))
	m := from
	if !slices.Contains(free, m) || g.r.IntN(100) < 30 {
		m = g.pick(free)
	}
	g.handReaders = true
	g.emit(Restore{Member: m, Name: name, From: from})
}

func (g *generator) label() {
	m := g.pick(Members)
	on := !g.labelled[m]
	g.emit(Label{Member: m, On: on})
	if !g.gone[m] {
		g.labelled[m] = on
	}
}

func (g *generator) deregister() {
	m := g.pick(Members)
	g.emit(Deregister{Member: m})
	g.gone[m] = true
}

func (g *generator) register() {
	for _, m := range Members {
		if g.gone[m] {
			g.emit(Register{Member: m})
			delete(g.gone, m)
			return
		}
	}
}

// alias registers a member a second time, or removes its alias.
func (g *generator) alias() {
	m := g.pick(Members)
	g.emit(Alias{Member: m, On: !g.aliased[m]})
	g.aliased[m] = !g.aliased[m]
}

// repoint points a member at the shared database, or back at its own.
func (g *generator) repoint() {
	m := g.pick(Members)
	o := Repoint{Member: m}
	if !g.shared[m] {
		o.DB = SharedDB
	}
	g.emit(o)
	g.shared[m] = o.DB == SharedDB
}
