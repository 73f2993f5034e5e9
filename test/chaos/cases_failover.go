package chaos

import "time"

// Named cases of issue #28: a failover placement (fenced) whose member is lost, in each way the
// hub can lose it. Each waits past the liveness bound (I6) before the member comes back, so
// that the move is judged, and requires the failover and the reader on the next candidate.

// lostFor is how long a case keeps the member lost: past I6's deadline for a threshold of 10 s
// (70 s more for a member that hangs), plus a margin.
func lostFor(hang bool) int {
	return int((failoverBound(Bounds{FenceTTL: fenceTTL, FenceGrace: fenceGrace, FenceMargin: fenceMargin, FailoverSlack: failoverSlack},
		10*time.Second, hang) + 3*time.Second) / time.Millisecond)
}

// startsAfter is how long a case waits for the reader on B once the failover was decided: a
// cut of the path (or a killed API server) that catches a renewal in flight leaves the hub
// without an answer to it, and the hub then waits 70 s for it as for a hung member.
var startsAfter = int((lateWriteFence + 30*time.Second) / time.Millisecond)

// failoverOnAB is p0, a failover placement over [A, B] with a 10 s threshold.
func failoverOnAB() Create {
	return Create{Name: "p0", Identity: "s0", Failover: &FailoverSpec{Candidates: []string{memberA, memberB}, ThresholdMillis: 10000}}
}

func failoverCases() []History {
	return []History{caseFailoverKilled(), caseFailoverPartitioned(), caseFailoverHung(), caseFailoverFlapping()}
}

// lossCase is p0 running on A, A lost by lose until past I6's deadline, the move to B and B's
// reader required, then A back by restore and emptied; after follows.
func lossCase(name string, lose, restore Op, hang bool, after ...Op) History {
	ops := []Op{
		failoverOnAB(),
		running("p0", memberA, 60000),
		reach(CondFailoverOn, "p0", memberA, 10000),
		Wait{Millis: 3000},
		lose,
		Wait{Millis: lostFor(hang)},
		reach(CondFailoverOn, "p0", memberB, 1000),
		running("p0", memberB, startsAfter),
		restore,
		reach(CondClean, "p0", memberA, 90000),
	}
	return History{Name: name, Ops: closing(append(ops, after...)...)}
}

// 16a. The member a failover placement runs on is killed (its API server stopped; its pod goes
// on, and its reader until the fence kills it): the hub moves the pipeline to B by itself, B's
// reader starting only after A's fence bound; A, back, is emptied and the pipeline stays on B.
func caseFailoverKilled() History {
	return lossCase("case-16a-failover-member-killed", StopMember{Member: memberA}, StartMember{Member: memberA}, false,
		reach(CondFailoverOn, "p0", memberB, 1000))
}

// 16b. A is cut off from the hub only (its connections refused), and its pod still reads A's API
// server: the reader there sees the renewals stop and its fence kills it; the pipeline moves to
// B; reconnected, A is emptied.
func caseFailoverPartitioned() History {
	return lossCase("case-16b-failover-partitioned-from-hub", Partition{Member: memberA}, Reconnect{Member: memberA}, false)
}

// 16c. A hangs as the hub sees it (its connections accepted, never answered): a renewal the hub
// sent may still land, so the move waits 70 s more than for a refused member.
func caseFailoverHung() History {
	return lossCase("case-16c-failover-member-hung", Partition{Member: memberA, Hang: true}, Reconnect{Member: memberA}, true)
}

// 16d. A flaps around the threshold, as the hub sees it: its path from the hub cut (refused) a
// little less than the threshold, opened 2 s, cut a little more, opened, and so on, four times,
// with A's pod reading A's API server all along. A cut of the path takes effect at once, where a
// stopped API server takes 10-40 s to start again on a loaded machine, so the outages are as long
// as written. Whether and when the pipeline moves depends on when the hub's health checks land;
// whatever it does, never two readers at once.
func caseFailoverFlapping() History {
	flap := func(downMillis, upMillis int) []Op {
		return []Op{Partition{Member: memberA}, Wait{Millis: downMillis}, Reconnect{Member: memberA}, Wait{Millis: upMillis}}
	}
	ops := []Op{failoverOnAB(), running("p0", memberA, 60000), reach(CondFailoverOn, "p0", memberA, 10000), Wait{Millis: 3000}}
	ops = append(ops, flap(8000, 2000)...)
	ops = append(ops, flap(11000, 1000)...)
	ops = append(ops, flap(9500, 3000)...)
	ops = append(ops, flap(13000, 500)...)
	ops = append(ops, Wait{Millis: 30000})
	return History{Name: "case-16d-failover-flapping", Ops: closing(ops...)}
}
