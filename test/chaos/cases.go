package chaos

// Named cases: one fixed history for each way issue #13 found to break "one reader per source"
// or to orphan a coordinator. Each drives the fleet into its window (Await, paused kubelets,
// members down, a writer that makes the hub's status patch conflict) and ends like every history
// (Heal, DeleteAll), so the checker judges the whole of it. A required Await (running, reach)
// must be met, or the case fails: it did not reach its window. mayRun only paces: a hub that
// rightly refuses to start a coordinator makes it time out, and the history goes on.

var (
	memberA = Members[0]
	memberB = Members[1]
	memberC = Members[2]
)

// Cases are the named histories, in the order of the issues (#13, then #26: cases_hands.go,
// cases_failover.go, cases_slow.go).
func Cases() []History {
	return append([]History{
		caseMoveBackToDraining(),
		caseRenameWhileUnreachable(),
		caseRacingCreates(),
		caseRacingSpellings(),
		caseTombstoneInventoryWindow(),
		caseStaleConfirmGone(),
		caseTombstoneReplayWhileTerminated(),
		caseTerminatingPodBlocksMove(),
		caseTerminatingPodBlocksRename(),
		caseFrozenLeaderMidMove(),
	}, append(append(handCases(), failoverCases()...), slowCases()...)...)
}

func closing(ops ...Op) []Op {
	return append(ops, Heal{}, Wait{Millis: 2000}, DeleteAll{})
}

// running waits for a coordinator pod of name Running in member, and requires it.
func running(name, member string, millis int) Await {
	return Await{Cond: CondRunning, Name: name, Member: member, Millis: millis, Required: true}
}

// mayRun waits at most millis for what a correct hub may rightly refuse: a coordinator pod of
// name Running in member.
func mayRun(name, member string, millis int) Await {
	return Await{Cond: CondRunning, Name: name, Member: member, Millis: millis}
}

// reach waits for cond and requires it.
func reach(cond, name, member string, millis int) Await {
	return Await{Cond: cond, Name: name, Member: member, Millis: millis, Required: true}
}

// 1. Move back to a member that is still draining: A keeps one object (a foreign finalizer, as
// KEDA's on a ScaledObject) so it stays in the inventory after the move to B; the revert to A
// must wait for B's coordinator, which is slow to stop (its kubelet is paused).
func caseMoveBackToDraining() History {
	return History{Name: "case-1-move-back-to-draining-member", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		Hold{Member: memberA, Name: "p0", Object: "configmap"},
		Place{Name: "p0", Placement: []string{memberB}},
		running("p0", memberB, 60000),
		Wait{Millis: 1000},
		PauseKubelet{Member: memberB},
		Place{Name: "p0", Placement: []string{memberA}},
		mayRun("p0", memberA, 15000),
		Wait{Millis: 3000},
		ResumeKubelet{Member: memberB},
		Release{Member: memberA},
		reach(CondNoPods, "p0", memberB, 60000),
	)}
}

// 2. Rename with the same source while the old member does not answer: p0 is deleted while A is
// down (its tombstone lets the CR go after the grace), p1 takes p0's serverId on B. p1 must not
// start while p0's coordinator may still run in A.
func caseRenameWhileUnreachable() History {
	return History{Name: "case-2-rename-while-old-member-unreachable", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		StopMember{Member: memberA},
		Delete{Name: "p0"},
		reach(CondGone, "p0", "", 60000),
		Create{Name: "p1", Identity: "s0", Placement: []string{memberB}},
		mayRun("p1", memberB, 20000),
		Wait{Millis: 2000},
		StartMember{Member: memberA},
		reach(CondNoPods, "p0", memberA, 60000),
	)}
}

// 3. Two creates with one identity racing: through the webhook (list, then admit: both may
// pass), and with the webhook bypassed (both pass: only the reconciler can refuse one).
func caseRacingCreates() History {
	return History{Name: "case-3-racing-duplicate-creates", Ops: closing(
		CreateRace{Names: []string{"p0", "p1"}, Identity: "s0", Placements: [][]string{{memberA}, {memberB}}},
		Wait{Millis: 3000},
		CreateRace{Names: []string{"p2", "p3"}, Identity: "s1", Placements: [][]string{{memberA}, {memberC}}, Bypass: true},
		mayRun("p2", memberA, 20000),
		mayRun("p3", memberC, 20000),
		Wait{Millis: 3000},
	)}
}

// 3b. Two creates racing past admission with one identity spelled two ways: a MySQL serverId
// plainly and with leading zeros (one server id to MySQL), and a Postgres slot. The reconciler
// must take them for one identity.
func caseRacingSpellings() History {
	return History{Name: "case-3b-racing-creates-two-spellings", Ops: closing(
		CreateRace{Names: []string{"p0", "p1"}, Identity: "s0", Placements: [][]string{{memberA}, {memberB}}, Bypass: true, Padded: true},
		mayRun("p0", memberA, 20000),
		mayRun("p1", memberB, 20000),
		CreateRace{Names: []string{"p2", "p3"}, Identity: "q0", Placements: [][]string{{memberB}, {memberC}}, Bypass: true},
		mayRun("p2", memberB, 20000),
		mayRun("p3", memberC, 20000),
		Wait{Millis: 3000},
	)}
}

// A leader frozen (SIGSTOP) in the middle of a move, past its leader Lease: the other replica takes
// over and finishes the move, and the frozen one, let go on, still holds the reconcile it was in.
// It must write nothing to a member once its lease may have passed.
func caseFrozenLeaderMidMove() History {
	return History{Name: "case-frozen-leader-mid-move", Ops: closing(
		StartHub{Hub: 1},
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 30000),
		Place{Name: "p0", Placement: []string{memberB}},
		FreezeHub{Millis: 20000},
		running("p0", memberB, 60000),
		Place{Name: "p0", Placement: []string{memberA}},
		Wait{Millis: 3000},
	)}
}

// 4. The tombstone/re-placement window: B (down, confirmed gone) holds p0's tombstone (its
// reader-lease entry in state Gone); p0 is placed on B again while another writer keeps changing
// p0 (every lease and status write races a CR write); B comes back and the leader is killed the
// moment the entry stops being a tombstone (B emptied, or made Active again); then B is dropped
// again before the new leader settles it. B's coordinator must end up neither untracked by the
// lease nor running beside another reader, and B emptied in the end.
func caseTombstoneInventoryWindow() History {
	return History{Name: "case-4-tombstone-replacement-crash-window", Ops: closing(
		StartHub{Hub: 1},
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA, memberB}},
		running("p0", memberA, 60000),
		running("p0", memberB, 60000),
		StopMember{Member: memberB},
		Place{Name: "p0", Placement: []string{memberA}, ConfirmGone: []string{memberB}},
		reach(CondTombstone, "p0", memberB, 30000),
		Hammer{Name: "p0", Millis: 8000},
		Place{Name: "p0", Placement: []string{memberA, memberB}},
		StartMember{Member: memberB},
		KillHubWhen{Cond: CondNoTombstone, Name: "p0", Member: memberB, Millis: 30000},
		Place{Name: "p0", Placement: []string{memberA}},
		Wait{Millis: 8000},
		StartHub{Hub: 0},
		Wait{Millis: 5000},
	)}
}

// 5. A stale confirm-cluster-gone annotation: A was confirmed gone for one move and came back;
// months later (here: a few seconds) p0 moves away from A again while A is down, with nobody
// confirming anything. The old annotation must not approve that move.
func caseStaleConfirmGone() History {
	return History{Name: "case-5-stale-confirm-cluster-gone", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		StopMember{Member: memberA},
		Place{Name: "p0", Placement: []string{memberB}, ConfirmGone: []string{memberA}},
		running("p0", memberB, 30000),
		StartMember{Member: memberA},
		reach(CondNoPods, "p0", memberA, 60000),
		Place{Name: "p0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		StopMember{Member: memberA},
		Place{Name: "p0", Placement: []string{memberB}},
		mayRun("p0", memberB, 20000),
		Wait{Millis: 2000},
		StartMember{Member: memberA},
		reach(CondNoPods, "p0", memberA, 60000),
	)}
}

// 6. The tombstone and the terminal state: B holds p0's tombstone (its lease entry turned Gone
// by a confirmed move while B was down); p0 is terminated; B comes back. Nothing may write to B
// for p0 while p0 is terminated, so the tombstone stays; once cleared, the pipeline empties B,
// the entry goes, and p0 can be placed on B again.
func caseTombstoneReplayWhileTerminated() History {
	return History{Name: "case-6-tombstone-replay-vs-terminated", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA, memberB}},
		running("p0", memberA, 60000),
		running("p0", memberB, 60000),
		StopMember{Member: memberB},
		Place{Name: "p0", Placement: []string{memberA}, ConfirmGone: []string{memberB}},
		reach(CondTombstone, "p0", memberB, 30000),
		Terminate{Name: "p0"},
		Wait{Millis: 2000},
		StartMember{Member: memberB},
		Wait{Millis: 8000},
		reach(CondTombstone, "p0", memberB, 1000),
		Clear{Name: "p0"},
		reach(CondNoTombstone, "p0", memberB, 45000),
		Place{Name: "p0", Placement: []string{memberA, memberB}},
		running("p0", memberB, 60000),
	)}
}

// 7a. A terminating coordinator pod is a reader: A's kubelet is paused, so after the move to B
// A's pod stays Terminating; B must not start until it is gone.
func caseTerminatingPodBlocksMove() History {
	return History{Name: "case-7a-terminating-pod-blocks-move", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		PauseKubelet{Member: memberA},
		Place{Name: "p0", Placement: []string{memberB}},
		mayRun("p0", memberB, 15000),
		Wait{Millis: 2000},
		ResumeKubelet{Member: memberA},
		running("p0", memberB, 60000),
	)}
}

// 7b. The same with a rename: p0 is deleted while its pod in A cannot finish terminating (after
// the grace its tombstone lets the CR go); p1 takes p0's serverId on B and must not start while
// that pod exists.
func caseTerminatingPodBlocksRename() History {
	return History{Name: "case-7b-terminating-pod-blocks-rename", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		PauseKubelet{Member: memberA},
		Delete{Name: "p0"},
		reach(CondGone, "p0", "", 40000),
		Create{Name: "p1", Identity: "s0", Placement: []string{memberB}},
		mayRun("p1", memberB, 15000),
		Wait{Millis: 2000},
		ResumeKubelet{Member: memberA},
		reach(CondNoPods, "p0", memberA, 30000),
	)}
}
