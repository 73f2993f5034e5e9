package chaos

// Named cases of issue #26: the histories people make beside the hub. Hands on members (a hand
// scale, a pod made by hand, a StatefulSet deleted or edited, a restored export), the inventory
// (a selector's label gained and lost, a kubeconfig Secret removed and added again) and
// placements over one database or several. Each drives the fleet into its window and requires
// what a correct hub does there (the hand undone, the move completed), and the checker judges the
// rest: no two readers of one database at once, and readers stopped in bounded time (I5).

// undone waits for the coordinator of name in member to be back to one Running pod and one
// replica, and requires it.
func undone(name, member string) Await {
	return reach(CondOneReader, name, member, 60000)
}

func handCases() []History {
	return []History{
		caseHandScaleUp(),
		caseHandScaleToZero(),
		caseHandPodBeside(),
		caseHandPodHoldsMove(),
		caseStatefulSetDeletedByHand(),
		caseStatefulSetEditedByHand(),
		caseRestoreOnLeftMember(),
		caseSelectorLabelGainedLost(),
		caseKubeconfigRemovedReadded(),
		caseEntryRenamed(),
		caseWideningOneDatabase(),
		caseWideningOwnDatabases(),
		caseRepointedWhileSideBySide(),
	}
}

// 8a. `kubectl scale --replicas=2` of a running coordinator: a second reader in one member. The
// hub must scale it back to one and the second pod go (I5).
func caseHandScaleUp() History {
	return History{Name: "case-8a-hand-scale-to-two", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		Scale{Member: memberA, Name: "p0", Replicas: 2},
		Wait{Millis: 1000},
		undone("p0", memberA),
		Scale{Member: memberA, Name: "p0", Replicas: 2},
		Wait{Millis: 1000},
		undone("p0", memberA),
	)}
}

// 8b. `kubectl scale --replicas=0`: the pipeline stopped without a word. The hub must bring its
// reader back.
func caseHandScaleToZero() History {
	return History{Name: "case-8b-hand-scale-to-zero", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		Scale{Member: memberA, Name: "p0", Replicas: 0},
		Wait{Millis: 2000},
		undone("p0", memberA),
	)}
}

// 9a. A pod made by hand with the coordinator's labels, beside the running coordinator: a second
// reader no StatefulSet controls. The hub must delete it (I5).
func caseHandPodBeside() History {
	return History{Name: "case-9a-hand-made-pod-beside-the-coordinator", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		HandPod{Member: memberA, Name: "p0"},
		Wait{Millis: 1000},
		undone("p0", memberA),
	)}
}

// 9b. A pod made by hand in a member the pipeline then leaves: the move must wait for it as for
// any reader there (I1 stop before start), and complete once the hub deleted it.
func caseHandPodHoldsMove() History {
	return History{Name: "case-9b-hand-made-pod-in-the-member-left", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		HandPod{Member: memberA, Name: "p0"},
		Place{Name: "p0", Placement: []string{memberB}},
		running("p0", memberB, 60000),
		reach(CondNoPods, "p0", memberA, 30000),
	)}
}

// 10. The coordinator StatefulSet deleted by hand: with --cascade=orphan its pod goes on without
// a controller. The hub is down meanwhile (so it cannot make the StatefulSet again and adopt the
// pod), and the pipeline (which bypasses the webhook, down with the hub) leaves that member:
// when the hub comes back, its cleanup finds a reader no StatefulSet controls, and must delete it
// before the new member starts. Then a plain delete and an orphaning one where the pipeline
// runs: the hub makes the StatefulSet again.
func caseStatefulSetDeletedByHand() History {
	return History{Name: "case-10-statefulset-deleted-by-hand", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}, Bypass: true},
		running("p0", memberA, 60000),
		KillHub{Hub: 0},
		DeleteSTS{Member: memberA, Name: "p0", Orphan: true},
		Place{Name: "p0", Placement: []string{memberB}},
		Wait{Millis: 1000},
		StartHub{Hub: 0},
		running("p0", memberB, 60000),
		reach(CondNoPods, "p0", memberA, 30000),
		DeleteSTS{Member: memberB, Name: "p0"},
		Wait{Millis: 1000},
		undone("p0", memberB),
		DeleteSTS{Member: memberB, Name: "p0", Orphan: true},
		Wait{Millis: 1000},
		undone("p0", memberB),
	)}
}

// 11. The coordinator StatefulSet edited by hand: its pod template (a rolling restart, which the
// hub reverts, another restart), then, while no hub runs, the hub's pipeline-UID label removed
// (by which the hub finds what to delete) and the pipeline (which bypasses the webhook, down
// with the hub) moved away: the hub that comes back never saw the StatefulSet with its label, and
// must still stop the reader there before the new member starts (chaos seed 260020).
func caseStatefulSetEditedByHand() History {
	return History{Name: "case-11-statefulset-edited-by-hand", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}, Bypass: true},
		running("p0", memberA, 60000),
		EditSTS{Member: memberA, Name: "p0", Edit: EditTemplate},
		Wait{Millis: 2000},
		undone("p0", memberA),
		KillHub{Hub: 0},
		EditSTS{Member: memberA, Name: "p0", Edit: EditUnlabel},
		Place{Name: "p0", Placement: []string{memberB}},
		Wait{Millis: 1000},
		StartHub{Hub: 0},
		running("p0", memberB, 60000),
		reach(CondNoPods, "p0", memberA, 30000),
	)}
}

// 12. The orphan case: the pipeline's objects exported in A, the pipeline moved to B, then the
// export restored in A (a backup restored, an export re-applied). A reader runs in A beside B's;
// the hub must find it and remove everything there (I5).
func caseRestoreOnLeftMember() History {
	return History{Name: "case-12-restore-on-a-member-left", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		Export{Member: memberA, Name: "p0"},
		Place{Name: "p0", Placement: []string{memberB}},
		running("p0", memberB, 60000),
		reach(CondClean, "p0", memberA, 30000),
		Restore{Member: memberA, Name: "p0", From: memberA},
		mayRun("p0", memberA, 10000),
		reach(CondClean, "p0", memberA, 60000),
		Restore{Member: memberC, Name: "p0", From: memberA},
		mayRun("p0", memberC, 10000),
		reach(CondClean, "p0", memberC, 60000),
	)}
}

// 13. A selector placement: members join it by gaining the label and leave it by losing it. A
// then B (their own databases: side by side), A loses it (B stays), then B loses it and C gains
// it: a move from B to C through the empty placement, which must wait for B's reader (slow to
// stop: B's kubelet is paused).
func caseSelectorLabelGainedLost() History {
	return History{Name: "case-13-selector-label-gained-and-lost", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{}, Selector: true},
		Label{Member: memberA, On: true},
		running("p0", memberA, 60000),
		Label{Member: memberB, On: true},
		running("p0", memberB, 60000),
		Label{Member: memberA},
		reach(CondNoPods, "p0", memberA, 30000),
		PauseKubelet{Member: memberB},
		Label{Member: memberB},
		Label{Member: memberC, On: true},
		mayRun("p0", memberC, 8000),
		ResumeKubelet{Member: memberB},
		running("p0", memberC, 60000),
		reach(CondNoPods, "p0", memberB, 30000),
	)}
}

// 14. A member's kubeconfig Secret removed: the hub can no longer reach it, and its reader goes
// on. A move away must wait; once the Secret is back, the member is emptied and the move
// completes.
func caseKubeconfigRemovedReadded() History {
	return History{Name: "case-14-kubeconfig-secret-removed-and-added", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		Deregister{Member: memberA},
		Place{Name: "p0", Placement: []string{memberB}},
		mayRun("p0", memberB, 10000),
		Wait{Millis: 2000},
		Register{Member: memberA},
		running("p0", memberB, 90000),
		reach(CondNoPods, "p0", memberA, 30000),
	)}
}

// 14b. An inventory entry renamed as documented: A registered again under a second name, the
// pipeline placed by that name, A's own entry removed. The reader in A follows the cluster and
// goes on (one cluster, one set of objects, whatever its names); a move to B then empties A
// through its new name before B starts. Removing the new name at the end (heal) leaves the
// deleted pipeline's objects to the tombstone, which follows the cluster back to A's own name.
func caseEntryRenamed() History {
	return History{Name: "case-14b-inventory-entry-renamed", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		Alias{Member: memberA, On: true},
		Place{Name: "p0", Placement: []string{AliasOf(memberA)}},
		Wait{Millis: 3000},
		Deregister{Member: memberA},
		Wait{Millis: 5000},
		reach(CondOneReader, "p0", memberA, 30000),
		Place{Name: "p0", Placement: []string{memberB}},
		running("p0", memberB, 90000),
		reach(CondNoPods, "p0", memberA, 30000),
		Place{Name: "p0", Placement: []string{memberB, AliasOf(memberA)}},
		mayRun("p0", memberA, 30000),
	)}
}

// 15a. [A] -> [A,B] -> [B] where both members' source Secrets name one database: one reader
// identity. B must not start beside A; narrowing to [B] moves like any move.
func caseWideningOneDatabase() History {
	return History{Name: "case-15a-widening-over-one-database", Ops: closing(
		Repoint{Member: memberA, DB: SharedDB},
		Repoint{Member: memberB, DB: SharedDB},
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		Place{Name: "p0", Placement: []string{memberA, memberB}},
		mayRun("p0", memberB, 10000),
		Place{Name: "p0", Placement: []string{memberB}},
		running("p0", memberB, 60000),
		reach(CondNoPods, "p0", memberA, 30000),
	)}
}

// 15b. The same widening where each member reads its own database: they run side by side.
func caseWideningOwnDatabases() History {
	return History{Name: "case-15b-widening-over-own-databases", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		Place{Name: "p0", Placement: []string{memberA, memberB}},
		running("p0", memberB, 60000),
		running("p0", memberA, 1000),
		Place{Name: "p0", Placement: []string{memberB}},
		reach(CondNoPods, "p0", memberA, 30000),
	)}
}

// 15c. Two members running side by side whose source Secrets are then repointed at one database:
// the one that started later must stop within --secret-recheck-interval (the stated limit);
// once one is pointed back at its own database, both run again.
func caseRepointedWhileSideBySide() History {
	return History{Name: "case-15c-repointed-at-one-database-while-side-by-side", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA, memberB}},
		running("p0", memberA, 60000),
		running("p0", memberB, 60000),
		Repoint{Member: memberA, DB: SharedDB},
		Repoint{Member: memberB, DB: SharedDB},
		Wait{Millis: 25000},
		Repoint{Member: memberB},
		running("p0", memberA, 60000),
		running("p0", memberB, 60000),
	)}
}
