// Package tombstones replays the tombstones of the reader lease: the entries a ReaderLease keeps
// for pipelines that are gone (deleted while a member could not be emptied within
// --tombstone-grace, or re-created under a new UID). It is the hub's second controller, beside the
// pipeline controller of internal/fleet, with which it shares the member connections
// (members.Set) and the fan-out of work on members; fleet builds it and wakes it.
//
//	reconciler.go  Reconciler: empty the members a gone pipeline's entries name, by identity and
//	               under any name, and drop the entries and the lease once nothing is left
//	setup.go       SetupWithManager (ReaderLeases, inventory entries that (re)join, pipelines
//	               removed from the hub), Requeue
//
// A member that does not answer is not polled: its return (members.Monitor) or its registration
// brings its leases back. Entries of live pipelines, a terminated pipeline's included, are theirs
// alone.
package tombstones
