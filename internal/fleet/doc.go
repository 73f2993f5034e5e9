// Package fleet is the hub reconciler: it places each CDCPipeline on member clusters under its
// source's reader lease, Server-Side Applies the coordinator workload rendered by
// internal/coordinator into each selected member, observes what runs there, and reports it in
// the pipeline's status on the hub.
//
// # One reconcile (reconciler.go)
//
// Reconcile is a short list of phases, each a small function in its own file:
//
//	fetch            reconciler.go  read the CDCPipeline (gone: drop what is kept about it)
//	prepare          reconciler.go  the finalizer, before anything is written to a member; clear a
//	                                termination the spec moved past (a locked status write)
//	reconcileDelete  delete.go      deletion first: empty every member a ReaderLease records,
//	                                keep tombstones for those that do not answer in time
//	observe          observe.go     inventory, placement, member identities, the reader lease
//	gate             gate.go        terminated, invalid or source-changed: status only, no member write
//	place            place.go       clean departed members, lease.Plan (internal/lease), write the lease
//	applyAll         apply.go       the applies, concurrently, one memberwork.ApplyJob per member
//	report           report.go      status (internal/status), events (events.go), requeue
//
// The phases set the status in memory; reconcile writes it once, at the end, when it changed.
// What brings a pipeline back to the queue is in handlers.go (type handlers): member objects by
// their labels, inventory entries, ReaderLeases, PlacementPolicies and hub namespaces, each mapped
// to the pipelines it concerns by a lookup in the hub's cache, and the echoes of our own writes
// filtered out. The work in each member is internal/memberwork's.
//
// The reconciler's parts, each a small type holding what it needs, built once by
// SetupWithManager: fanOut (reconciler.go) runs a reconcile's work on its members; memberReads
// reads what the decisions need of them (identities in observe.go, source databases in
// shared_source.go); hubTenancy (tenancy.go) applies the tenancy boundary; hubFence
// (fencelease.go) is the hub's side of the fence; renderDefaults (apply.go) and lookIntervals
// (report.go) hold what the flags set; handlers and lookup (handlers.go) map events to pipelines.
//
// Decisions are pure functions with table tests: placement.SelectMembers and
// placement.OverrideFor (internal/placement), lease.Plan and lease.PlanRelease (internal/lease), status.Compute
// (internal/status). Only the phases that read or write take a client.
//
// # The fleet rules, and where they live
//
//   - One reader per source identity (internal/lease): a ReaderLease per identity,
//     written with optimistic concurrency before a coordinator starts anywhere; an entry leaves
//     Active only when its member answered that no reader pod is left (internal/memberwork
//     counts pods, terminating ones included) or a person confirmed it gone. Creating a coordinator
//     StatefulSet without having written the lease in the same reconcile takes a quorum read
//     first (lease.Store.MayCreateCoordinator), and every creation first confirms, with a quorum
//     read, that no newer change of the pipeline overtook the apply (stillCurrent).
//   - Deletion precedence (delete.go, leasecontroller.go): the finalizer empties every member the
//     lease records; entries left after TombstoneGrace are tombstones, replayed by the
//     LeaseReconciler when the member answers (by identity, under any name).
//   - Terminal state (gate.go): no member write while status.terminated holds.
//   - Isolation (internal/members: FanOut, Breaker; apply.go): every member's work runs on its own, bounded by
//     MemberTimeout; a hung member is not waited for, a failing one backs off alone.
//   - Idle is quiet: no-op applies are skipped (internal/ssa), echoes of our own writes are not
//     reconciled (ssa.EchoFilter), the status is written only when it changed.
//   - Fenced placements and failover (docs/failover.md): the hub renews a fence Lease per fenced
//     placement (internal/fencelease); a move away from a member that does not answer completes
//     once the fence's bound has passed since the last renewal that may have been written
//     (fencelease.go). A failover placement runs on one candidate and moves after its threshold
//     (internal/failover chooses the candidate).
//   - Members come and go (internal/members: Set, Monitor): each member has an identity (the UID
//     of its kube-system namespace); a periodic health check reports a member that stops
//     answering while idle; a member that leaves the inventory is never emptied by that, and
//     everything kept about it is dropped; objects no lease accounts for are reported as orphans
//     (internal/orphans).
//
// # State that outlives one reconcile
//
// All of it is in memory, rebuilt from the world after a restart, and lost without harm; what
// must survive a crash (where readers may run, tombstones) is in the ReaderLeases.
//
//	members         members.Set        per member: clients, identity, health (the last check),
//	                                   cleared when the member leaves the inventory (Forget).
//	                                   Health is written by the health checks and by work that
//	                                   timed out (markTimedOut); a change requeues the pipelines
//	                                   placed there and the leases that name it. Its Breaker holds
//	                                   the members a reconcile stopped waiting for (slow), with the
//	                                   pipelines that skipped them: requeued when the work ends.
//	running         members.RunningWork the work running per (pipeline, member): no second start.
//	backoff         members.Backoff    per (pipeline, member) retry schedule after an error the
//	                                   member answered with; the reconcile's RequeueAfter carries it.
//	applier         ssa.Applier        per member object: the last applied bytes and
//	                                   resourceVersion, for the no-op check; echoes of our applies.
//	shared          memberwork.SharedReads per member namespace, for a second: its read and its
//	                                   ScaledObjects' targets, shared by the checks of the jobs
//	                                   that create there at once (one read, not one per job).
//	hubEchoes,      ssa.EchoFilter     resourceVersions of our own writes to pipelines and leases:
//	leaseEchoes                        their watch events are not reconciled; a foreign change that
//	                                   crossed a write sets lookAgain, which requeues at once, as
//	                                   does a change of others that a write's answer shows.
//	health          members.Monitor    when each member is next checked.
//	(scanner)       orphans.Scanner    the orphans each member's last scan suspected.
//	fence           hubFence           per fenced placement on a member: whether the hub renews
//	                                   its fence Lease, and the latest instant a renewal it sent
//	                                   may have been written (its fencelease.Renewer). Written by place
//	                                   (hold after the lease write, release before deciding) and
//	                                   by the renewals; read by hubFence.prepare. Rebuilt from the
//	                                   ReaderLeases when the hub starts leading, counting what a
//	                                   previous leader may have sent.
//
// # What it must not do
//
// It must not render objects itself (internal/coordinator does), list member clusters itself
// (internal/inventory does) or delete anything in a member by name alone: every delete carries a
// UID precondition, on objects found by their labels (internal/memberwork says which).
package fleet
