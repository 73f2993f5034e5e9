// Package memberwork is the work the hub does in one member for one pipeline: each job is a type
// with a Run method that talks to that member only, and its outcome is a value the pipeline's
// reconcile (internal/fleet) reads. A job never writes the hub.
//
//	ApplyJob   apply.go     Server-Side Apply the rendered workload, in the single-cluster
//	                        operator's order; its Result says what the member runs (Obs),
//	                        what failed and how (Fail), and the Warning to emit when new
//	           tenancy.go   the checks before writing: the member namespace (namespaceCheck),
//	                        the Secrets the pipeline mounts (secretsOpen, stopCoordinator),
//	                        the names its Role grants (workerNamesFree, scalersOf), the
//	                        adoption rules (GuardAdoption); Denied for a refused member
//	CleanJob   clean.go     empty a member the pipeline left, and say what is left (Departed):
//	                        Holding while a reader pod may run, Draining, Empty; the coordinator
//	                        StatefulSet is scaled to zero, and deleted once its controller saw it
//	                        (or after the patience); a write left unanswered counts as landed
//	                        until it could have (fenceLateWrites)
//	CleanupMember, CleanEntries, DeleteStrayPod, ControllerOf: the same cleanup for the orphan
//	                        scan, the tombstone replay and stray pods
//	LeaderFence leader.go   refuses the applies once this hub replica may no longer lead (the
//	                        cleanup's deletes only stop readers, and do not ask it)
//
// Every delete carries a UID precondition, and nothing is deleted by name alone: objects are
// found by the pipeline-UID label, except a coordinator StatefulSet a person stripped of that
// label but that keeps the hub's other labels for the pipeline (deleteUnlabelled), and a reader
// pod no StatefulSet controls, found by the coordinator's selector labels (DeleteStrayPod). Its metrics (metrics.go) are urutau_fleet_member_reconcile_duration_seconds and
// urutau_fleet_member_errors_total, per member.
package memberwork
