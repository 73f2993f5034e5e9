package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FailoverPlacement runs the pipeline on one member at a time, chosen among candidates: the first
// healthy one in preference order, and the next healthy one when the member it runs on has been
// lost (its API server not answering the hub's health checks) for Threshold. It never moves back
// by itself: a person moves it with the annotation urutau.io/failover-to. A failover placement is
// always fenced (spec.placement.fenced), so that a move away from a member the hub cannot reach
// completes by itself once the fence's bound has passed (docs/failover.md).
// +kubebuilder:validation:XValidation:rule="(has(self.candidates) && size(self.candidates) > 0) || has(self.candidateSelector)",message="a failover placement needs candidates or a candidateSelector"
// +kubebuilder:validation:XValidation:rule="!has(self.candidateSelector) || has(self.candidateSelector.matchLabels) || has(self.candidateSelector.matchExpressions)",message="candidateSelector must not be empty: an empty selector would make every member cluster a candidate; list the labels to match, or remove it"
type FailoverPlacement struct {
	// Candidates are member cluster names, most preferred first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Candidates []string `json:"candidates,omitempty"`

	// CandidateSelector adds the members whose inventory labels match, after Candidates, in
	// name order.
	// +optional
	CandidateSelector *metav1.LabelSelector `json:"candidateSelector,omitempty"`

	// Threshold is how long the member the pipeline runs on must have been lost before the
	// pipeline moves to the next healthy candidate. Default 2m; at least 10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="threshold must be at least 10s: a shorter one would move pipelines on a member's passing hiccup"
	Threshold *metav1.Duration `json:"threshold,omitempty"`
}

// DefaultFailoverThreshold is FailoverPlacement.Threshold when unset.
const DefaultFailoverThreshold = 2 * time.Minute

// FailoverStatus is where a failover placement runs, and its last move.
type FailoverStatus struct {
	// Member is the candidate the pipeline runs on, or is moving to.
	// +optional
	Member string `json:"member,omitempty"`

	// Since is when Member was chosen.
	// +optional
	Since metav1.Time `json:"since,omitempty"`

	// Failovers counts the moves the hub made by itself since the pipeline was created.
	// +optional
	Failovers int32 `json:"failovers,omitempty"`

	// Last is the latest move, automatic or asked for.
	// +optional
	Last *FailoverMove `json:"last,omitempty"`
}

// FailoverMove is one move of a failover placement.
type FailoverMove struct {
	// From is the member the pipeline left; empty for its first placement.
	// +optional
	From string `json:"from,omitempty"`
	// To is the member it moved to.
	To string `json:"to"`
	// Reason is MemberLost (automatic), Requested (urutau.io/failover-to) or CandidateRemoved.
	Reason string `json:"reason"`
	// LostSince is when From last answered the hub: the reader there may have stopped from then.
	// +optional
	LostSince *metav1.Time `json:"lostSince,omitempty"`
	// DecidedAt is when the hub chose To.
	DecidedAt metav1.Time `json:"decidedAt"`
	// ReadyAt is when the coordinator on To was first seen ready; unset while it is not yet.
	// +optional
	ReadyAt *metav1.Time `json:"readyAt,omitempty"`
	// ReaderGapSeconds is how long the pipeline had no reader, as far as the hub can tell: from
	// LostSince (or DecidedAt) to ReadyAt.
	// +optional
	ReaderGapSeconds int64 `json:"readerGapSeconds,omitempty"`
}

// Failover move reasons.
const (
	FailoverMemberLost       = "MemberLost"
	FailoverRequested        = "Requested"
	FailoverCandidateRemoved = "CandidateRemoved"
	FailoverInitial          = "Initial"
)

// AnnotationFailoverTo on a CDCPipeline with a failover placement names the candidate to move
// to (a move back, or any move a person wants). The hub removes it once read.
const AnnotationFailoverTo = "urutau.io/failover-to"

// LeaseMemberFence is what a ReaderLease entry records of the fence of a fenced placement.
type LeaseMemberFence struct {
	// BoundSeconds is the longest the pipeline's coordinator there runs after the hub's last
	// renewal of its fence Lease: the fence's ttl plus its grace, as rendered there (the largest
	// ever rendered while the entry was Active).
	BoundSeconds int32 `json:"boundSeconds"`

	// Renewing is true while the pipeline is placed on that member and the hub renews the fence
	// Lease there; false once it left, from which point the bound runs.
	Renewing bool `json:"renewing"`

	// Verified is true when every coordinator pod of the pipeline there is known to run under the
	// fence: it was created fenced, or the member answered so after the fence was turned on. Only
	// a verified entry lets a move away from an unreachable member complete by the bound alone.
	Verified bool `json:"verified"`
}
