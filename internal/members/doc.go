// Package members is how the hub reaches its member clusters and knows how each one does,
// shared by the controllers.
//
//	set.go       Set: per member, its connection (Conn: a cached and a live client), its identity
//	             (the UID of kube-system, ReadIdentity) and its Health; Forget drops it all
//	liveness.go  Liveness: whether a member's API server answers, from every request sent (a
//	             RoundTripper), when a write left unanswered may still land (WriteMayLand) and
//	             when its cache may lag (CacheMayLag); MemberRequestDeadline
//	health.go    Monitor: a periodic check of every member, idle or not, in its own goroutine
//	records.go   Records: the health checks' findings, published as one coordination Lease per
//	             member for people and tools
//	fanout.go    FanOut: run work on many members at once, each bounded, none waiting on a hung
//	             one (Silence), panics recovered
//	breaker.go   Breaker (members a reconcile stopped waiting for), RunningWork (no second start
//	             of the same work), Backoff (retries of one pipeline on one member)
//	errors.go    IsUnreachable, IsTimeout, ErrDown, ErrOtherCluster: the error classes
//	metrics.go   the per-member metrics of this package, labelled Label
//
// It imports none of internal/lease, internal/status or internal/ssa: the reconcilers
// (internal/fleet) give it the work, and a Writer for the clients that apply.
package members
