package chaos

import (
	"slices"
	"sort"
	"time"
)

// What the ops say about where each pipeline is to run, which database each member reads, and
// when the hub could not act on a member: the checker's model of the world, derived from the ops
// alone (each change with the start and end of the op that made it).

// specChange is a change of a pipeline's spec.placement made by an op.
type specChange struct {
	Op       int
	Clusters []string
	Selector bool
	// Create: the pipeline's first placement.
	Create bool
}

// inventoryState is what the ops made of the members' inventory entries: gone (the member's own
// entry removed), labelled, aliased (registered a second time, under AliasOf).
type inventoryState struct {
	gone, labelled, aliased map[string]bool
}

// effective is the placement the hub resolves from spec c, as members (clusters): the named
// members and, with the selector, the labelled ones, of those in the inventory
// (placement.SelectMembers), and those named by an alias that is registered. A member named
// twice (by its name and its alias) runs the pipeline once.
func (s inventoryState) effective(c specChange) []string {
	out := []string{}
	for _, m := range Members {
		own := !s.gone[m] && (slices.Contains(c.Clusters, m) || (c.Selector && s.labelled[m]))
		if own || (s.aliased[m] && slices.Contains(c.Clusters, AliasOf(m))) {
			out = append(out, m)
		}
	}
	return out
}

// clustersOf is placement's names as members (an alias as the member it names), sorted, each
// once.
func clustersOf(placement []string) []string {
	out := make([]string, 0, len(placement))
	for _, n := range placement {
		out = append(out, clusterOf(n))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// apply changes the state as op o did, and tells whether it changed anything. A failed op
// changed nothing (Label, Deregister, Register and Alias fail only when the entry is not, or
// already, there); Heal registers every member again, and removes every alias.
func (s inventoryState) apply(o *OpRecord) bool {
	switch op := o.Op.(type) {
	case Label:
		if o.Err == "" && s.labelled[op.Member] != op.On {
			s.labelled[op.Member] = op.On
			return true
		}
	case Deregister:
		if o.Err == "" && !s.gone[op.Member] {
			s.gone[op.Member] = true
			return true
		}
	case Register:
		if o.Err == "" && s.gone[op.Member] {
			delete(s.gone, op.Member)
			return true
		}
	case Alias:
		if o.Err == "" && s.aliased[op.Member] != op.On {
			s.aliased[op.Member] = op.On
			return true
		}
	case Heal:
		changed := len(s.gone) > 0 || len(s.aliased) > 0
		clear(s.gone)
		clear(s.aliased)
		return changed
	}
	return false
}

// resolvePlacements turns each pipeline's spec changes and the inventory changes into its
// effective placements (pipelineFacts.Placements): a change is recorded when an op changed the
// spec, or changed the inventory so that the resolved placement differs.
func resolvePlacements(ops []OpRecord, pipes map[string]*pipelineFacts) {
	inv := inventoryState{gone: map[string]bool{}, labelled: map[string]bool{}, aliased: map[string]bool{}}
	next := map[string]int{}
	current := map[string]specChange{}
	sorted := sortedPipes(pipes)
	for i := range ops {
		o := &ops[i]
		changed := inv.apply(o)
		for _, f := range sorted {
			for next[f.UID] < len(f.specs) && f.specs[next[f.UID]].Op == o.Index {
				c := f.specs[next[f.UID]]
				next[f.UID]++
				current[f.UID] = c
				f.recordPlacement(o, inv.effective(c), c.Create)
			}
			c, placed := current[f.UID]
			if changed && placed && (f.DeleteOp == nil || f.DeleteOp.Index >= o.Index) {
				f.recordPlacement(o, inv.effective(c), false)
			}
		}
	}
}

// recordPlacement appends eff as the placement op o made, unless it is the placement already in
// force (always: the pipeline's first).
func (f *pipelineFacts) recordPlacement(o *OpRecord, eff []string, always bool) {
	if n := len(f.Placements); !always && n > 0 && slices.Equal(f.Placements[n-1].Members, eff) {
		return
	}
	f.Placements = append(f.Placements, placementChange{Op: o.Index, At: span{o.Start, o.End}, Members: eff})
}

// dbSegment: from From on, the member reads database DB, or an unknown one (Known false: while
// a repoint runs, and after one that failed).
type dbSegment struct {
	From  Stamp
	DB    string
	Known bool
}

// dbTimelines are, for each member, the databases its source Secret names over the history:
// its own at first, then what each Repoint set.
func dbTimelines(ops []OpRecord) map[string][]dbSegment {
	out := map[string][]dbSegment{}
	for _, m := range Members {
		out[m] = []dbSegment{{From: dawn, DB: m, Known: true}}
	}
	for _, o := range ops {
		r, ok := o.Op.(Repoint)
		if !ok {
			continue
		}
		out[r.Member] = append(out[r.Member], dbSegment{From: o.Start})
		if o.Err == "" {
			db := r.DB
			if db == "" {
				db = r.Member
			}
			out[r.Member] = append(out[r.Member], dbSegment{From: o.End, DB: db, Known: true})
		}
	}
	return out
}

// dbAt is the segment of timeline tl in force at t.
func dbAt(tl []dbSegment, t Stamp) dbSegment {
	k := sort.Search(len(tl), func(i int) bool { return tl[i].From > t }) - 1
	if k < 0 {
		return dbSegment{}
	}
	return tl[k]
}

// sharing is a span during which two members surely read one database; Began is when they
// started to (dawn: from the start).
type sharing struct {
	In    span
	Began Stamp
}

// sharedDB are the spans during which members a and b surely read the same database.
func sharedDB(tls map[string][]dbSegment, a, b string) []sharing {
	var cuts []Stamp
	for _, s := range append(slices.Clone(tls[a]), tls[b]...) {
		cuts = append(cuts, s.From)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var out []sharing
	for i, t := range cuts {
		end := forever
		if i+1 < len(cuts) {
			end = cuts[i+1]
		}
		x, y := dbAt(tls[a], t), dbAt(tls[b], t)
		if !x.Known || !y.Known || x.DB != y.DB {
			continue
		}
		if n := len(out); n > 0 && out[n-1].In.to == t {
			out[n-1].In.to = end
			continue
		}
		out = append(out, sharing{In: span{t, end}, Began: t})
	}
	return out
}

// hubTakeover is how long after a hub process is killed or started the fleet may take to have a
// leader acting again: the leader election retry, the caches' first sync.
const hubTakeover = 15 * time.Second

// blockedSpans are the spans during which the hub could not act on member m for pipeline f (nil:
// for no pipeline in particular): the member down or out of the inventory (and MemberRecover
// after it came back), the alias that placed f there removed (f is orphaned there until the
// alias is back), slow (its writes may time out: a slow path or admission webhook, and
// MemberRecover after), its kubelet paused (a pod cannot finish terminating), a foreign
// finalizer on one of f's objects there, no hub process running or one taking over, and f
// terminated (the hub writes nothing for it).
func blockedSpans(rec *Recording, m string, f *pipelineFacts) []span {
	var out []span
	open := map[string]Stamp{}
	var names entryState
	for _, o := range rec.Ops {
		bs := blocks(o, m, f, rec.Bounds)
		if more, ok := aliasBlocks(o, m, f, names, rec.Bounds); ok {
			bs = append(bs, more...)
		}
		names = names.after(o, m)
		for _, b := range bs {
			from, opened := open[b.key]
			switch {
			case b.begin && !opened:
				open[b.key] = b.at
			case !b.begin && opened:
				out = append(out, span{from, b.at})
				delete(open, b.key)
			}
		}
		switch o.Op.(type) {
		case KillHub, StartHub, Failover, KillHubWhen:
			out = append(out, span{o.Start, o.End + hubTakeover})
		}
	}
	for _, from := range open {
		out = append(out, span{from, forever})
	}
	for _, d := range hubDown(rec.Ops) {
		out = append(out, span{d.from, d.to + hubTakeover})
	}
	if f != nil {
		out = append(out, terminatedSpans(rec.Ops, f.UID)...)
	}
	return mergeSpans(out)
}

// block begins (or ends) at At a span of kind key during which the hub cannot act on a member.
type block struct {
	key   string
	begin bool
	at    Stamp
}

// blocks are the blocks op o begins or ends on member m for pipeline f.
func blocks(o OpRecord, m string, f *pipelineFacts, b Bounds) []block {
	switch op := o.Op.(type) {
	case StopMember, PauseKubelet, Partition:
		if memberOf(op) == m {
			return []block{{key: op.Kind(), begin: true, at: o.Start}}
		}
	case SlowPath, SlowAdmission:
		if memberOf(op) == m && mayTimeOut(op, b.MemberTimeout) {
			return []block{{key: op.Kind(), begin: true, at: o.Start}}
		}
	case DropAdmission:
		if op.Member == m && o.Err == "" {
			return []block{{key: SlowAdmission{}.Kind(), at: o.End + b.MemberRecover + webhookMaxHold}}
		}
	case StartMember:
		if op.Member == m {
			return []block{{key: StopMember{}.Kind(), at: o.End + b.MemberRecover}}
		}
	case Register:
		if op.Member == m {
			return []block{{key: Deregister{}.Kind(), at: o.End + b.MemberRecover}}
		}
	case Reconnect:
		if op.Member == m {
			return []block{{key: Partition{}.Kind(), at: o.End + b.MemberRecover}, {key: SlowPath{}.Kind(), at: o.End + b.MemberRecover}}
		}
	case ResumeKubelet:
		if op.Member == m {
			return []block{{key: PauseKubelet{}.Kind(), at: o.End + b.MemberTimeout}}
		}
	case Hold:
		if op.Member == m && f != nil && op.Name == f.Name {
			return []block{{key: op.Kind(), begin: true, at: o.Start}}
		}
	case Release:
		if op.Member == "" || op.Member == m {
			return []block{{key: Hold{}.Kind(), at: o.End}}
		}
	case Heal:
		return []block{{key: StopMember{}.Kind(), at: o.End + b.MemberRecover}, {key: Deregister{}.Kind(), at: o.End + b.MemberRecover},
			{key: PauseKubelet{}.Kind(), at: o.End + b.MemberTimeout}, {key: Hold{}.Kind(), at: o.End},
			{key: Partition{}.Kind(), at: o.End + b.MemberRecover}, {key: SlowPath{}.Kind(), at: o.End + b.MemberRecover},
			{key: SlowAdmission{}.Kind(), at: o.End + b.MemberRecover + webhookMaxHold},
			{key: Alias{}.Kind(), at: o.End + b.MemberRecover}}
	}
	return nil
}

// entryState is what the ops made of one member's inventory entries so far: its own removed
// (gone), its alias registered (aliased).
type entryState struct{ gone, aliased bool }

// after is the state once op o ran (a failed op changed nothing; Heal registers the member
// again and removes its alias).
func (s entryState) after(o OpRecord, m string) entryState {
	if o.Err != "" {
		return s
	}
	switch op := o.Op.(type) {
	case Deregister:
		s.gone = s.gone || op.Member == m
	case Register:
		s.gone = s.gone && op.Member != m
	case Alias:
		if op.Member == m {
			s.aliased = op.On
		}
	case Heal:
		s = entryState{}
	}
	return s
}

// aliasBlocks are the blocks an op that removes member m's own entry or changes its alias
// begins or ends for pipeline f (nil: for no pipeline in particular), given the entries before
// it; ok is false for other ops. The hub reaches m for a pipeline that names m's registered
// alias whatever becomes of m's own entry (the documented rename), and leaves a pipeline
// orphaned on m when the last name it reached m by goes: its own entry, or its alias (removed
// by an op, or by Heal).
func aliasBlocks(o OpRecord, m string, f *pipelineFacts, was entryState, b Bounds) (bs []block, ok bool) {
	viaAlias := f != nil && f.namesAt(o.Index, AliasOf(m))
	byOwnName := f != nil && f.namesAt(o.Index, m)
	switch op := o.Op.(type) {
	case Deregister:
		if op.Member == m && (!was.aliased || !viaAlias) {
			bs = []block{{key: op.Kind(), begin: true, at: o.Start}}
		}
		return bs, true
	case Alias:
		switch {
		case op.Member != m || o.Err != "":
		case op.On:
			bs = []block{{key: op.Kind(), at: o.End + b.MemberRecover}}
		case was.aliased && (f == nil || (viaAlias && (!byOwnName || was.gone))):
			bs = []block{{key: op.Kind(), begin: true, at: o.Start}}
		}
		return bs, true
	case Register:
		// Registered again, m is reached by its own name by a pipeline that names it.
		if op.Member == m && o.Err == "" && byOwnName {
			bs = []block{{key: Alias{}.Kind(), at: o.End + b.MemberRecover}}
		}
		return bs, true
	case Place:
		// A new placement while m's own entry is gone: reachable through the alias or not.
		if f == nil || !was.gone || !slices.ContainsFunc(o.Pipelines, func(r PipelineRef) bool { return r.UID == f.UID }) {
			return nil, true
		}
		if was.aliased && viaAlias {
			return []block{{key: Deregister{}.Kind(), at: o.End + b.MemberRecover}}, true
		}
		return []block{{key: Deregister{}.Kind(), begin: true, at: o.Start}}, true
	case Heal:
		// Heal removes every alias, the one that alone placed f on m included.
		if viaAlias && !byOwnName {
			bs = []block{{key: Alias{}.Kind(), begin: true, at: o.Start}}
		}
		return bs, true
	}
	return nil, false
}

// namesAt tells whether the spec in force at op index op (the last one an op up to it made)
// names name.
func (f *pipelineFacts) namesAt(op int, name string) bool {
	named := false
	for _, c := range f.specs {
		if c.Op <= op {
			named = slices.Contains(c.Clusters, name)
		}
	}
	return named
}

// memberOf is the member of an op that begins a block.
func memberOf(o Op) string {
	switch o := o.(type) {
	case StopMember:
		return o.Member
	case PauseKubelet:
		return o.Member
	case Partition:
		return o.Member
	case SlowPath:
		return o.Member
	case SlowAdmission:
		return o.Member
	}
	return ""
}

// terminatedSpans are the spans from each termination of pipeline uid to the start of the op
// that lifted it.
func terminatedSpans(ops []OpRecord, uid string) []span {
	var out []span
	for i := range ops {
		o := &ops[i]
		if _, ok := o.Op.(Terminate); !ok || len(o.Pipelines) == 0 || o.Pipelines[0].UID != uid {
			continue
		}
		s := span{o.Start, forever}
		for j := i + 1; j < len(ops); j++ {
			if lifts(&ops[j], uid) {
				s.to = ops[j].Start
				break
			}
		}
		out = append(out, s)
	}
	return out
}

// mergeSpans sorts spans and merges those that overlap.
func mergeSpans(in []span) []span {
	s := slices.Clone(in)
	sort.Slice(s, func(i, j int) bool { return s[i].from < s[j].from })
	var out []span
	for _, x := range s {
		if x.empty() {
			continue
		}
		if n := len(out); n > 0 && x.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, x.to)
			continue
		}
		out = append(out, x)
	}
	return out
}

// deadline is from + bound, pushed back by every moment of blocked (merged) within it: forever
// when a blocked span that never ends reaches it.
func deadline(from Stamp, bound time.Duration, blocked []span) Stamp {
	d := from + bound
	for range 64 {
		var extra time.Duration
		for _, s := range blocked {
			o := s.overlap(span{from, d})
			if o.empty() {
				continue
			}
			if s.to >= forever {
				return forever
			}
			extra += o.to - o.from
		}
		next := from + bound + extra
		if next == d {
			return d
		}
		d = next
	}
	return d
}
