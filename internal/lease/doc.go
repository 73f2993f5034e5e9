// Package lease holds the rules of the reader lease (urutauv1alpha1.ReaderLease), which make "one
// reader per source identity, anywhere in the fleet" hold for every history, and the store that
// reads and writes it on the hub.
//
//	plan.go   Name, Key, State; Plan (a live pipeline: where it runs, where it waits) and
//	          PlanRelease (a deleted or gone pipeline): pure, no client
//	entries.go  the entries of one pipeline (OwnEntries, DepartedEntries, Records), renames
//	          (FollowRenames: an entry follows its cluster to the name it answers under now),
//	          accepted identities (AcceptedGone, IdentityMoved), strays (WithEntry): pure
//	store.go  Store: cached and quorum reads, writes with optimistic concurrency (ErrChanged),
//	          MayCreateCoordinator, and the index of leases by pipeline UID
//
// One lease per source identity (one per pipeline when its source has none), in the hub's
// namespace. Its holder is the only pipeline that may start readers; its entries are every
// (member, identity of that member, pipeline) that holds or may hold that pipeline's objects,
// Active while a reader may run there. The rules:
//   - an entry becomes Active, in a write with optimistic concurrency, before the coordinator is
//     created in that member;
//   - a pipeline starts on a member (a new entry, or a Drained one made Active again) only when it
//     holds the lease and every Active entry of the lease is one of its own on a member it stays
//     on: a move waits for the departed member, a rename or a re-create waits for every member of
//     the old pipeline, and two creates racing past admission meet at the lease's create;
//   - an entry leaves Active only when its member answered that no reader pod is left (Drained),
//     or a person confirmed the member gone (Gone); it is removed once the member holds nothing of
//     the pipeline. A deleted pipeline's entries stay as its tombstones.
//   - members that stay in the placement are never touched by a move.
package lease
