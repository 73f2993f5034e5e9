package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The invariants of one pipeline's own readers and of people's hands on members: two readers of
// one pipeline never read one database at once (I1 one reader per database), and a reader a
// person made, or one left where the placement no longer is, is stopped in bounded time (I5).

// handMark says which op of a person made a reader, and by when the hub must have stopped it.
type handMark struct {
	Op       int
	Kind     string
	End      Stamp
	Deadline Stamp
}

// markHands marks the readers people's ops made: the pod a HandPod created, the pods of a
// StatefulSet a Restore created, and the pods beyond the first of a StatefulSet a Scale asked for
// two or more replicas of (created after the scale began). Each is the hub's to stop within
// StopBound of the op's end, not counting the time it could not act on that member.
func (cc *checkContext) markHands() {
	for i := range cc.rec.Ops {
		o := &cc.rec.Ops[i]
		var member string
		var made func(p *podLife) bool
		switch op := o.Op.(type) {
		case HandPod:
			member = op.Member
			made = func(p *podLife) bool { return slices.Contains(o.Touched, p.UID) }
		case Restore:
			member = op.Member
			made = func(p *podLife) bool { return slices.Contains(o.Touched, p.Owner) }
		case Scale:
			if op.Replicas < 2 {
				continue
			}
			member = op.Member
			made = func(p *podLife) bool {
				return slices.Contains(o.Touched, p.Owner) && ordinal(p.Name) >= 1 && o.Start <= p.Sure.from
			}
		default:
			continue
		}
		for _, p := range cc.pods {
			if p.Cluster != member || !made(p) {
				continue
			}
			f := cc.pipes[p.Pipeline]
			p.hand = &handMark{Op: o.Index, Kind: o.Op.Kind(), End: o.End,
				Deadline: deadline(o.End, cc.rec.Bounds.StopBound, blockedSpans(cc.rec, member, f))}
		}
	}
}

// ordinal is the StatefulSet ordinal a pod's name ends with (-1 when none).
func ordinal(name string) int {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}

// entryKey names a reader-lease entry of pipeline uid for cluster.
func entryKey(uid, cluster string) string { return uid + "/" + cluster }

// leaseEntrySpans are, for every (pipeline UID, cluster), the spans during which a reader lease
// surely held an entry of it: from the moment a version holding it was surely committed until
// the earliest moment the next version without it may have been.
func leaseEntrySpans(rec *Recording, hub *clock) map[string][]span {
	versions := map[string][]Event{}
	for _, e := range rec.Events {
		if e.Kind == kindLeases {
			versions[e.Obj.UID] = append(versions[e.Obj.UID], e)
		}
	}
	out := map[string][]span{}
	for _, vs := range versions {
		sort.SliceStable(vs, func(i, j int) bool { return vs[i].RVHi < vs[j].RVHi })
		open := map[string]Stamp{}
		for _, v := range vs {
			now := map[string]bool{}
			if v.Type != Deleted {
				for _, e := range v.Obj.Entries {
					now[entryKey(e.PipelineUID, e.Cluster)] = true
				}
			}
			for k, from := range open {
				if !now[k] {
					out[k] = append(out[k], span{from, hub.after(v.RVLo)})
					delete(open, k)
				}
			}
			for k := range now {
				if _, ok := open[k]; !ok {
					open[k] = hub.before(v.RVHi)
				}
			}
		}
		for k, from := range open {
			out[k] = append(out[k], span{from, forever})
		}
	}
	return out
}

// entryWithin tells whether a reader lease surely held an entry of pipeline uid for cluster at
// some moment of s.
func (cc *checkContext) entryWithin(uid, cluster string, s span) bool {
	for _, e := range cc.entries[entryKey(uid, cluster)] {
		if !e.overlap(s).empty() {
			return true
		}
	}
	return false
}

// checkOneDB (I1): two readers of one pipeline never surely existed at once where they read one
// database: in one member, or in two members whose source Secrets surely named one database
// then (the identity rule of a multi-member placement, docs/architecture.md). When a repointed
// Secret makes two members the pipeline is placed on share a database, the hub may have started
// both on what it read before: it has RepointBound to stop one (it reads the Secrets again every
// --secret-recheck-interval). Readers a person made count from their deadline. Each pipeline and
// pair of members makes one violation.
func checkOneDB(cc *checkContext, res *Result) {
	dbs := dbTimelines(cc.rec.Ops)
	type pairKey struct{ uid, a, b string }
	found := map[pairKey]*Violation{}
	var order []pairKey
	for i, p := range cc.pods {
		for _, q := range cc.pods[i+1:] {
			f := cc.pipes[p.Pipeline]
			if f == nil || p.Pipeline != q.Pipeline || p.UID == q.UID || excused(p, f) || excused(q, f) {
				continue
			}
			a, b := p, q
			if a.Cluster > b.Cluster {
				a, b = b, a
			}
			for _, s := range cc.sharedSpans(dbs, f, a, b) {
				both := a.judged().overlap(b.judged()).overlap(s)
				if both.empty() {
					if maybe := a.judgedMaybe().overlap(b.judgedMaybe()).overlap(s); !maybe.empty() {
						res.Notes = append(res.Notes, fmt.Sprintf("%s: %s in %s and %s may have overlapped during %s (not proven)",
							InvOneDB, pipeName(f), a.Cluster, b.Cluster, maybe))
					}
					continue
				}
				k := pairKey{f.UID, a.Cluster, b.Cluster}
				if found[k] == nil {
					where := "in " + a.Cluster
					if a.Cluster != b.Cluster {
						where = fmt.Sprintf("in %s and %s, which read one database", a.Cluster, b.Cluster)
					}
					found[k] = &Violation{Invariant: InvOneDB,
						Summary:  fmt.Sprintf("pipeline %s had two readers at once %s", pipeName(f), where),
						Evidence: []string{"placements: " + placementsString(f)}}
					order = append(order, k)
				}
				found[k].Evidence = append(found[k].Evidence, fmt.Sprintf("during %s: %s", both, a), "    and "+b.String())
			}
		}
	}
	for _, k := range order {
		res.Violations = append(res.Violations, *found[k])
	}
}

// sharedSpans are the spans during which readers a and b of pipeline f read one database, less
// the RepointBound after a repoint made them share one while f was placed on both members.
func (cc *checkContext) sharedSpans(dbs map[string][]dbSegment, f *pipelineFacts, a, b *podLife) []span {
	if a.Cluster == b.Cluster {
		return []span{{dawn, forever}}
	}
	var out []span
	for _, s := range sharedDB(dbs, a.Cluster, b.Cluster) {
		in := s.In
		if s.Began > dawn && cc.placedWithin(f, a.Cluster, span{s.Began, s.Began}) && cc.placedWithin(f, b.Cluster, span{s.Began, s.Began}) {
			in.from = max(in.from, s.Began+cc.rec.Bounds.RepointBound)
		}
		if !in.empty() {
			out = append(out, in)
		}
	}
	return out
}

// checkStopped (I5): a reader is stopped in bounded time where it has no business: one a person
// made (a pod made by hand, a scaled StatefulSet's extra pod, a restored StatefulSet's pod, unless
// the placement came back to that member meanwhile) by its deadline, and one in a member the
// placement left within StopBound of the change. Both deadlines leave out the time the hub could
// not act on the member (blockedSpans); a deadline after the pipeline's deletion began, or after
// the history settled, is not judged here (I2 and I4 judge deletions).
func checkStopped(cc *checkContext, res *Result) {
	for _, p := range cc.pods {
		f := cc.pipes[p.Pipeline]
		if f == nil || p.hand == nil || excused(p, f) {
			continue
		}
		if p.hand.Kind == "restore" && cc.placedWithin(f, p.Cluster, span{p.hand.End, p.hand.Deadline}) {
			continue
		}
		if cc.judgeable(f, p.hand.Deadline) && p.Sure.to > p.hand.Deadline {
			res.Violations = append(res.Violations, Violation{Invariant: InvStopped,
				Summary: fmt.Sprintf("pipeline %s kept a reader made by hand (op #%02d, %s) in %s past %s",
					pipeName(f), p.hand.Op, p.hand.Kind, p.Cluster, stampString(p.hand.Deadline)),
				Evidence: []string{"placements: " + placementsString(f), p.String()}})
		}
	}
	for _, f := range sortedPipes(cc.pipes) {
		for _, l := range departures(f) {
			d := deadline(l.In.from, cc.rec.Bounds.StopBound, blockedSpans(cc.rec, l.Member, f))
			if d >= l.In.to || !cc.judgeable(f, d) {
				continue
			}
			for _, p := range cc.podsOf(f.UID, l.Member) {
				if p.hand != nil || excused(p, f) || p.Sure.to <= d || p.Sure.from >= l.In.to {
					continue
				}
				res.Violations = append(res.Violations, Violation{Invariant: InvStopped,
					Summary: fmt.Sprintf("pipeline %s left %s (op #%02d) and its reader there still ran after %s",
						pipeName(f), l.Member, l.Op, stampString(d)),
					Evidence: []string{"placements: " + placementsString(f), p.String()}})
			}
		}
	}
}

// judgeable tells whether a deadline falls before the pipeline's deletion began and before the
// history settled.
func (cc *checkContext) judgeable(f *pipelineFacts, d Stamp) bool {
	if f.DeleteOp != nil && d >= f.DeleteOp.Start {
		return false
	}
	return d < cc.rec.Settled
}

// placedWithin tells whether member was in f's placement at some moment of s.
func (cc *checkContext) placedWithin(f *pipelineFacts, member string, s span) bool {
	for i, ch := range f.Placements {
		end := forever
		if i+1 < len(f.Placements) {
			end = f.Placements[i+1].At.to
		}
		if in := (span{ch.At.from, end}); slices.Contains(ch.Members, member) && !in.overlap(s).empty() {
			return true
		}
	}
	return false
}

// departure is a span during which member was out of a placement it had been in: from the end of
// the op that left it to the start of the op that brought it back.
type departure struct {
	Member string
	Op     int
	In     span
}

// departures are f's departures, each member's in time order.
func departures(f *pipelineFacts) []departure {
	var out []departure
	in := map[string]bool{}
	open := map[string]*departure{}
	for _, ch := range f.Placements {
		for _, m := range Members {
			now := slices.Contains(ch.Members, m)
			switch {
			case in[m] && !now:
				open[m] = &departure{Member: m, Op: ch.Op, In: span{ch.At.to, forever}}
			case !in[m] && now && open[m] != nil:
				open[m].In.to = ch.At.from
				out = append(out, *open[m])
				delete(open, m)
			}
			in[m] = now
		}
	}
	for _, m := range Members {
		if open[m] != nil {
			out = append(out, *open[m])
		}
	}
	return out
}

// handExcuse tells whether what pipeline uid left in member after it was deleted came from a
// person's HandPod or Restore that the hub had no time to find: the deletion began before the
// op's deadline, and no reader lease surely named the member for the pipeline after the op (the
// deletion empties the members its lease names; the rest are orphans, reported, never deleted).
func (cc *checkContext) handExcuse(uid, member string) (string, bool) {
	f := cc.pipes[uid]
	if f == nil || f.DeleteOp == nil {
		return "", false
	}
	for _, o := range cc.rec.Ops {
		var name string
		switch op := o.Op.(type) {
		case HandPod:
			if op.Member == member {
				name = op.Name
			}
		case Restore:
			if op.Member == member {
				name = op.Name
			}
		}
		if name != f.Name || len(o.Touched) == 0 {
			continue
		}
		d := deadline(o.End, cc.rec.Bounds.StopBound, blockedSpans(cc.rec, member, f))
		if f.DeleteOp.Start < d && !cc.entryWithin(uid, member, span{o.End, forever}) {
			return fmt.Sprintf("op #%02d (%s) ended at %s, the deletion began at %s, before its deadline %s, and no lease entry named %s after it",
				o.Index, o.Op.Kind(), stampString(o.End), stampString(f.DeleteOp.Start), stampString(d), member), true
		}
	}
	return "", false
}
