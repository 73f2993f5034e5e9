package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Invariant names, as violations and docs/reliability.md name them.
const (
	InvOneReader     = "I1 one reader per identity"
	InvOneDB         = "I1 one reader per database"
	InvStopFirst     = "I1 stop before start"
	InvStray         = "I1 reader outside the placement"
	InvLeftovers     = "I2 leftovers after settling"
	InvTerminalWrite = "I3 write while terminated"
	InvDeletion      = "I4 deletion in bounded time"
	InvStopped       = "I5 reader stopped in bounded time"
)

// Invariants lists them in report order.
var Invariants = []string{InvOneReader, InvOneDB, InvStopFirst, InvStray, InvLeftovers, InvTerminalWrite, InvDeletion, InvStopped, InvFailover}

// Violation is one broken invariant with the observations that prove it.
type Violation struct {
	Invariant string
	Summary   string
	Evidence  []string
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION %s: %s\n", v.Invariant, v.Summary)
	for _, e := range v.Evidence {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	return b.String()
}

// Result is the checker's verdict on one recording. Notes are overlaps the recording shows as
// possible but does not prove (the observations leave a window open): they are printed, not
// counted, so that the checker never reports what did not happen.
type Result struct {
	Violations []Violation
	Notes      []string
	// Seen says what the checker had to judge: coordinator pods, stop-before-start waits,
	// terminal windows, hub writes to members, deletions.
	Seen Seen
}

// Seen counts what a recording held, so that a clean verdict can be read as "checked N things"
// rather than "saw nothing".
type Seen struct {
	Pods, Waits, TerminalWindows, HubWrites, Deletions int
	// HandReaders are readers people's ops made; Departures the members placements left.
	HandReaders, Departures int
	// FencedReaders are the stretches fenced pods ran a reader by the simulated fence;
	// FailoverWindows the losses I6 judged.
	FencedReaders, FailoverWindows int
}

// checkContext is a recording prepared for the invariants.
type checkContext struct {
	rec    *Recording
	clocks map[string]*clock
	pods   []*podLife
	pipes  map[string]*pipelineFacts
	// entries are when reader leases surely held each (pipeline UID, cluster) entry.
	entries map[string][]span
}

// Check runs every invariant over the recording.
func Check(rec *Recording) Result {
	clocks := newClocks(rec.Samples, rec.Events)
	cc := &checkContext{rec: rec, clocks: clocks, pipes: pipelines(rec, clocks[hubCluster])}
	cc.pods = fenceCut(rec, clocks, cc.pipes, podLives(rec, clocks, ownerPipelines(rec), pipelineByName(cc.pipes)))
	cc.entries = leaseEntrySpans(rec, clocks[hubCluster])
	cc.markHands()
	var res Result
	res.Seen = cc.seen()
	for _, inv := range []func(*checkContext, *Result){checkOneReader, checkOneDB, checkStopFirst, checkStray, checkLeftovers,
		checkTerminalWrites, checkDeletions, checkStopped, checkOneMember, checkFailover} {
		inv(cc, &res)
	}
	return res
}

func (cc *checkContext) seen() Seen {
	s := Seen{Pods: len(cc.pods), TerminalWindows: len(terminalWindows(cc)), FailoverWindows: len(failoverWindows(cc))}
	for _, p := range cc.pods {
		if p.hand != nil {
			s.HandReaders++
		}
		if p.fence != nil {
			s.FencedReaders++
		}
	}
	for _, f := range cc.pipes {
		s.Waits += len(obligations(f))
		s.Departures += len(departures(f))
		if f.DeleteOp != nil {
			s.Deletions++
		}
	}
	for _, e := range cc.rec.Events {
		if e.HubWrite {
			s.HubWrites++
		}
	}
	return s
}

// checkOneReader (I1): two pods of different pipelines with one source identity never surely
// existed at the same moment, in any members. Each pair of pipelines makes one violation, with
// every pair of their pods that overlapped in its evidence.
func checkOneReader(cc *checkContext, res *Result) {
	type pair struct{ a, b string }
	found := map[pair]*Violation{}
	var order []pair
	for i, p := range cc.pods {
		for _, q := range cc.pods[i+1:] {
			fp, fq := cc.pipes[p.Pipeline], cc.pipes[q.Pipeline]
			if fp == nil || fq == nil || p.Pipeline == q.Pipeline || fp.Identity == "" || fp.Identity != fq.Identity ||
				(p.UID == q.UID && p.Cluster == q.Cluster) {
				continue
			}
			if excused(p, fp) || excused(q, fq) {
				continue
			}
			both := p.judged().overlap(q.judged())
			if both.empty() {
				if maybe := p.judgedMaybe().overlap(q.judgedMaybe()); !maybe.empty() {
					res.Notes = append(res.Notes, fmt.Sprintf("%s: %s and %s may have overlapped during %s (not proven): %s; %s",
						InvOneReader, pipeName(fp), pipeName(fq), maybe, p, q))
				}
				continue
			}
			if fp.UID > fq.UID {
				fp, fq, p, q = fq, fp, q, p
			}
			k := pair{fp.UID, fq.UID}
			if found[k] == nil {
				found[k] = &Violation{Invariant: InvOneReader,
					Summary: fmt.Sprintf("pipelines %s and %s (source %s) both had a coordinator pod", pipeName(fp), pipeName(fq), fp.Identity)}
				order = append(order, k)
			}
			found[k].Evidence = append(found[k].Evidence, fmt.Sprintf("during %s: %s: %s", both, pipeName(fp), p),
				fmt.Sprintf("    and %s: %s", pipeName(fq), q))
		}
	}
	for _, k := range order {
		res.Violations = append(res.Violations, *found[k])
	}
}

func pipeName(f *pipelineFacts) string { return fmt.Sprintf("%s (uid %s)", f.Name, short(f.UID)) }

// obligation: while it holds (In), pipeline Pipeline must not have a reader in Waiter while one
// remains in Departed: a move to a placement disjoint from the previous one (DESIGN.md §5.3).
type obligation struct {
	Pipeline, Waiter, Departed string
	In                         span
	// Op made the move.
	Op int
}

// obligations derives every stop-before-start obligation of pipeline f from its placement
// history. A change from S to S' with S ∩ S' empty is a move: each member of S' \ S must wait
// for every member f was ever placed on that is not in S' (the previous placement and any
// member departed earlier that may still drain). A change that keeps a member (adds beside it,
// removes one of several, swaps all but one) creates no obligation: members that stay are never
// touched and a member added beside a running one needs no wait. An obligation holds from the
// end of the op that made it (the change is committed by then) until the start of the op that
// lifts it (before which the hub cannot have seen that change): the waiter leaving the
// placement, the departed member coming back into it, or the pipeline's deletion.
func obligations(f *pipelineFacts) []obligation {
	var out, open []obligation
	var prev []string
	ever := map[string]bool{}
	end := forever
	if f.DeleteOp != nil {
		end = f.DeleteOp.Start
	}
	for i, ch := range f.Placements {
		cur := ch.Members
		var keep []obligation
		for _, o := range open {
			if slices.Contains(cur, o.Waiter) && !slices.Contains(cur, o.Departed) {
				keep = append(keep, o)
				continue
			}
			o.In.to = min(o.In.to, ch.At.from)
			out = append(out, o)
		}
		open = keep
		if i > 0 && len(cur) > 0 && !intersects(prev, cur) {
			for _, w := range cur {
				for _, d := range sortedKeys(ever) {
					if !slices.Contains(cur, d) && !hasObligation(open, w, d) {
						open = append(open, obligation{Pipeline: f.UID, Waiter: w, Departed: d, In: span{ch.At.to, end}, Op: ch.Op})
					}
				}
			}
		}
		for _, m := range cur {
			ever[m] = true
		}
		prev = cur
	}
	for _, o := range open {
		o.In.to = min(o.In.to, end)
		out = append(out, o)
	}
	return out
}

func hasObligation(os []obligation, w, d string) bool {
	return slices.ContainsFunc(os, func(o obligation) bool { return o.Waiter == w && o.Departed == d })
}

func intersects(a, b []string) bool {
	return slices.ContainsFunc(a, func(x string) bool { return slices.Contains(b, x) })
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkStopFirst (I1): during an obligation, the waiter member and the departed member never
// surely both held a pod of the pipeline, unless both pods surely ran already when the move
// began: the move started neither, and their overlap began under an earlier placement, judged by
// that placement's own obligations (a co-placement such as [A, B] needs none). That is the case
// of a member that left a placement while it did not answer, so kept its reader, and came back
// by a move away from the member it had run beside (the hub never stops a reader a lease entry
// still counts). Each obligation broken makes one violation.
func checkStopFirst(cc *checkContext, res *Result) {
	for _, f := range sortedPipes(cc.pipes) {
		for _, o := range obligations(f) {
			var evidence []string
			var when span
			began := moveBegan(f, o.Op)
			for _, w := range cc.podsOf(f.UID, o.Waiter) {
				for _, d := range cc.podsOf(f.UID, o.Departed) {
					if excused(d, f) || (w.Sure.from < began && d.Sure.from < began) {
						continue
					}
					sure := w.judged().overlap(cc.departedJudged(f, d, began)).overlap(o.In)
					if !sure.empty() {
						if len(evidence) == 0 {
							when = sure
						}
						when = span{min(when.from, sure.from), max(when.to, sure.to)}
						evidence = append(evidence, fmt.Sprintf("during %s: waiter %s", sure, w), "    and departed "+d.String())
					} else if maybe := w.judgedMaybe().overlap(d.judgedMaybe()).overlap(o.In); !maybe.empty() {
						res.Notes = append(res.Notes, fmt.Sprintf("%s: %s in %s and %s may have overlapped during %s (not proven)",
							InvStopFirst, pipeName(f), o.Waiter, o.Departed, maybe))
					}
				}
			}
			if len(evidence) > 0 {
				res.Violations = append(res.Violations, Violation{
					Invariant: InvStopFirst,
					Summary: fmt.Sprintf("pipeline %s moved (op #%02d) and had a coordinator in %s, which must wait, while %s, which it departed, still had one, during %s",
						pipeName(f), o.Op, o.Waiter, o.Departed, when),
					Evidence: append([]string{fmt.Sprintf("obligation from op #%02d: no reader in %s while %s has one, during %s", o.Op, o.Waiter, o.Departed, o.In),
						"placements: " + placementsString(f)}, evidence...),
				})
			}
		}
	}
}

// departedJudged is the part of departed reader d that a move begun at began must wait for: all
// of it, for a reader a person made before the move in a member the pipeline's lease surely
// named then (the hub counts every reader pod of a member it empties, made by hand or not);
// otherwise what judged leaves.
func (cc *checkContext) departedJudged(f *pipelineFacts, d *podLife, began Stamp) span {
	if d.hand != nil && d.hand.End < began && cc.entryWithin(f.UID, d.Cluster, span{began, began}) {
		return d.Sure
	}
	return d.judged()
}

// moveBegan is the start of op, which changed f's placement (0, which excuses nothing, if no
// placement change is op's).
func moveBegan(f *pipelineFacts, op int) Stamp {
	for _, ch := range f.Placements {
		if ch.Op == op {
			return ch.At.from
		}
	}
	return 0
}

func placementsString(f *pipelineFacts) string {
	var parts []string
	for _, p := range f.Placements {
		parts = append(parts, fmt.Sprintf("#%02d %s at %s", p.Op, set(p.Members), p.At))
	}
	return strings.Join(parts, "; ")
}

func (cc *checkContext) podsOf(pipeline, member string) []*podLife {
	var out []*podLife
	for _, p := range cc.pods {
		if p.Pipeline == pipeline && p.Cluster == member {
			out = append(out, p)
		}
	}
	return out
}

func sortedPipes(m map[string]*pipelineFacts) []*pipelineFacts {
	out := make([]*pipelineFacts, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name+out[i].UID < out[j].Name+out[j].UID })
	return out
}

// checkStray (I1): a pipeline's pod is never surely created in a member that no placement of it
// had named before.
func checkStray(cc *checkContext, res *Result) {
	for _, p := range cc.pods {
		f := cc.pipes[p.Pipeline]
		if p.hand != nil {
			continue // a person's reader: I5 judges it
		}
		if f == nil {
			if p.Pipeline == "" {
				res.Notes = append(res.Notes, "a coordinator pod whose StatefulSet was never seen: "+p.String())
			}
			continue
		}
		placed := f.Failover != nil && isCandidate(f, p.Cluster)
		for _, ch := range append(slices.Clone(f.Placements), f.Seen...) {
			if ch.At.from <= p.Sure.from && slices.Contains(ch.Members, p.Cluster) {
				placed = true
			}
		}
		if !placed && p.Sure.from < forever {
			res.Violations = append(res.Violations, Violation{
				Invariant: InvStray,
				Summary:   fmt.Sprintf("pipeline %s had a coordinator in %s, where it was never placed", pipeName(f), p.Cluster),
				Evidence:  []string{"placements: " + placementsString(f), p.String()},
			})
		}
	}
}

// checkLeftovers (I2): once the history settled, with every member answering, nothing of a
// deleted pipeline is left in a member, no tombstone is left, and no reader lease names a
// deleted pipeline. What one pipeline left in one member is one violation, each object in its
// evidence.
func checkLeftovers(cc *checkContext, res *Result) {
	fin := cc.rec.Final
	live := map[string]bool{}
	for _, p := range fin.Pipelines {
		live[p.UID] = true
	}
	owners := ownerPipelines(cc.rec)
	for _, m := range Members {
		if slices.Contains(fin.Unreachable, m) {
			continue
		}
		left := map[string][]string{}
		var uids []string
		add := func(uid, what string) {
			if left[uid] == nil {
				uids = append(uids, uid)
			}
			left[uid] = append(left[uid], what)
		}
		for _, o := range fin.MemberObjects[m] {
			if !live[o.PipelineUID] {
				add(o.PipelineUID, fmt.Sprintf("%s %s/%s (deleting: %v)", o.Kind, o.Namespace, o.Name, o.Deleting))
			}
		}
		tie := pipelineByName(cc.pipes)
		for _, o := range fin.Pods[m] {
			uid := lastOwner(owners[o.Owner])
			if uid == "" && o.PipelineName != "" {
				uid = tie(o.PipelineName, cc.rec.Settled)
			}
			if !live[uid] {
				add(uid, fmt.Sprintf("coordinator pod %s/%s (phase %s, deleting: %v)", o.Namespace, o.Name, o.Phase, o.Deleting))
			}
		}
		for _, uid := range uids {
			if uid == "" {
				res.Notes = append(res.Notes, fmt.Sprintf("%s: %d coordinator pod(s) of no pipeline the history made left in %s: %s",
					InvLeftovers, len(left[uid]), m, strings.Join(left[uid], "; ")))
				continue
			}
			if why, ok := cc.handExcuse(uid, m); ok {
				res.Notes = append(res.Notes, fmt.Sprintf("%s: %d object(s) of deleted pipeline %s left in %s, made by a person the hub had no time to find: %s: %s",
					InvLeftovers, len(left[uid]), cc.nameOf(uid), m, why, strings.Join(left[uid], "; ")))
				continue
			}
			res.Violations = append(res.Violations, Violation{Invariant: InvLeftovers,
				Summary:  fmt.Sprintf("%d object(s) of deleted pipeline %s left in %s", len(left[uid]), cc.nameOf(uid), m),
				Evidence: append([]string{"read after the history settled, at " + stampString(cc.rec.Settled)}, left[uid]...)})
		}
	}
	for _, t := range fin.Tombstones {
		if !slices.Contains(fin.Unreachable, t.Cluster) {
			res.Violations = append(res.Violations, leftover(cc, fmt.Sprintf("tombstone in reader lease %s for %s/%s (uid %s) in %s left although %s answers",
				t.Lease, t.PipelineNamespace, t.PipelineName, short(t.PipelineUID), t.Cluster, t.Cluster)))
		}
	}
	for _, l := range fin.Leases {
		waiting := slices.ContainsFunc(l.Entries, func(e LeaseEntry) bool { return slices.Contains(fin.Unreachable, e.Cluster) })
		if l.Holder != "" && !live[l.Holder] && !waiting {
			res.Violations = append(res.Violations, leftover(cc, fmt.Sprintf("reader lease %s/%s still held by deleted pipeline %s", l.Namespace, l.Name, cc.nameOf(l.Holder))))
		}
	}
}

// nameOf names a pipeline UID for reports.
func (cc *checkContext) nameOf(uid string) string {
	if f := cc.pipes[uid]; f != nil {
		return pipeName(f)
	}
	return "uid " + short(uid)
}

func leftover(cc *checkContext, what string) Violation {
	return Violation{Invariant: InvLeftovers, Summary: what,
		Evidence: []string{"read after the history settled, at " + stampString(cc.rec.Settled)}}
}
