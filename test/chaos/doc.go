// Package chaos is the randomized history checker of the fleet (`make test-chaos`), modelled on
// etcd's robustness suite: a seeded generator writes a history (a list of plain-data operations:
// placement moves and flaps, spec changes that roll the coordinator, deletes, renames (within and
// across the history's two namespaces), racing duplicate creates (a MySQL serverId spelled
// plainly or with leading zeros, Postgres slots), terminations, member API servers and kubelets
// stopped, hubs killed or frozen past their leader Lease, foreign finalizers; people's hands on
// members: hand scales, pods made by hand, StatefulSets deleted or edited, exports restored where
// the pipeline left; the inventory: selector labels gained and lost, kubeconfig Secrets removed
// and added, a member registered a second time under another name (renames);
// source Secrets pointed at one database or several; fenced and failover placements, and members
// cut off from the hub only, refused or hanging, or flapping around a failover threshold; members
// slow: a path to the hub that answers late, an admission webhook that holds the hub's writes,
// either past --member-timeout so that writes the hub gave up on land late), an
// executor plays it against a local fleet (internal/localfleet: a hub and three kwok members, two
// hub processes with leader election; the hub reaches members through proxies), a recorder watches and polls every cluster meanwhile (coordinator pods, the objects
// the hub writes into members, pipelines, tombstones and reader leases on the hub), and a checker
// runs the fleet's invariants over the whole recording:
//
//	I1 one reader per source identity: never two pipelines' coordinator pods of one identity at
//	   once anywhere, never two pods of one pipeline reading one database at once (one member,
//	   or members whose source Secrets name one database), and stop-before-start for a
//	   pipeline's moves (DESIGN.md §5.3), placements resolved against the inventory;
//	I2 after the history settles: nothing of a deleted pipeline left in any member, no tombstone,
//	   no reader lease of a deleted pipeline;
//	I3 no member write for a pipeline while it is terminated;
//	I4 a deletion completes within --tombstone-grace plus a stated bound, members down or not;
//	I5 a reader made by hand, or one in a member its placement left, is stopped within a stated
//	   bound of the time the hub could act there;
//	I6 a failover placement leaves a member lost for good within its threshold plus the fence's
//	   bound plus a stated slack, with no person acting: a reader surely runs where it went.
//
// A fenced pod is a reader only while the fence's decision (internal/fence), run by the checker
// with the pod's own fence arguments over the versions of its Lease the member committed, lets
// its command run: kwok runs no process.
//
// A failing history is printed and saved as JSON; `-chaos.replay=FILE` plays it again.
// docs/reliability.md explains how the checker avoids false positives (it compares times only
// through bounds derived from each cluster's own resourceVersions) and how to run it.
//
// Pure parts (operations, generator, checker) have unit tests that need no cluster; everything
// else needs KUBEBUILDER_ASSETS (hack/control-plane.sh print-dir) and fails without it.
package chaos
