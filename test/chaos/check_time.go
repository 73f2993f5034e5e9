package chaos

import (
	"fmt"
	"slices"
	"time"
)

// terminalWindow is when pipeline UID must see no member write: from the moment the hub must
// know of the termination until the op that lifts it starts.
type terminalWindow struct {
	UID, Name string
	Op        int
	In        span
	// Why says how the window's start was set.
	Why string
	// Late are later starts for the writes a slow member may commit late (lateTerminal).
	Late []lateStart
}

// terminalWindows derives the windows of I3 from the ops. A termination is known to the hub
// once it acknowledged it (its status write recording the generation, committed for sure) and
// at the latest one --member-timeout after the termination was written: a reconcile that read
// the pipeline just before the termination may finish its member writes within that bound, and
// none after. The window closes when the op that clears it starts: a Clear, a spec change, or
// the pipeline's deletion (deletion precedence). A member that commits writes late (a slow path
// or admission webhook) opens it later for its writes, by how late (lateTerminal).
func terminalWindows(cc *checkContext) []terminalWindow {
	var out []terminalWindow
	ops := cc.rec.Ops
	slow := slowSpans(ops)
	for i := range ops {
		o := &ops[i]
		if _, ok := o.Op.(Terminate); !ok || o.Err != "" || len(o.Pipelines) == 0 {
			continue
		}
		ref := o.Pipelines[0]
		w := terminalWindow{UID: ref.UID, Name: ref.Name, Op: o.Index, In: span{o.End + cc.rec.Bounds.MemberTimeout, forever},
			Why: fmt.Sprintf("termination written at %s + --member-timeout %s", stampString(o.End), cc.rec.Bounds.MemberTimeout)}
		if ack, ok := cc.termAck(ref); ok && ack < w.In.from {
			w.In.from = ack
			w.Why = "the hub acknowledged the termination (status.terminated.observedGeneration) by " + stampString(ack)
		}
		for j := range ops {
			// A hub frozen before the window opened holds a reconcile that may have read the
			// pipeline before the termination: it may finish once let go on.
			if _, ok := ops[j].Op.(FreezeHub); ok && ops[j].Start < w.In.from && ops[j].End+cc.rec.Bounds.MemberTimeout > w.In.from && ops[j].End > o.Start {
				w.In.from = ops[j].End + cc.rec.Bounds.MemberTimeout
				w.Why = fmt.Sprintf("a hub frozen at %s, let go on at %s, + --member-timeout %s", stampString(ops[j].Start), stampString(ops[j].End), cc.rec.Bounds.MemberTimeout)
			}
		}
		lateTerminal(&w, o, slow, cc.rec.Bounds)
		for j := i + 1; j < len(ops); j++ {
			if lifts(&ops[j], ref.UID) {
				w.In.to = ops[j].Start
				break
			}
		}
		out = append(out, w)
	}
	return out
}

// termAck is the moment the hub's acknowledgement of the termination written at ref.RV was
// surely committed.
func (cc *checkContext) termAck(ref PipelineRef) (Stamp, bool) {
	for _, e := range cc.rec.Events {
		if e.Kind == kindPipelines && e.Obj.UID == ref.UID && e.Obj.RV > ref.RV && e.Obj.Pipeline != nil &&
			e.Obj.Pipeline.Terminated && e.Obj.Pipeline.TermGeneration != 0 {
			return cc.clocks[hubCluster].before(e.RVHi), true
		}
	}
	return 0, false
}

// lifts tells whether op o ends a termination of pipeline uid.
func lifts(o *OpRecord, uid string) bool {
	for _, ref := range o.Pipelines {
		if ref.UID != uid {
			continue
		}
		switch o.Op.(type) {
		case Clear, Delete, DeleteAll:
			return true
		case Place, Respec:
			return ref.SpecChanged
		}
	}
	return false
}

// checkTerminalWrites (I3): no write by the hub to a member object of a terminated pipeline was
// surely committed inside its terminal window. The writes of one window to one member make one
// violation (a tombstone replay deletes eight objects at once), each write in its evidence.
func checkTerminalWrites(cc *checkContext, res *Result) {
	for _, w := range terminalWindows(cc) {
		sure := map[string][]string{}
		window := map[string]string{}
		var clusters []string
		for _, e := range cc.rec.Events {
			if !e.HubWrite || e.Obj.PipelineUID != w.UID {
				continue
			}
			clk := cc.clocks[e.Cluster]
			at := span{clk.after(e.RVLo), clk.before(e.RVHi)}
			if cc.byHand(e.Obj.UID, at) {
				continue
			}
			in, why := w.at(e.Cluster, e.Kind)
			switch {
			case at.from >= in.from && at.to <= in.to:
				if sure[e.Cluster] == nil {
					clusters = append(clusters, e.Cluster)
					window[e.Cluster] = fmt.Sprintf("terminal window %s: %s", in, why)
				}
				sure[e.Cluster] = append(sure[e.Cluster], fmt.Sprintf("%s %s %s/%s at revision %s, committed during %s (event received at %s)",
					e.Type, e.Kind, e.Obj.Namespace, e.Obj.Name, rvRange(e.RVLo, e.RVHi), at, stampString(e.Recv)))
			case !at.overlap(in).empty():
				res.Notes = append(res.Notes, fmt.Sprintf("%s: a write to %s %s in %s for %s at %s may fall in its terminal window %s (not proven)",
					InvTerminalWrite, e.Kind, e.Obj.Name, e.Cluster, w.Name, at, in))
			}
		}
		for _, c := range clusters {
			res.Violations = append(res.Violations, Violation{
				Invariant: InvTerminalWrite,
				Summary: fmt.Sprintf("the hub wrote %d object(s) in %s for pipeline %s while it was terminated (op #%02d)",
					len(sure[c]), c, w.Name, w.Op),
				Evidence: append([]string{window[c]}, sure[c]...),
			})
		}
	}
}

// byHand tells whether a write to member object uid committed during at may be a person's: an
// op of people's hands wrote that object while it ran.
func (cc *checkContext) byHand(uid string, at span) bool {
	for _, o := range cc.rec.Ops {
		if isHand(o.Op) && slices.Contains(o.Touched, uid) && !at.overlap(span{o.Start, o.End}).empty() {
			return true
		}
	}
	return false
}

// hubDown are the spans during which no hub process ran, counted generously (from the start of
// the op that killed the last one to the end of the op that started one) so that I4 never blames
// the hub for time it was not there; a frozen leader counts as none, until the other has taken
// over.
func hubDown(ops []OpRecord) []span {
	var out []span
	var from Stamp
	down := false
	for _, o := range ops {
		if _, ok := o.Op.(FreezeHub); ok {
			out = append(out, span{o.Start, o.End + hubTakeover})
		}
		before, after := anyHub(o.HubsBefore), anyHub(o.HubsAfter)
		switch {
		case before && !after && !down:
			from, down = o.Start, true
		case !before && after && down:
			out = append(out, span{from, o.End})
			down = false
		}
	}
	if down {
		out = append(out, span{from, forever})
	}
	return mergeSpans(out)
}

func anyHub(h [2]bool) bool { return h[0] || h[1] }

// downWithin is how long no hub ran during s.
func downWithin(down []span, s span) time.Duration {
	var d time.Duration
	for _, x := range down {
		if o := x.overlap(s); !o.empty() {
			d += o.to - o.from
		}
	}
	return d
}

// checkDeletions (I4): a deletion completes within --tombstone-grace plus the bound, counted from
// the end of the op that requested it to the moment its removal from the hub was surely
// committed, minus the time no hub ran. A pipeline still present when the history settled
// counts until then.
func checkDeletions(cc *checkContext, res *Result) {
	limit := cc.rec.Bounds.TombstoneGrace + cc.rec.Bounds.DeleteSlack
	down := hubDown(cc.rec.Ops)
	live := map[string]bool{}
	for _, p := range cc.rec.Final.Pipelines {
		live[p.UID] = true
	}
	for _, f := range sortedPipes(cc.pipes) {
		if f.DeleteOp == nil {
			continue
		}
		done, how := cc.deletedAt(f.UID)
		if !how && !live[f.UID] {
			continue // gone, but its deletion was not seen: nothing to prove
		}
		if !how {
			done = cc.rec.Settled
		}
		from := f.DeleteOp.End
		took := done - from - downWithin(down, span{from, done})
		if took > limit {
			state := "its removal was committed after " + stampString(done)
			if !how {
				state = "still on the hub when the history settled at " + stampString(done)
			}
			res.Violations = append(res.Violations, Violation{
				Invariant: InvDeletion,
				Summary: fmt.Sprintf("deleting pipeline %s took at least %s (hub down time excluded), more than --tombstone-grace %s + %s",
					pipeName(f), took.Round(time.Millisecond), cc.rec.Bounds.TombstoneGrace, cc.rec.Bounds.DeleteSlack),
				Evidence: []string{fmt.Sprintf("deletion requested by op #%02d (%s), returned at %s; %s; hub down %s of it",
					f.DeleteOp.Index, f.DeleteOp.Op, stampString(from), state, downWithin(down, span{from, done}).Round(time.Millisecond))},
			})
		}
	}
}

// deletedAt is the earliest moment the pipeline's removal from the hub is known to have been
// committed after, and whether it was seen at all.
func (cc *checkContext) deletedAt(uid string) (Stamp, bool) {
	for _, e := range cc.rec.Events {
		if e.Kind == kindPipelines && e.Type == Deleted && e.Obj.UID == uid {
			return cc.clocks[hubCluster].after(e.RVLo), true
		}
	}
	return 0, false
}

// Counts tallies violations per invariant.
func (r Result) Counts() map[string]int {
	out := map[string]int{}
	for _, v := range r.Violations {
		out[v.Invariant]++
	}
	return out
}

// Failed tells whether the result has violations.
func (r Result) Failed() bool { return len(r.Violations) > 0 }
