package fleet

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// ConditionMoveBlocked is present (and True) only while a placement move waits on a departed
// member that does not answer.
const ConditionMoveBlocked = "MoveBlocked"

// Condition reasons. CamelCase, and never a person-written string: a condition reason must match
// the API's pattern, status.terminated.reason need not.
const (
	ReasonReady                     = "Ready"
	ReasonPlaced                    = "Placed"
	ReasonNoClustersSelected        = "NoClustersSelected"
	ReasonProgressing               = "Progressing"
	ReasonWaitingForCoordinator     = "WaitingForCoordinator"
	ReasonMemberFailures            = "MemberFailures"
	ReasonTerminated                = "Terminated"
	ReasonWaitingForDepartedCluster = "WaitingForDepartedCluster"
	ReasonRemoving                  = "RemovingFromDepartedClusters"
)

// MemberObservation is what one reconcile saw (or did) in one member.
type MemberObservation struct {
	Name  string
	Phase urutauv1alpha1.ClusterPhase
	// ReadyReplicas of the coordinator StatefulSet, when it was read.
	ReadyReplicas int32
	// AppliedGeneration is the generation applied there with success this reconcile; 0 keeps
	// what status recorded before.
	AppliedGeneration int64
	Message           string
}

// Observation is everything the status is computed from.
type Observation struct {
	Generation int64
	Now        metav1.Time
	// Selected are the members the placement selects; Unknown are named members the inventory
	// lacks.
	Selected, Unknown []string
	// Members has one entry per member shown in status.clusters: selected, waiting and departed.
	Members []MemberObservation
	// Inventory is the new status.inventory.
	Inventory []string
	// Terminated is the new status.terminated.
	Terminated *urutauv1alpha1.Terminated
	// BlockedBy are departed members that hold a move; Waiting the members that wait for it.
	BlockedBy, Waiting []string
	// Removing are departed members still being emptied.
	Removing []string
	// SpecHash is the hash rendered for a member without override, when known.
	SpecHash string
}

// ComputeStatus is the new status from the previous one and what was observed. It is pure and
// deterministic, so an unchanged world gives an identical status and no write. Fields the hub
// does not own (phase, runId) are carried over.
func ComputeStatus(prev urutauv1alpha1.CDCPipelineStatus, o Observation) urutauv1alpha1.CDCPipelineStatus {
	st := *prev.DeepCopy()
	st.Terminated = o.Terminated.DeepCopy()
	st.Inventory = sortedCopy(o.Inventory)
	if o.SpecHash != "" {
		st.SpecHash = o.SpecHash
	}
	st.Clusters = computeClusters(prev.Clusters, o)

	selected := sets.New(o.Selected...)
	ready, applied := 0, 0
	var notReady, failed, unreachable []string
	for _, m := range st.Clusters {
		if !selected.Has(m.Name) {
			continue
		}
		switch m.Phase {
		case urutauv1alpha1.ClusterReady:
			ready++
			applied++
		case urutauv1alpha1.ClusterApplied:
			applied++
			notReady = append(notReady, m.Name)
		case urutauv1alpha1.ClusterUnreachable:
			unreachable = append(unreachable, m.Name)
		case urutauv1alpha1.ClusterDegraded:
			failed = append(failed, m.Name)
		default:
			notReady = append(notReady, m.Name)
		}
	}
	if len(o.Selected) > 0 || prev.ReadyClusters != "" {
		st.ReadyClusters = fmt.Sprintf("%d/%d", ready, len(o.Selected))
	}
	allApplied := applied == len(o.Selected) && len(o.Waiting) == 0
	// observedGeneration records a generation reconciled to a conclusion: applied everywhere, or
	// terminal or stalled for that generation. kstatus and Flux compare it with the generation
	// before they read Stalled, so a stalled generation left unrecorded would read InProgress
	// forever instead of Failed.
	if allApplied || o.Terminated != nil || len(o.BlockedBy) > 0 {
		st.ObservedGeneration = o.Generation
	}

	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: msg,
			ObservedGeneration: o.Generation, LastTransitionTime: o.Now,
		})
	}

	// Placed.
	if len(o.Selected) == 0 {
		msg := "the placement selects no member cluster: the pipeline runs nowhere"
		if len(o.Unknown) > 0 {
			msg += "; not in the cluster inventory: " + strings.Join(o.Unknown, ", ")
		}
		set(urutauv1alpha1.ConditionPlaced, metav1.ConditionFalse, ReasonNoClustersSelected, msg)
	} else {
		msg := "placed on " + strings.Join(o.Selected, ", ")
		if len(o.Unknown) > 0 {
			msg += "; not in the cluster inventory: " + strings.Join(o.Unknown, ", ")
		}
		set(urutauv1alpha1.ConditionPlaced, metav1.ConditionTrue, ReasonPlaced, msg)
	}

	// MoveBlocked, present only when true.
	if len(o.BlockedBy) > 0 && o.Terminated == nil {
		set(ConditionMoveBlocked, metav1.ConditionTrue, ReasonWaitingForDepartedCluster, fmt.Sprintf(
			"not starting on %s until the coordinator is gone from %s, which does not answer; once it is gone for good, annotate the CDCPipeline %s=%s",
			strings.Join(o.Waiting, ", "), strings.Join(o.BlockedBy, ", "),
			urutauv1alpha1.AnnotationConfirmGone, strings.Join(o.BlockedBy, ",")))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, ConditionMoveBlocked)
	}

	// Stalled, Reconciling and Ready.
	var readyReason, readyMsg string
	stalled, reconciling := "", ""
	switch {
	case o.Terminated != nil:
		where := "the hub"
		if o.Terminated.Cluster != "" {
			where = "cluster " + o.Terminated.Cluster
		}
		readyReason = ReasonTerminated
		readyMsg = fmt.Sprintf("terminated (%s) on %s: %s; no member is written until status.terminated is removed or the spec changes",
			o.Terminated.Reason, where, o.Terminated.Message)
		stalled = readyMsg
	case len(o.BlockedBy) > 0:
		readyReason = ReasonWaitingForDepartedCluster
		readyMsg = "placement move waits on " + strings.Join(o.BlockedBy, ", ")
		stalled = readyMsg
	case len(o.Selected) == 0 && len(o.Removing) == 0:
		readyReason = ReasonNoClustersSelected
		readyMsg = "the placement selects no member cluster"
	case len(failed) > 0 || len(unreachable) > 0:
		readyReason = ReasonMemberFailures
		var parts []string
		if len(failed) > 0 {
			parts = append(parts, "failing on "+strings.Join(failed, ", "))
		}
		if len(unreachable) > 0 {
			parts = append(parts, "unreachable: "+strings.Join(unreachable, ", "))
		}
		readyMsg = strings.Join(parts, "; ")
		reconciling = readyMsg
	case len(o.Waiting) > 0 || len(o.Removing) > 0:
		readyReason = ReasonRemoving
		readyMsg = "removing from " + strings.Join(o.Removing, ", ")
		if len(o.Waiting) > 0 {
			readyMsg += " before starting on " + strings.Join(o.Waiting, ", ")
		}
		reconciling = readyMsg
	case len(notReady) > 0:
		readyReason = ReasonWaitingForCoordinator
		readyMsg = "coordinator not ready on " + strings.Join(notReady, ", ")
		reconciling = readyMsg
	default:
		readyReason = ReasonReady
		readyMsg = fmt.Sprintf("coordinator ready on %d/%d clusters", ready, len(o.Selected))
	}
	if readyReason == ReasonReady {
		set(urutauv1alpha1.ConditionReady, metav1.ConditionTrue, readyReason, readyMsg)
	} else {
		set(urutauv1alpha1.ConditionReady, metav1.ConditionFalse, readyReason, readyMsg)
	}
	if stalled != "" {
		set(urutauv1alpha1.ConditionStalled, metav1.ConditionTrue, readyReason, stalled)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, urutauv1alpha1.ConditionStalled)
	}
	if reconciling != "" {
		set(urutauv1alpha1.ConditionReconciling, metav1.ConditionTrue, readyReason, reconciling)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, urutauv1alpha1.ConditionReconciling)
	}
	return st
}

// computeClusters builds status.clusters sorted by name, keeping a member's lastTransitionTime
// while its phase does not change and its observedGeneration when nothing new was applied.
func computeClusters(prev []urutauv1alpha1.ClusterStatus, o Observation) []urutauv1alpha1.ClusterStatus {
	old := map[string]urutauv1alpha1.ClusterStatus{}
	for _, c := range prev {
		old[c.Name] = c
	}
	var out []urutauv1alpha1.ClusterStatus
	for _, m := range o.Members {
		c := urutauv1alpha1.ClusterStatus{
			Name:                     m.Name,
			Phase:                    m.Phase,
			ObservedGeneration:       m.AppliedGeneration,
			CoordinatorReadyReplicas: m.ReadyReplicas,
			Message:                  m.Message,
			LastTransitionTime:       o.Now,
		}
		if p, ok := old[m.Name]; ok {
			if p.Phase == m.Phase {
				c.LastTransitionTime = p.LastTransitionTime
			}
			if c.ObservedGeneration == 0 {
				c.ObservedGeneration = p.ObservedGeneration
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b urutauv1alpha1.ClusterStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := sets.List(sets.New(s...))
	return out
}
