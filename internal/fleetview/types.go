package fleetview

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Entry is one member's inventory entry on the hub.
type Entry struct {
	Name string
	// Kind is Secret (the kubeconfig provider) or ClusterProfile.
	Kind        string
	Labels      map[string]string
	Annotations map[string]string
	Created     time.Time
	// Healthy is a ClusterProfile's ControlPlaneHealthy condition status ("True", "False",
	// "Unknown"); empty for a Secret, which carries no status.
	Healthy string
	// HealthChanged is when that condition last changed.
	HealthChanged time.Time
	Deleting      bool
	// Health is what the hub last recorded about the member (its health record), nil if none.
	Health *HealthRecord
}

// HealthRecord is the hub's published view of one member (api/v1alpha1 MemberHealthPrefix): what
// its health checks found, written when that changed.
type HealthRecord struct {
	// Reachable and Engaged are "True" or "False"; Message says why it does not answer.
	Reachable, Engaged, Message string
	Identity                    string
	// Since is when the member became reachable (or not); LastAnswer its last answer as of then.
	Since, LastAnswer time.Time
	// Interval is how often the hub checks the member.
	Interval time.Duration
}

// Placement is one pipeline on one member: an entry of a CDCPipeline's status.clusters[].
type Placement struct {
	Namespace, Pipeline string
	Member              string
	Phase               string
	// ClusterID is the member's identity (its kube-system namespace UID) when the hub records it.
	ClusterID string
	// ObservedGeneration is the generation applied there; Generation is the pipeline's.
	ObservedGeneration, Generation int64
	ReadyReplicas                  int64
	Message                        string
	LastTransition                 time.Time
}

// Tombstone is a member that may still hold objects of a deleted pipeline: a ReaderLease entry
// whose pipeline is gone.
type Tombstone struct {
	Member, Namespace, Pipeline, Reason string
	Created                             time.Time
}

// Pipeline is one CDCPipeline's summary.
type Pipeline struct {
	Namespace, Name, UID string
	Generation           int64
	Observed             int64
	// Ready, ReadyReason and ReadyMessage are the Ready condition's; Ready is "Unknown" when the
	// hub has not written it yet.
	Ready, ReadyReason, ReadyMessage string
	Terminated                       string
	Placements                       []Placement
	// FailoverMember is where a failover placement runs (status.failover.member); Failover says
	// its last move, "" when it made none.
	FailoverMember, Failover string
}

// Facts is everything Gather read from the hub.
type Facts struct {
	Entries    []Entry
	Pipelines  []Pipeline
	Tombstones []Tombstone
	// Warnings say what could not be read (e.g. Secrets forbidden to this user) and so is missing.
	Warnings []string
}

// Member is one row of `kubectl urutau members`.
type Member struct {
	Name string `json:"name"`
	// Identity is the member's cluster identity (kube-system namespace UID), "" if unknown.
	Identity string `json:"identity,omitempty"`
	// Reachable is True, False or Unknown.
	Reachable string `json:"reachable"`
	// Engaged is True while the member is in the hub's inventory, False when only pipelines'
	// status still names it (removed from the inventory, or never added).
	Engaged string `json:"engaged"`
	// LastAnswer is the last time the member was seen answering; nil if never, or when the hub
	// records it answering (then it answered within CheckInterval).
	LastAnswer *time.Time `json:"lastAnswer,omitempty"`
	// ReachableSince is when the hub recorded the current Reachable; nil when it published none.
	ReachableSince *time.Time `json:"reachableSince,omitempty"`
	// CheckInterval is how often the hub checks the member (0: it published no record).
	CheckInterval metav1.Duration `json:"checkInterval,omitempty"`
	// Message says why the member does not answer, as the hub recorded it.
	Message string `json:"message,omitempty"`
	// Placed counts the pipelines placed there; Ready those whose coordinator is ready there.
	Placed int `json:"pipelinesPlaced"`
	Ready  int `json:"pipelinesReady"`
	// Tombstones counts the pending cleanups of deleted pipelines there.
	Tombstones int `json:"tombstonesPending"`
	// CredentialsExpireAt is when the token in the entry's credentials expires, from its
	// urutau.io/credentials-expire-at annotation; nil when it says nothing.
	CredentialsExpireAt *time.Time        `json:"credentialsExpireAt,omitempty"`
	Source              string            `json:"source"`
	Labels              map[string]string `json:"labels,omitempty"`
}

// PlacementRow is one row of `kubectl urutau status`.
type PlacementRow struct {
	Namespace          string     `json:"namespace"`
	Pipeline           string     `json:"pipeline"`
	Member             string     `json:"member"`
	Phase              string     `json:"phase"`
	Generation         int64      `json:"generation"`
	ObservedGeneration int64      `json:"observedGeneration"`
	ReadyReplicas      int64      `json:"readyReplicas"`
	Message            string     `json:"message,omitempty"`
	Since              *time.Time `json:"since,omitempty"`
	// Failover is the last move of a failover placement, on the row of the member it moved to.
	Failover string `json:"failover,omitempty"`
}
