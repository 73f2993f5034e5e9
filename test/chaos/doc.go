// Package chaos is the randomized history checker of the fleet (`make test-chaos`), modelled on
// etcd's robustness suite: a seeded generator writes a history (a list of plain-data operations:
// placement moves and flaps, deletes, renames, racing duplicate creates, terminations, member API
// servers and kubelets stopped, hubs killed, foreign finalizers), an executor plays it against a
// local fleet (internal/localfleet: a hub and three kwok members, two hub processes with leader
// election), a recorder watches and polls every cluster meanwhile (coordinator pods, the objects
// the hub writes into members, pipelines, tombstones and reader leases on the hub), and a checker
// runs the fleet's invariants over the whole recording:
//
//	I1 one reader per source identity: never two pipelines' coordinator pods of one identity at
//	   once anywhere, and stop-before-start for a pipeline's moves (DESIGN.md §5.3);
//	I2 after the history settles: nothing of a deleted pipeline left in any member, no tombstone,
//	   no reader lease of a deleted pipeline;
//	I3 no member write for a pipeline while it is terminated;
//	I4 a deletion completes within --tombstone-grace plus a stated bound, members down or not.
//
// A failing history is printed and saved as JSON; `-chaos.replay=FILE` plays it again.
// docs/reliability.md explains how the checker avoids false positives (it compares times only
// through bounds derived from each cluster's own resourceVersions) and how to run it.
//
// Pure parts (operations, generator, checker) have unit tests that need no cluster; everything
// else needs KUBEBUILDER_ASSETS (hack/control-plane.sh print-dir) and fails without it.
package chaos
