package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// InvFailover is the liveness check of failover placements.
const InvFailover = "I6 failover without a person"

// failoverMember is one version of status.failover.member, committed within At.
type failoverMember struct {
	At     span
	Member string
}

// failoverMembers are the versions of pipeline uid's status.failover.member the hub stored, in
// revision order (unchanged ones left out).
func failoverMembers(rec *Recording, hub *clock, uid string) []failoverMember {
	var out []failoverMember
	for _, e := range rec.Events {
		if e.Kind != kindPipelines || e.Obj.UID != uid || e.Type == Deleted || e.Obj.Pipeline == nil {
			continue
		}
		m := e.Obj.Pipeline.FailoverMember
		if n := len(out); n > 0 && out[n-1].Member == m {
			continue
		}
		out = append(out, failoverMember{At: span{hub.after(e.RVLo), e.Recv}, Member: m})
	}
	return out
}

// loss is a stretch during which the hub surely could not reach Member: from the end of the op
// that cut it (a stopped API server, a partition) to the start of the op that ended its last cut
// (forever when none did). Hang: a cut of it hung the hub's connections (accepted, never
// answered) from HangFrom on, so a renewal the hub sent may still land until 70 s later (the
// fence waits for that too).
type loss struct {
	Member   string
	In       span
	Hang     bool
	HangFrom Stamp
	Op       int
}

// deadline is when a failover pipeline must have left the member l cut off, with threshold.
func (l loss) deadline(b Bounds, threshold time.Duration) Stamp {
	d := l.In.from + failoverBound(b, threshold, false)
	if l.Hang {
		d = max(d, l.HangFrom+failoverBound(b, threshold, true))
	}
	return d
}

// readerDeadline is when the reader on the member it moved to must run. A cut that does not
// hang may still catch a fence renewal in flight (a connection dropped, an API server killed
// mid-request): the hub got no answer, cannot tell whether it was written, and waits for it as
// for a hung member (members.WriteLanding) before the fence's bound runs. The decision
// itself waits for nothing of that (deadline).
func (l loss) readerDeadline(b Bounds, threshold time.Duration) Stamp {
	return max(l.deadline(b, threshold), l.In.from+failoverBound(b, threshold, true))
}

// candidatesBut are the members f may fail over to from member: its named candidates (an alias
// as its member), and every member with a candidate selector (the labels change), but member.
func candidatesBut(f *pipelineFacts, member string) []string {
	all := f.Failover.Candidates
	if f.Failover.CandidateSelector {
		all = Members
	}
	var out []string
	for _, c := range all {
		if c = clusterOf(c); c != member {
			out = append(out, c)
		}
	}
	return out
}

// memberOfPath is the member of a Reconnect or a SlowPath (which opens a cut path, slowly).
func memberOfPath(o Op) string {
	if s, ok := o.(SlowPath); ok {
		return s.Member
	}
	return o.(Reconnect).Member
}

// The cuts a loss of a member is made of.
const (
	cutStopped     = "stopped"
	cutPartitioned = "partitioned"
)

// losses are the stretches the ops cut a member off from the hub: one per member, not per cut,
// so a member both stopped and partitioned stays lost until both end.
func losses(ops []OpRecord) []loss {
	var out []loss
	open := map[string]int{}
	cuts := map[string]map[string]bool{}
	begin := func(o OpRecord, m, cut string, hang bool) {
		if o.Err != "" {
			return
		}
		if cuts[m] == nil {
			cuts[m] = map[string]bool{}
		}
		cuts[m][cut] = true
		i, ok := open[m]
		if !ok {
			i, open[m] = len(out), len(out)
			out = append(out, loss{Member: m, In: span{o.End, forever}, Op: o.Index})
		}
		if hang && !out[i].Hang {
			out[i].Hang, out[i].HangFrom = true, o.End
		}
	}
	end := func(m, cut string, at Stamp) {
		delete(cuts[m], cut)
		if i, ok := open[m]; ok && len(cuts[m]) == 0 {
			out[i].In.to = at
			delete(open, m)
		}
	}
	for _, o := range ops {
		switch op := o.Op.(type) {
		case StopMember:
			begin(o, op.Member, cutStopped, false)
		case Partition:
			begin(o, op.Member, cutPartitioned, op.Hang)
		case StartMember:
			end(op.Member, cutStopped, o.Start)
		case Reconnect, SlowPath:
			end(memberOfPath(op), cutPartitioned, o.Start)
		case Heal:
			for _, m := range Members {
				end(m, cutStopped, o.Start)
				end(m, cutPartitioned, o.Start)
			}
		}
	}
	return out
}

// failoverBound is how long after a member is lost a failover placement on it must have left
// it: its threshold, the fence's bound and margin after the last renewal that may have been
// written (70 s more when the member hangs), and the slack.
func failoverBound(b Bounds, threshold time.Duration, hang bool) time.Duration {
	d := threshold + b.FenceTTL + b.FenceGrace + b.FenceMargin + b.FailoverSlack
	if hang {
		d += lateWriteFence
	}
	return d
}

// failoverWindow is one loss of the member a failover pipeline ran on that the history lets
// the hub act on by itself.
type failoverWindow struct {
	f        *pipelineFacts
	l        loss
	deadline Stamp
	// readerBy is when the reader on the member it moved to must run (loss.readerDeadline);
	// readerJudged is false when something other than the loss may delay it until then.
	readerBy     Stamp
	readerJudged bool
}

// failoverWindows are the losses I6 judges: the member a failover pipeline surely ran on (its
// status said so when the loss began) stays lost until the deadline, the pipeline is neither
// deleted nor terminated before it, no hub process is killed, started or failed over from 15 s
// before the loss to the deadline, and some other named candidate answers and stays in the
// inventory throughout (the hub needs one place to move to, not all).
func failoverWindows(cc *checkContext) []failoverWindow {
	var out []failoverWindow
	ls := losses(cc.rec.Ops)
	for _, f := range sortedPipes(cc.pipes) {
		if f.Failover == nil {
			continue
		}
		members := failoverMembers(cc.rec, cc.clocks[hubCluster], f.UID)
		for _, l := range ls {
			if memberAt(members, l.In.from) != l.Member {
				continue
			}
			threshold := ms(f.Failover.ThresholdMillis)
			d := l.deadline(cc.rec.Bounds, threshold)
			if l.In.to < d || (f.DeleteOp != nil && f.DeleteOp.Start < d) || cc.disturbed(f, l, d, ls) {
				continue
			}
			rd := l.readerDeadline(cc.rec.Bounds, threshold)
			judged := (f.DeleteOp == nil || f.DeleteOp.Start >= rd) && !cc.disturbed(f, l, rd, ls)
			out = append(out, failoverWindow{f: f, l: l, deadline: d, readerBy: rd, readerJudged: judged})
		}
	}
	return out
}

// memberAt is the member status.failover.member surely named at t: the last version surely
// committed by t, when no later one may have been; "" when not sure.
func memberAt(ms []failoverMember, t Stamp) string {
	got := ""
	for _, m := range ms {
		switch {
		case m.At.to <= t:
			got = m.Member
		case m.At.from < t:
			return ""
		}
	}
	return got
}

// disturbed tells whether something other than the loss may keep the hub from failing f over
// by d: a hub process killed, started or failed over (or none running), f terminated, no other
// named candidate usable, another member it may move to slow enough for its requests to time
// out, or (with a candidate selector) a label changed.
func (cc *checkContext) disturbed(f *pipelineFacts, l loss, d Stamp, ls []loss) bool {
	win := span{l.In.from - 15*time.Second, d}
	for _, t := range terminatedSpans(cc.rec.Ops, f.UID) {
		if !t.overlap(win).empty() {
			return true
		}
	}
	for _, o := range cc.rec.Ops {
		if o.Start > win.to {
			break
		}
		if o.End < win.from {
			continue
		}
		switch o.Op.(type) {
		case KillHub, StartHub, Failover, FreezeHub, KillHubWhen:
			return true
		case Label:
			if f.Failover.CandidateSelector {
				return true
			}
		}
		if !o.HubsBefore[0] && !o.HubsBefore[1] {
			return true
		}
	}
	if slowDuring(slowSpans(cc.rec.Ops), candidatesBut(f, l.Member), win, cc.rec.Bounds.MemberTimeout) {
		return true
	}
	for _, c := range f.Failover.Candidates {
		if c != l.Member && usable(cc.rec.Ops, ls, c, win) {
			return false
		}
	}
	return true
}

// usable tells whether the hub surely reaches member m, in its inventory, all through win.
func usable(ops []OpRecord, ls []loss, m string, win span) bool {
	for _, l := range ls {
		if l.Member == m && !l.In.overlap(win).empty() {
			return false
		}
	}
	for _, out := range outOfInventory(ops, m) {
		if !out.overlap(win).empty() {
			return false
		}
	}
	return true
}

// outOfInventory are the stretches member m may have been out of the hub's inventory: from the
// start of a deregister to the end of the register (or heal) that brought it back.
func outOfInventory(ops []OpRecord, m string) []span {
	var out []span
	from, in := Stamp(0), true
	for _, o := range ops {
		switch op := o.Op.(type) {
		case Deregister:
			if op.Member == m && in {
				from, in = o.Start, false
			}
		case Register:
			if op.Member == m && !in {
				out, in = append(out, span{from, o.End}), true
			}
		case Heal:
			if !in {
				out, in = append(out, span{from, o.End}), true
			}
		}
	}
	if !in {
		out = append(out, span{from, forever})
	}
	return out
}

// checkFailover (I6): a failover pipeline leaves a member it surely ran on, lost for good,
// within failoverBound, with no person acting: by the deadline its status.failover.member names
// another member (the earliest moment that write may have been committed is not after it) and,
// if that member stayed usable, a reader surely ran there by loss.readerDeadline (which allows
// for a renewal the cut left unanswered): a status alone moves nothing. (Not while another
// pipeline of its identity may hold a reader: the reader lease makes it wait.)
func checkFailover(cc *checkContext, res *Result) {
	for _, f := range sortedPipes(cc.pipes) {
		if f.Failover == nil {
			continue
		}
		var moves []string
		for _, m := range failoverMembers(cc.rec, cc.clocks[hubCluster], f.UID) {
			moves = append(moves, fmt.Sprintf("%q within %s", m.Member, m.At))
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s: %s (%s): status.failover.member %s", InvFailover, pipeName(f), f.Failover, strings.Join(moves, ", then ")))
	}
	for _, p := range cc.pods {
		if p.fence != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("fenced reader of %s: %s", cc.nameOf(p.Pipeline), p))
		}
	}
	ls := losses(cc.rec.Ops)
	for _, w := range failoverWindows(cc) {
		moves := cc.movesOff(w, ls)
		if i := slices.IndexFunc(moves, func(m failoverMove) bool { return m.passes(w) }); i >= 0 {
			m := moves[i]
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %s left %s (lost by op #%02d at %s) for %s: decided by %s, a reader there from %s (usable throughout: %v; another pipeline of its identity may read: %v; reader bound %s)",
				InvFailover, pipeName(w.f), w.l.Member, w.l.Op, stampString(w.l.In.from), m.Member,
				stampString(m.At.from), stampString(m.reader), m.usable, m.contended, stampString(w.readerBy)))
			continue
		}
		res.Violations = append(res.Violations, failoverViolation(cc, w, moves))
	}
}

// failoverMove is a version of status.failover.member that names another member than the lost
// one, with when a reader surely ran there first (forever: never) and whether that member
// stayed usable from the loss to the deadline.
type failoverMove struct {
	failoverMember
	reader Stamp
	usable bool
	// contended: a reader of another pipeline of the same source identity may have run during
	// the window, so the reader lease rightly kept this one from starting anywhere.
	contended bool
}

// passes tells whether the move may have been decided by w's deadline and, where the hub could
// start a reader there, one surely ran by w.readerBy.
func (m failoverMove) passes(w failoverWindow) bool {
	return m.At.from <= w.deadline && (m.reader <= w.readerBy || !w.readerJudged || !m.usable || m.contended)
}

// contended tells whether a reader of another pipeline of f's source identity may have run at
// some moment of win, on any member.
func (cc *checkContext) contended(f *pipelineFacts, win span) bool {
	for _, p := range cc.pods {
		o := cc.pipes[p.Pipeline]
		// A pod a person made holds no reader lease: the hub has no reason to wait for it.
		if o != nil && o.UID != f.UID && f.Identity != "" && o.Identity == f.Identity && p.hand == nil && !p.Maybe.overlap(win).empty() {
			return true
		}
	}
	return false
}

// movesOff are the versions of w's pipeline's status that may have moved it off the lost member.
func (cc *checkContext) movesOff(w failoverWindow, ls []loss) []failoverMove {
	var out []failoverMove
	for _, m := range failoverMembers(cc.rec, cc.clocks[hubCluster], w.f.UID) {
		if m.At.to <= w.l.In.from || m.Member == "" || m.Member == w.l.Member {
			continue
		}
		win := span{w.l.In.from, w.readerBy}
		mv := failoverMove{failoverMember: m, reader: forever, usable: usable(cc.rec.Ops, ls, m.Member, win), contended: cc.contended(w.f, win)}
		for _, p := range cc.podsOf(w.f.UID, m.Member) {
			// A reader a person made there is no failover.
			if p.hand == nil && !p.Sure.empty() && p.Sure.to > w.l.In.from {
				mv.reader = min(mv.reader, max(p.Sure.from, w.l.In.from))
			}
		}
		out = append(out, mv)
	}
	return out
}

// failoverViolation says how w's pipeline failed to leave the lost member in time.
func failoverViolation(cc *checkContext, w failoverWindow, moves []failoverMove) Violation {
	var ev []string
	for _, m := range failoverMembers(cc.rec, cc.clocks[hubCluster], w.f.UID) {
		ev = append(ev, fmt.Sprintf("status.failover.member %q committed within %s", m.Member, m.At))
	}
	what := fmt.Sprintf("pipeline %s still ran on %s at %s", pipeName(w.f), w.l.Member, stampString(w.deadline))
	for _, m := range moves {
		if m.At.from <= w.deadline {
			what = fmt.Sprintf("pipeline %s moved from %s to %s (decided by %s), but no reader surely ran there by %s (first from %s)",
				pipeName(w.f), w.l.Member, m.Member, stampString(m.At.from), stampString(w.readerBy), stampString(m.reader))
			break
		}
	}
	for _, p := range cc.pods {
		if p.Pipeline == w.f.UID && p.Cluster != w.l.Member {
			ev = append(ev, p.String())
		}
	}
	return Violation{Invariant: InvFailover,
		Summary: fmt.Sprintf("%s, lost since op #%02d at %s (threshold %s, bound %s)", what, w.l.Op, stampString(w.l.In.from),
			ms(w.f.Failover.ThresholdMillis), w.deadline-w.l.In.from),
		Evidence: ev}
}

// checkOneMember (I1 stop before start, failover placements): a failover pipeline runs on one
// member at a time, so two of its readers in different members never surely ran at once,
// whoever decided the move.
func checkOneMember(cc *checkContext, res *Result) {
	for _, f := range sortedPipes(cc.pipes) {
		if f.Failover == nil {
			continue
		}
		var pods []*podLife
		for _, p := range cc.pods {
			if p.Pipeline == f.UID {
				pods = append(pods, p)
			}
		}
		for i, p := range pods {
			for _, q := range pods[i+1:] {
				if p.Cluster == q.Cluster {
					continue
				}
				if both := p.judged().overlap(q.judged()); !both.empty() {
					res.Violations = append(res.Violations, Violation{Invariant: InvStopFirst,
						Summary:  fmt.Sprintf("failover pipeline %s had readers in %s and %s at once, during %s", pipeName(f), p.Cluster, q.Cluster, both),
						Evidence: []string{p.String(), q.String()}})
				} else if maybe := p.judgedMaybe().overlap(q.judgedMaybe()); !maybe.empty() {
					res.Notes = append(res.Notes, fmt.Sprintf("%s: failover pipeline %s in %s and %s may have overlapped during %s (not proven)",
						InvStopFirst, pipeName(f), p.Cluster, q.Cluster, maybe))
				}
			}
		}
	}
}

// isCandidate tells whether member may run failover pipeline f: a named candidate, or any
// member when a candidate selector may select it.
func isCandidate(f *pipelineFacts, member string) bool {
	return f.Failover.CandidateSelector || slices.Contains(f.Failover.Candidates, member)
}
