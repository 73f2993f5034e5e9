// Package fleet is the hub reconciler: it places each CDCPipeline on member clusters, Server-Side
// Applies the coordinator workload rendered by internal/coordinator into each selected member,
// observes what runs there, and reports it in the pipeline's status on the hub.
//
// It owns the fleet rules (docs/architecture.md, "Where each fleet rule lives"): deletion first (finalizer urutau.io/fleet-cleanup,
// tombstones for members that do not answer), the terminal gate (no member write while
// status.terminated is set), stop-before-start placement moves, per-member isolation, and quiet
// idling (no write when nothing changed).
//
// Decisions (placement, moves, status) are pure functions; only the member and hub I/O steps take
// a client. It must not render objects itself (internal/coordinator does), list member clusters
// itself (internal/fleet/inventory does) or delete anything in a member by name alone: every
// delete is guarded by the pipeline-UID label and a UID precondition.
package fleet
