// Package fence decides, from the renewals a coordinator pod has seen of its fence Lease, whether
// the reader it guards may run: start it, keep it, stop it (SIGTERM), kill it (SIGKILL), or wait
// for a renewal. It is pure: no client, no process, no clock of its own; cmd/fence feeds it polls
// and readings of the pod's monotonic clock and carries out what it decides.
//
// # The guarantee
//
// The hub renews a Lease in the member for each fenced placement while it holds the placement
// there. The reader runs only while a renewal was written less than TTL ago; it gets SIGTERM when
// that is no longer so, and SIGKILL Grace later. So a reader is dead at most TTL+Grace after the
// last renewal was written, and a hub that waits TTL+Grace+margin after its last acknowledged
// renewal (the write happened before the acknowledgement) knows the old reader is gone, without
// hearing from the member.
//
// # Why no wall clock is read
//
// The deadline is measured on the pod's own monotonic clock from a lower bound of when the renewal
// was written, never from the Lease's renewTime. renewTime is the hub's wall clock: compared with
// the pod's wall clock it is off by the skew between the two machines (minutes on a host whose NTP
// is broken, hours on one with a wrong time zone setting), and either clock may be stepped at any
// moment. A skew in one direction makes the fence stop a healthy reader; in the other it keeps a
// reader running long after the hub stopped renewing, which is exactly the overlap the fence
// exists to prevent. The fence uses renewTime only as a token that changes with each renewal.
//
// The lower bound comes from the order of the polls: the fence reads the Lease with one request at
// a time, and notes when it sent each. When a poll shows a token the previous answered poll did
// not, the renewal was written after that previous poll was served (reads are linearizable: it
// showed the latest state when it was served), hence after that poll was sent. The send time of
// the previous answered poll is therefore no later than the write, on the pod's monotonic clock.
// The fence never needs to know how old a renewal is when it first reads the Lease: the first
// poll only sets the baseline, and the reader starts at the first change after it.
//
// What this assumes: the pod's monotonic clock and the hub's run at the same rate within a small
// drift (the hub's margin covers drift over TTL+Grace); the clock counts time the machine spent
// suspended (cmd/fence reads CLOCK_BOOTTIME); the Lease's reads are linearizable (a GET without a
// resourceVersion is a quorum read). It assumes nothing about the offset between any two clocks.
package fence
