// Package fleet is the hub's pipeline controller: it places each CDCPipeline on member clusters
// under its source's reader lease, Server-Side Applies the coordinator workload rendered by
// internal/coordinator into each selected member, observes what runs there, and reports it in
// the pipeline's status on the hub.
//
// # One reconcile
//
// Reconcile (reconciler.go) is a short list of phases; a phase with dependencies of its own is a
// type, built once by SetupWithManager (setup.go):
//
//	fetch, prepare   reconciler.go  read the CDCPipeline; the finalizer before any member write;
//	                                clear a termination the spec moved past (a locked status write)
//	deletion.run     delete.go      deletion first: empty every member a ReaderLease records,
//	                                keep tombstones for those that do not answer in time
//	observe          observe.go     inventory, placement, member identities (memberReads),
//	                                tenancy (tenancy.go), the reader lease, failover (failover.go)
//	gate             gate.go        terminated, invalid or source-changed: status only
//	placer.place     place.go       clean departed members, lease.Plan, write the lease
//	rollout.all      apply.go       the applies, concurrently, one memberwork.ApplyJob per member
//	report           report.go      status (internal/status), events (events.go), requeue
//
// The phases set the status in memory; reconcile writes it once, at the end, when it changed
// (hubWrites.status, hubwrites.go, which also makes every other write to a pipeline or a lease
// and tells it to its echo filter). handlers.go maps events to pipelines: member objects by their
// labels, inventory entries, ReaderLeases, PlacementPolicies and hub namespaces (through
// internal/hubindex), with the echoes of our own writes filtered out.
//
// Decisions are pure functions with table tests in their packages: placement.SelectMembers and
// OverrideFor, lease.Plan, PlanRelease and FollowRenames, sourcedb.Hold, failover.Choose,
// status.Compute. The hub's other parts are packages of their own: internal/tombstones (the
// tombstone replay controller), internal/fencelease (the fence's renewals and Hub),
// internal/gauges, internal/members (connections, health checks, fan-out), internal/memberwork
// (the work in one member) and internal/orphans.
//
// # The fleet rules, and where they live
//
//   - One reader per source identity (internal/lease): a ReaderLease per identity, written with
//     optimistic concurrency before a coordinator starts anywhere; an entry leaves Active only
//     when its member answered that no reader pod is left or a person confirmed it gone. A
//     coordinator created without a lease write in the same reconcile takes a quorum read first
//     (lease.Store.MayCreateCoordinator), and every creation first confirms that no newer change
//     of the pipeline overtook the apply (stillCurrent, apply.go).
//   - Deletion precedence (delete.go, internal/tombstones): the finalizer empties every member
//     the lease records; entries left after TombstoneGrace are tombstones, replayed when the
//     member answers (by identity, under any name).
//   - Terminal state (gate.go): no member write while status.terminated holds.
//   - Isolation (members.FanOut, members.Breaker, fanOut in reconciler.go): every member's work
//     runs on its own, bounded by MemberTimeout; a hung member is not waited for, a failing one
//     backs off alone (memberBook, memberbook.go).
//   - Idle is quiet: no-op applies are skipped (internal/ssa), echoes of our own writes are not
//     reconciled (ssa.EchoFilter), the status is written only when it changed.
//   - Members come and go (members.Set, members.Monitor, memberBook): a member that leaves the
//     inventory is never emptied by that, and everything kept about it is dropped.
//
// # State that outlives one reconcile
//
// All of it is in memory, rebuilt from the world after a restart, and lost without harm; what
// must survive a crash (where readers may run, tombstones) is in the ReaderLeases.
//
//	members          members.Set         per member: clients, identity, health, the Breaker of
//	                                     slow members with the pipelines that skipped them
//	running          members.RunningWork the work running per (pipeline, member): no second start
//	book             memberBook          per (pipeline, member) backoff; health records; what is
//	                                     dropped when a member leaves
//	applier          ssa.Applier         per member object: the last applied bytes, for the no-op
//	                                     check; echoes of our applies
//	shared           memberwork.SharedReads per member namespace, for a second: one read shared by
//	                                     the jobs that create there at once
//	writes           hubWrites           echo filters of our writes to pipelines and leases, and
//	                                     the pipelines to look at again at once (lookAgain)
//	fence            fencelease.Hub      per fenced placement: whether its fence Lease is renewed,
//	                                     and the latest instant a renewal may have been written
//
// # What it must not do
//
// It must not render objects itself (internal/coordinator does), list member clusters itself
// (internal/inventory does) or delete anything in a member by name alone: every delete carries a
// UID precondition, on objects found by their labels (internal/memberwork says which).
package fleet
