package fleet

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// engageWait bounds how long one member's work waits for the provider to engage a member the
// inventory lists.
const engageWait = 2 * time.Second

// engagedCluster is r.Manager.GetCluster, waiting up to engageWait (within ctx) while the member
// is not engaged yet.
//
// Why (found by test/faults): the provider engages members from its own controller, which starts
// together with ours when the hub starts or a replica becomes the leader. A pipeline reconciled
// before its members are engaged saw them "not engaged", was retried only after RetryInterval
// (30 s), and nothing else woke it up for a member holding none of its objects yet: a restarted
// or newly elected hub finished an interrupted rollout 30 s late. Engagement takes well under a
// second, so a short wait closes the race; a member that never engages (a kubeconfig that does
// not parse) costs this wait once per retry, in its own goroutine.
func (r *CoordinatorReconciler) engagedCluster(ctx context.Context, member string) (cluster.Cluster, error) {
	deadline := time.Now().Add(engageWait)
	for {
		cl, err := r.Manager.GetCluster(ctx, mcNameOf(member))
		if err == nil || !errors.Is(err, multicluster.ErrClusterNotFound) || time.Now().After(deadline) {
			return cl, err
		}
		select {
		case <-ctx.Done():
			return cl, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
