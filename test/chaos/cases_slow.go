package chaos

// Named cases of slow members (#26, history 5): a write the hub gave up on may still be
// committed. Each sends the hub's create of a coordinator to a member that may commit it after
// the hub stopped waiting for the answer, then moves the pipeline back: the member must count as
// holding a reader until the write could have landed (docs/architecture.md, "Fencing late
// writes"), so the member moved back to starts its reader only then, and a late one is removed.

func slowCases() []History {
	return []History{caseLateWriteHeldByAdmission(), caseLateWriteOnSlowPath()}
}

// 17a. B's admission webhook holds the hub's StatefulSet writes 9 s, three times the hub's
// --member-timeout: the create of B's coordinator times out for the hub, and B may commit it
// after the pipeline was moved back to A.
func caseLateWriteHeldByAdmission() History {
	return History{Name: "case-17a-late-write-held-by-admission", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		SlowAdmission{Member: memberB, Millis: 9000},
		Place{Name: "p0", Placement: []string{memberB}},
		Wait{Millis: 8000},
		Place{Name: "p0", Placement: []string{memberA}},
		Wait{Millis: 6000},
		DropAdmission{Member: memberB},
		running("p0", memberA, 150000),
		reach(CondClean, "p0", memberB, 90000),
	)}
}

// 17b. B's path from the hub forwards every chunk 1.4 s late: a round trip takes about the hub's
// --member-timeout (3 s), so some of the hub's requests to B are answered in time and some not,
// and a write of those that are not reaches B all the same. The hub cannot tell which landed.
func caseLateWriteOnSlowPath() History {
	return History{Name: "case-17b-late-write-on-a-slow-path", Ops: closing(
		Create{Name: "p0", Identity: "s0", Placement: []string{memberA}},
		running("p0", memberA, 60000),
		SlowPath{Member: memberB, Millis: 1400},
		Place{Name: "p0", Placement: []string{memberB}},
		Wait{Millis: 8000},
		Place{Name: "p0", Placement: []string{memberA}},
		Wait{Millis: 4000},
		Reconnect{Member: memberB},
		running("p0", memberA, 150000),
		reach(CondClean, "p0", memberB, 90000),
	)}
}
