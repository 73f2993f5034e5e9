package status

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// Domain condition types, besides the API's Ready, Reconciling, Stalled and Placed.
const (
	// ConditionReaderLease says whether the pipeline holds its source's reader lease, and what it
	// waits for when it does not.
	ConditionReaderLease = "ReaderLease"
	// ConditionMoveBlocked is present (and True) only while a placement move waits on a departed
	// member that does not answer.
	ConditionMoveBlocked = "MoveBlocked"
	// ConditionClusterIdentityChanged is present (and True) only while a member the pipeline is
	// placed on answers as another cluster than the one its objects went to.
	ConditionClusterIdentityChanged = "ClusterIdentityChanged"
	// ConditionSharedSource is present (and True) only while selected members wait because
	// another member of the placement reads the same database (one reader per source).
	ConditionSharedSource = "SharedSource"
	// ConditionClustersDeregistered is present (and True) only while members that may hold the
	// pipeline's objects are missing from the cluster inventory.
	ConditionClustersDeregistered = "ClustersDeregistered"
)

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
	ReasonLeaseHeld                 = "Held"
	ReasonSourceInUse               = "SourceInUse"
	ReasonWaitingForReaders         = "WaitingForReaders"
	ReasonSourceChanged             = "SourceChanged"
	ReasonIdentityChanged           = "IdentityChanged"
	ReasonDeregistered              = "Deregistered"
	ReasonSourceShared              = "SourceShared"
	ReasonHubMisconfigured          = "HubMisconfigured"
)

// MemberObservation is what one reconcile saw (or did) in one member.
type MemberObservation struct {
	Name      string
	ClusterID string
	Phase     urutauv1alpha1.ClusterPhase
	// ReadyReplicas of the coordinator StatefulSet, when it was read.
	ReadyReplicas int32
	// AppliedGeneration is the generation applied there with success this reconcile; 0 keeps
	// what status recorded before.
	AppliedGeneration int64
	Message           string
}

// LeaseView is what the status says of the reader lease.
type LeaseView struct {
	// Known: the lease was decided on this reconcile (a frozen pipeline leaves the condition).
	Known bool
	Name  string
	// Source is the identity it guards; nil when the source has none.
	Source *urutauv1alpha1.SourceIdentity
	// Holder is the other pipeline that holds it, when not this one; HolderLive tells that it is
	// a live pipeline, not a gone one whose readers have not stopped yet.
	Holder     *urutauv1alpha1.PipelineRef
	HolderLive bool
	// Blocking are the entries of other pipelines, or of this one on members it left, that keep
	// it from starting where it waits.
	Blocking []urutauv1alpha1.LeaseMember
	// Namespace is the pipeline's: pipelines of other namespaces are not named to it.
	Namespace string
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
	// Inventory is the new status.inventory; LeaseName the new status.readerLease.
	Inventory []string
	LeaseName string
	// Terminated is the new status.terminated.
	Terminated *urutauv1alpha1.Terminated
	// BlockedBy are departed members that do not answer and hold a move; Waiting the members
	// that wait; Removing the departed members still being emptied.
	BlockedBy, Waiting, Removing []string
	// SpecHash is the hash rendered for a member without override, when known.
	SpecHash string
	Lease    LeaseView
	// Refused are selected members the pipeline does not run on, with why (cluster identity).
	Refused map[string]string
	// Deregistered are members that may hold the pipeline's objects but left the inventory.
	Deregistered []string
	// SourceChanged stalls the pipeline with this message.
	SourceChanged string
	// HubMisconfigured stalls the pipeline with this message: the hub lacks a setting it needs.
	HubMisconfigured string
	// Held are selected members the pipeline does not run on because another member reads the
	// same database, with why (shared_source.go).
	Held map[string]string
}

// Compute is the new status from the previous one and what was observed. It is pure and
// deterministic, so an unchanged world gives an identical status and no write. Fields the hub
// does not own (phase, runId) are carried over.
func Compute(prev urutauv1alpha1.CDCPipelineStatus, o Observation) urutauv1alpha1.CDCPipelineStatus {
	st := *prev.DeepCopy()
	st.Terminated = o.Terminated.DeepCopy()
	st.Inventory = sortedUnique(o.Inventory)
	if o.LeaseName != "" {
		st.ReaderLease = o.LeaseName
	}
	if o.SpecHash != "" {
		st.SpecHash = o.SpecHash
	}
	st.Clusters = Clusters(prev.Clusters, o)
	s := summarize(st.Clusters, o)
	if len(o.Selected) > 0 || prev.ReadyClusters != "" {
		st.ReadyClusters = fmt.Sprintf("%d/%d", s.ready, len(o.Selected))
	}
	// observedGeneration records a generation reconciled to a conclusion: applied everywhere, or
	// terminal or stalled for that generation. kstatus and Flux compare it with the generation
	// before they read Stalled, so a stalled generation left unrecorded would read InProgress
	// forever instead of Failed.
	v := verdict(o, s)
	if (s.applied == len(o.Selected) && len(o.Waiting) == 0) || v.stalled != "" {
		st.ObservedGeneration = o.Generation
	}
	c := Conditions{Into: &st.Conditions, Generation: o.Generation, Now: o.Now}
	c.placed(o)
	c.readerLease(o)
	c.PresentWhen(ConditionMoveBlocked, len(o.BlockedBy) > 0 && o.Terminated == nil, ReasonWaitingForDepartedCluster, moveBlockedMessage(o))
	c.PresentWhen(ConditionClusterIdentityChanged, len(o.Refused) > 0 && o.Terminated == nil, ReasonIdentityChanged, refusedMessage(o.Refused))
	c.PresentWhen(ConditionSharedSource, len(o.Held) > 0 && o.Terminated == nil, ReasonSourceShared, heldMessage(o.Held))
	c.PresentWhen(ConditionClustersDeregistered, len(o.Deregistered) > 0, ReasonDeregistered, fmt.Sprintf(
		"may hold this pipeline's objects but left the cluster inventory: %s; the hub leaves them as they are until they are registered again (under any name) or confirmed gone with %s",
		strings.Join(o.Deregistered, ", "), urutauv1alpha1.AnnotationConfirmGone))
	c.summary(v)
	return st
}

// memberSummary counts the selected members by phase.
type memberSummary struct {
	ready, applied                int
	notReady, failed, unreachable []string
}

func summarize(clusters []urutauv1alpha1.ClusterStatus, o Observation) memberSummary {
	selected := sets.New(o.Selected...)
	var s memberSummary
	for _, m := range clusters {
		if !selected.Has(m.Name) {
			continue
		}
		switch m.Phase {
		case urutauv1alpha1.ClusterReady:
			s.ready++
			s.applied++
		case urutauv1alpha1.ClusterApplied:
			s.applied++
			s.notReady = append(s.notReady, m.Name)
		case urutauv1alpha1.ClusterUnreachable:
			s.unreachable = append(s.unreachable, m.Name)
		case urutauv1alpha1.ClusterDegraded:
			s.failed = append(s.failed, m.Name)
		default:
			s.notReady = append(s.notReady, m.Name)
		}
	}
	return s
}

// verdictOf is the Ready summary: its reason and message, and whether the pipeline is stalled
// (needs a person) or reconciling (the hub is making progress).
type verdictOf struct {
	reason, message      string
	stalled, reconciling string
}

// verdict decides Ready, Stalled and Reconciling, most pressing first.
func verdict(o Observation, s memberSummary) verdictOf {
	stall := func(reason, msg string) verdictOf { return verdictOf{reason: reason, message: msg, stalled: msg} }
	progress := func(reason, msg string) verdictOf { return verdictOf{reason: reason, message: msg, reconciling: msg} }
	switch {
	case o.Terminated != nil:
		where := "the hub"
		if o.Terminated.Cluster != "" {
			where = "cluster " + o.Terminated.Cluster
		}
		return stall(ReasonTerminated, fmt.Sprintf("terminated (%s) on %s: %s; no member is written until status.terminated is removed or the spec changes",
			o.Terminated.Reason, where, o.Terminated.Message))
	case o.SourceChanged != "":
		return stall(ReasonSourceChanged, o.SourceChanged)
	case o.HubMisconfigured != "":
		return stall(ReasonHubMisconfigured, o.HubMisconfigured)
	case o.Lease.HolderLive:
		return stall(ReasonSourceInUse, leaseMessage(o.Lease))
	case len(o.BlockedBy) > 0:
		return stall(ReasonWaitingForDepartedCluster, "placement move waits on "+strings.Join(o.BlockedBy, ", "))
	case len(o.Held) > 0:
		return stall(ReasonSourceShared, heldMessage(o.Held))
	case len(o.Refused) > 0 && len(o.Refused) == len(o.Selected):
		return stall(ReasonIdentityChanged, refusedMessage(o.Refused))
	case o.Lease.Holder != nil:
		return progress(ReasonWaitingForReaders, leaseMessage(o.Lease))
	case len(o.Selected) == 0 && len(o.Removing) == 0:
		return verdictOf{reason: ReasonNoClustersSelected, message: "the placement selects no member cluster"}
	case len(s.failed) > 0 || len(s.unreachable) > 0:
		var parts []string
		if len(s.failed) > 0 {
			parts = append(parts, "failing on "+strings.Join(s.failed, ", "))
		}
		if len(s.unreachable) > 0 {
			parts = append(parts, "unreachable: "+strings.Join(s.unreachable, ", "))
		}
		return progress(ReasonMemberFailures, strings.Join(parts, "; "))
	case len(o.Waiting) > 0 || len(o.Removing) > 0:
		msg := "removing from " + strings.Join(o.Removing, ", ")
		if len(o.Removing) == 0 {
			msg = "waiting for " + BlockingMessage(o.Lease)
		}
		if len(o.Waiting) > 0 {
			msg += " before starting on " + strings.Join(o.Waiting, ", ")
		}
		return progress(ReasonRemoving, msg)
	case len(s.notReady) > 0:
		return progress(ReasonWaitingForCoordinator, "coordinator not ready on "+strings.Join(s.notReady, ", "))
	}
	return verdictOf{reason: ReasonReady, message: fmt.Sprintf("coordinator ready on %d/%d clusters", s.ready, len(o.Selected))}
}

// Conditions sets conditions in Into with the observed generation and time.
type Conditions struct {
	Into       *[]metav1.Condition
	Generation int64
	Now        metav1.Time
}

// Set sets condition t.
func (c Conditions) Set(t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(c.Into, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: c.Generation, LastTransitionTime: c.Now,
	})
}

// PresentWhen sets t True when on, and removes it otherwise.
func (c Conditions) PresentWhen(t string, on bool, reason, msg string) {
	if on {
		c.Set(t, metav1.ConditionTrue, reason, msg)
		return
	}
	meta.RemoveStatusCondition(c.Into, t)
}

func (c Conditions) placed(o Observation) {
	unknown := ""
	if len(o.Unknown) > 0 {
		unknown = "; not in the cluster inventory: " + strings.Join(o.Unknown, ", ")
	}
	if len(o.Selected) == 0 {
		c.Set(urutauv1alpha1.ConditionPlaced, metav1.ConditionFalse, ReasonNoClustersSelected, "the placement selects no member cluster: the pipeline runs nowhere"+unknown)
		return
	}
	c.Set(urutauv1alpha1.ConditionPlaced, metav1.ConditionTrue, ReasonPlaced, "placed on "+strings.Join(o.Selected, ", ")+unknown)
}

func (c Conditions) readerLease(o Observation) {
	l := o.Lease
	switch {
	case !l.Known:
	case l.HolderLive:
		c.Set(ConditionReaderLease, metav1.ConditionFalse, ReasonSourceInUse, leaseMessage(l))
	case l.Holder != nil:
		c.Set(ConditionReaderLease, metav1.ConditionFalse, ReasonWaitingForReaders, leaseMessage(l))
	case l.Source == nil:
		c.Set(ConditionReaderLease, metav1.ConditionTrue, ReasonLeaseHeld, fmt.Sprintf("the source has no reader identity; ReaderLease %s records where the pipeline runs", l.Name))
	default:
		c.Set(ConditionReaderLease, metav1.ConditionTrue, ReasonLeaseHeld, fmt.Sprintf("holds ReaderLease %s: the only reader of %s", l.Name, DescribeSource(l.Source)))
	}
}

func (c Conditions) summary(v verdictOf) {
	status := metav1.ConditionFalse
	if v.reason == ReasonReady {
		status = metav1.ConditionTrue
	}
	c.Set(urutauv1alpha1.ConditionReady, status, v.reason, v.message)
	c.PresentWhen(urutauv1alpha1.ConditionStalled, v.stalled != "", v.reason, v.stalled)
	c.PresentWhen(urutauv1alpha1.ConditionReconciling, v.reconciling != "", v.reason, v.reconciling)
}

// DescribeSource names a source identity, as messages show it.
func DescribeSource(s *urutauv1alpha1.SourceIdentity) string {
	return fmt.Sprintf("%s %s %q", s.Kind, s.Field, s.Value)
}

// leaseMessage says who holds the lease and what the pipeline waits for. A holder in another
// namespace is not named: the pipeline's owner may not see other tenants' pipelines.
func leaseMessage(l LeaseView) string {
	holder := "a pipeline in another namespace"
	if l.Holder.Namespace == l.Namespace {
		holder = "CDCPipeline " + l.Holder.Name
	}
	if l.HolderLive {
		where := ""
		if len(l.Blocking) > 0 && l.Holder.Namespace == l.Namespace {
			var ms []string
			for _, e := range l.Blocking {
				ms = append(ms, e.Cluster)
			}
			where = " on " + strings.Join(sortedUnique(ms), ", ")
		}
		return fmt.Sprintf("%s is read by %s%s (ReaderLease %s): this pipeline starts nowhere until that one is deleted and its readers have stopped",
			DescribeSource(l.Source), holder, where, l.Name)
	}
	return fmt.Sprintf("waiting for %s before reading %s (ReaderLease %s)", BlockingMessage(l), DescribeSource(l.Source), l.Name)
}

// BlockingMessage names the readers that must stop first.
func BlockingMessage(l LeaseView) string {
	var parts []string
	for _, e := range l.Blocking {
		who := "a pipeline in another namespace"
		if e.PipelineNamespace == l.Namespace {
			who = e.PipelineName
		}
		parts = append(parts, fmt.Sprintf("the reader of %s on cluster %s to stop", who, e.Cluster))
	}
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), ", ")
}

func moveBlockedMessage(o Observation) string {
	return fmt.Sprintf(
		"not starting on %s until the coordinator is gone from %s, which does not answer; once it is gone for good, annotate the CDCPipeline %s=%s",
		strings.Join(o.Waiting, ", "), strings.Join(o.BlockedBy, ", "),
		urutauv1alpha1.AnnotationConfirmGone, strings.Join(o.BlockedBy, ","))
}

func heldMessage(held map[string]string) string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(held)) {
		parts = append(parts, fmt.Sprintf("cluster %s: %s", m, held[m]))
	}
	return strings.Join(parts, "; ")
}

func refusedMessage(refused map[string]string) string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(refused)) {
		parts = append(parts, refused[m])
	}
	return strings.Join(parts, "; ")
}

// Clusters builds status.clusters sorted by name, keeping a member's lastTransitionTime
// while its phase does not change and its observedGeneration when nothing new was applied.
func Clusters(prev []urutauv1alpha1.ClusterStatus, o Observation) []urutauv1alpha1.ClusterStatus {
	old := map[string]urutauv1alpha1.ClusterStatus{}
	for _, c := range prev {
		old[c.Name] = c
	}
	var out []urutauv1alpha1.ClusterStatus
	for _, m := range o.Members {
		c := urutauv1alpha1.ClusterStatus{
			Name:                     m.Name,
			ClusterID:                m.ClusterID,
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
			if c.ClusterID == "" {
				c.ClusterID = p.ClusterID
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b urutauv1alpha1.ClusterStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Now is a status timestamp; whole seconds, as the API server stores them, so a value
// read back compares equal.
func Now() metav1.Time { return metav1.Now().Rfc3339Copy() }

// sortedUnique is s sorted without repeats; nil when empty, as status leaves it unset.
func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return sets.List(sets.New(s...))
}
