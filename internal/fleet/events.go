package fleet

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/status"
	"github.com/urutau-io/fleet/internal/tombstones"
)

// Event reasons on the CDCPipeline. The first three are the single-cluster operator's.
const (
	EventInvalidSpec         = memberwork.EventInvalidSpec
	EventSecretNotReady      = memberwork.EventSecretNotReady
	EventInvalidSecret       = memberwork.EventInvalidSecret
	EventReady               = "Ready"
	EventClusterUnreachable  = memberwork.EventClusterUnreachable
	EventApplyFailed         = memberwork.EventApplyFailed
	EventRemoved             = "RemovedFromCluster"
	EventMoveBlocked         = "MoveBlocked"
	EventTombstoned          = "Tombstoned"
	EventTerminationCleared  = "TerminationCleared"
	EventTerminated          = "Terminated"
	EventConfirmedGone       = "ClusterConfirmedGone"
	EventConfirmationIgnored = "ConfirmationIgnored"
	EventWaitingForReader    = "WaitingForReader"
	EventClusterIdentity     = "ClusterIdentityChanged"
	EventClusterDeregistered = "ClusterDeregistered"
	EventStrayObjects        = "StrayObjectsFound"
	EventTombstoneReplayed   = tombstones.EventReplayed
	// EventFenceDrained: a fenced member the pipeline left is drained by the fence's bound.
	EventFenceDrained = "FencedClusterDrained"
)

// emitEvents reports changes of state, not writes: a member whose phase or message changed to a
// failure, the pipeline becoming ready, a member emptied, a condition that appeared. A write that
// changes nothing a person reads (the applies of a rollout, say) shows in status.clusters[] and
// the log, not as an event: events are writes to the hub too, and a pipeline's first placement
// makes none (hack/bench counts them).
func emitEvents(emit emitFunc, p, orig *urutauv1alpha1.CDCPipeline, results map[string]memberwork.Result, pl *placed) {
	prev := map[string]urutauv1alpha1.ClusterStatus{}
	for _, c := range orig.Status.Clusters {
		prev[c.Name] = c
	}
	for _, m := range sortedKeys(results) {
		res := results[m]
		if c, ok := prev[m]; res.EventReason != "" && (!ok || c.Phase != res.Obs.Phase || c.Message != res.Obs.Message) {
			emit(p, corev1.EventTypeWarning, res.EventReason, "Apply", "cluster %q: %s", m, res.EventMessage)
		}
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, urutauv1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue &&
		!meta.IsStatusConditionTrue(orig.Status.Conditions, urutauv1alpha1.ConditionReady) {
		emit(p, corev1.EventTypeNormal, EventReady, "Apply", "%s (generation %d)", c.Message, p.Generation)
	}
	for _, m := range pl.decision.Dropped {
		emit(p, corev1.EventTypeNormal, EventRemoved, "Move", "removed from cluster %q, which the placement no longer selects", m)
	}
	eventOnNewCondition(emit, p, orig, status.ConditionMoveBlocked, corev1.EventTypeWarning, EventMoveBlocked, "Move")
	eventOnNewCondition(emit, p, orig, status.ConditionClusterIdentityChanged, corev1.EventTypeWarning, EventClusterIdentity, "Place")
	eventOnNewCondition(emit, p, orig, status.ConditionClustersDeregistered, corev1.EventTypeWarning, EventClusterDeregistered, "Place")
	if c := meta.FindStatusCondition(p.Status.Conditions, status.ConditionReaderLease); c != nil && c.Reason != status.ReasonLeaseHeld {
		if o := meta.FindStatusCondition(orig.Status.Conditions, status.ConditionReaderLease); o == nil || o.Reason != c.Reason {
			emit(p, corev1.EventTypeWarning, EventWaitingForReader, "Place", "%s", c.Message)
		}
	}
}

// eventOnNewCondition emits an event with the condition's message when t appears.
func eventOnNewCondition(emit emitFunc, p, orig *urutauv1alpha1.CDCPipeline, t, eventType, reason, action string) {
	c := meta.FindStatusCondition(p.Status.Conditions, t)
	if c == nil || meta.FindStatusCondition(orig.Status.Conditions, t) != nil {
		return
	}
	emit(p, eventType, reason, action, "%s", c.Message)
}

// emitFunc emits one event on a pipeline (CoordinatorReconciler.event).
type emitFunc func(p *urutauv1alpha1.CDCPipeline, eventType, reason, action, note string, args ...any)

func (r *CoordinatorReconciler) event(p *urutauv1alpha1.CDCPipeline, eventType, reason, action, note string, args ...any) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(p, nil, eventType, reason, action, note, args...)
}
