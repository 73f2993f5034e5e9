package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MaxNameLength is the longest CDCPipeline name. `<name>-coordinator` names a StatefulSet, whose
// controller-revision-hash label (`<sts>-<10 char hash>`) must fit in 63 characters, so the
// StatefulSet name may have at most 52 and the pipeline name 52 - len("-coordinator") = 40.
const MaxNameLength = 40

// CDCPipeline is one change-data-capture pipeline: a coordinator that reads one source and the
// workers it starts, placed on one or more member clusters of the fleet.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=cdcpipelines,singular=cdcpipeline,scope=Namespaced,shortName=cdcp,categories=urutau
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the pipeline is or is not Ready"
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.status.readyClusters`,description="Members whose coordinator is ready / members the pipeline is placed on"
// +kubebuilder:printcolumn:name="Terminated",type=string,JSONPath=`.status.terminated.reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Generation",type=integer,JSONPath=`.metadata.generation`,priority=1,description="The spec's generation"
// +kubebuilder:printcolumn:name="Observed",type=integer,JSONPath=`.status.observedGeneration`,priority=1,description="The generation the hub last reconciled to a conclusion"
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.status.inventory`,priority=1,description="The members that hold, or may hold, the pipeline's workload"
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1,description="The Ready condition's message"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters: <name>-coordinator names a StatefulSet whose pod and controller-revision-hash label must fit in 63 characters"
type CDCPipeline struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CDCPipelineSpec `json:"spec,omitempty"`
	// Status defaults to {observedGeneration: 0} so that readers (kstatus, Flux, Argo CD) see a
	// pipeline no hub has reconciled yet as in progress, not as current.
	// +kubebuilder:default={observedGeneration: 0}
	Status CDCPipelineStatus `json:"status,omitempty"`
}

// CDCPipelineList is a list of CDCPipelines.
//
// +kubebuilder:object:root=true
type CDCPipelineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CDCPipeline `json:"items"`
}

// CDCPipelineSpec is the single-cluster spec, inlined unchanged, plus where the pipeline runs.
type CDCPipelineSpec struct {
	PipelineSpec `json:",inline"`

	// Placement selects the member clusters the pipeline runs on. Empty places it nowhere.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Overrides carry the few settings that may differ per member cluster. When several entries
	// name the same cluster, later entries win field by field.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Overrides []ClusterOverride `json:"overrides,omitempty"`
}

// PipelineSpec holds exactly the fields of the single-cluster urutau operator's CDCPipeline spec.
// The spec hash that restarts the coordinator is computed over this struct alone, so the same
// pipeline hashes the same in the fleet as under the single-cluster operator.
type PipelineSpec struct {
	// Image runs the coordinator and every worker. Defaults to the hub's --coordinator-image.
	// +optional
	Image string `json:"image,omitempty"`

	// LogLevel is passed as --log-level to the coordinator and the workers.
	// +optional
	// +kubebuilder:validation:Enum=debug;info;warn;error
	LogLevel string `json:"logLevel,omitempty"`

	// Definition is the pipeline itself. Exactly one source must be set.
	Definition Definition `json:"definition"`

	// Secrets name the Secrets, in the pipeline's namespace of each member, that hold credentials.
	// +optional
	Secrets Secrets `json:"secrets,omitempty"`

	// Coordinator tunes the coordinator.
	// +optional
	Coordinator CoordinatorSpec `json:"coordinator,omitempty"`

	// Worker holds the defaults of every worker.
	// +optional
	Worker WorkerSpec `json:"worker,omitempty"`
}

// Definition says where the pipeline definition comes from.
// +kubebuilder:validation:XValidation:rule="[has(self.image) && size(self.image) > 0, has(self.s3) && size(self.s3) > 0, has(self.inline)].filter(x, x).size() == 1",message="exactly one of image, s3 or inline must be set"
type Definition struct {
	// Image is a planner image. Not implemented yet: use inline.
	// +optional
	Image string `json:"image,omitempty"`

	// S3 is the URL of a planner definition. Not implemented yet: use inline.
	// +optional
	S3 string `json:"s3,omitempty"`

	// Inline is the whole pipeline definition (pipeline, source, sink, tables, ...), without
	// credentials: those come from Secrets.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Inline *runtime.RawExtension `json:"inline,omitempty"`
}

// Secrets name Secrets in the pipeline's namespace.
type Secrets struct {
	// Source holds the source DSN under the key `uri`.
	// +optional
	Source string `json:"source,omitempty"`

	// Catalog holds the sink catalog: `uri` (required), `clientId`, `clientSecret`, `scope`.
	// +optional
	Catalog string `json:"catalog,omitempty"`

	// SSH holds the tunnel key under `privateKey` (and optionally `known_hosts`).
	// +optional
	SSH string `json:"ssh,omitempty"`

	// KafkaTLS is mounted at /etc/urutau/kafka-tls in the coordinator.
	// +optional
	KafkaTLS string `json:"kafkaTLS,omitempty"`

	// SchemaRegistryTLS is mounted at /etc/urutau/schema-registry-tls in the coordinator.
	// +optional
	SchemaRegistryTLS string `json:"schemaRegistryTLS,omitempty"`
}

// CoordinatorSpec tunes the coordinator.
type CoordinatorSpec struct {
	// +optional
	Snapshot SnapshotSpec `json:"snapshot,omitempty"`

	// +optional
	Supervision SupervisionSpec `json:"supervision,omitempty"`

	// MetricsAddr is where the coordinator serves metrics, probes and its dashboard. Default :9090.
	// +optional
	MetricsAddr string `json:"metricsAddr,omitempty"`

	// CPU is the coordinator's request and limit. Default 500m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^[+-]?[0-9.]+([eE][+-]?[0-9]{1,2}|[a-zA-Z]{0,2})$') && isQuantity(self))",message="must be a resource quantity such as 500m or 2"
	// +kubebuilder:validation:MaxLength=64
	CPU string `json:"cpu,omitempty"`

	// Memory is the coordinator's request and limit. Default 1Gi.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^[+-]?[0-9.]+([eE][+-]?[0-9]{1,2}|[a-zA-Z]{0,2})$') && isQuantity(self))",message="must be a resource quantity such as 512Mi or 1Gi"
	// +kubebuilder:validation:MaxLength=64
	Memory string `json:"memory,omitempty"`

	// TLS turns on mutual TLS between the coordinator and its workers.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Eventlog keeps the coordinator's event log in an S3-compatible bucket.
	// +optional
	Eventlog *EventlogSpec `json:"eventlog,omitempty"`
}

// SnapshotSpec tunes the initial snapshot.
type SnapshotSpec struct {
	// ChunkSize is passed as --chunk-size when greater than zero.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ChunkSize int `json:"chunkSize,omitempty"`

	// MaxParallelChunks is passed as --max-parallel-chunks when greater than zero.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxParallelChunks int `json:"maxParallelChunks,omitempty"`
}

// SupervisionSpec tunes how the coordinator supervises its workers.
type SupervisionSpec struct {
	// AckTimeout is passed as --ack-timeout.
	// +optional
	AckTimeout string `json:"ackTimeout,omitempty"`

	// MaxResets is deprecated and ignored.
	// +optional
	MaxResets int `json:"maxResets,omitempty"`

	// Window is deprecated and ignored.
	// +optional
	Window string `json:"window,omitempty"`

	// MaxConsecutiveCrashes is passed as --max-consecutive-crashes when greater than zero.
	// +optional
	MaxConsecutiveCrashes int `json:"maxConsecutiveCrashes,omitempty"`

	// WorkerDeliveryTimeout is passed as --worker-delivery-timeout.
	// +optional
	WorkerDeliveryTimeout string `json:"workerDeliveryTimeout,omitempty"`
}

// TLSSpec names the control-plane mTLS Secrets; each holds tls.crt, tls.key and ca.crt.
type TLSSpec struct {
	// ServerSecret is mounted into the coordinator.
	// +kubebuilder:validation:MinLength=1
	ServerSecret string `json:"serverSecret"`

	// ClientSecret is mounted into every worker.
	// +kubebuilder:validation:MinLength=1
	ClientSecret string `json:"clientSecret"`
}

// EventlogSpec places the coordinator's event log.
type EventlogSpec struct {
	// Bucket renders --eventlog s3://<bucket>[/<rootPrefix>].
	// +kubebuilder:validation:MinLength=1
	Bucket string `json:"bucket"`

	// RootPrefix is trimmed of leading and trailing slashes.
	// +optional
	RootPrefix string `json:"rootPrefix,omitempty"`

	// Endpoint of an S3-compatible store, passed as --eventlog-endpoint.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// Secret holds accessKeyId and secretAccessKey, given to the coordinator only.
	// +optional
	Secret string `json:"secret,omitempty"`
}

// WorkerSpec holds worker defaults; a table's own workers.cpu/memory win over CPU/Memory.
type WorkerSpec struct {
	// CPU is the worker request. Default 500m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^[+-]?[0-9.]+([eE][+-]?[0-9]{1,2}|[a-zA-Z]{0,2})$') && isQuantity(self))",message="must be a resource quantity such as 500m or 2"
	// +kubebuilder:validation:MaxLength=64
	CPU string `json:"cpu,omitempty"`

	// CPUOverhead is added to the request to form the limit.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^[+-]?[0-9.]+([eE][+-]?[0-9]{1,2}|[a-zA-Z]{0,2})$') && isQuantity(self))",message="must be a resource quantity such as 100m"
	// +kubebuilder:validation:MaxLength=64
	CPUOverhead string `json:"cpuOverhead,omitempty"`

	// Memory is the worker request. Default 1Gi.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^[+-]?[0-9.]+([eE][+-]?[0-9]{1,2}|[a-zA-Z]{0,2})$') && isQuantity(self))",message="must be a resource quantity such as 512Mi or 1Gi"
	// +kubebuilder:validation:MaxLength=64
	Memory string `json:"memory,omitempty"`

	// MemoryOverhead is added to the request to form the limit.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^[+-]?[0-9.]+([eE][+-]?[0-9]{1,2}|[a-zA-Z]{0,2})$') && isQuantity(self))",message="must be a resource quantity such as 256Mi"
	// +kubebuilder:validation:MaxLength=64
	MemoryOverhead string `json:"memoryOverhead,omitempty"`

	// MetricsAddr is passed to workers as --metrics-addr when set.
	// +optional
	MetricsAddr string `json:"metricsAddr,omitempty"`
}

// Placement selects member clusters: the union of Clusters and ClusterSelector. Neither set places
// the pipeline nowhere; it never means "everywhere", so an empty selector is rejected.
// +kubebuilder:validation:XValidation:rule="!has(self.clusterSelector) || has(self.clusterSelector.matchLabels) || has(self.clusterSelector.matchExpressions)",message="clusterSelector must not be empty: an empty selector would select every member cluster; list the labels to match, or remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || ((!has(self.clusters) || size(self.clusters) == 0) && !has(self.clusterSelector))",message="a failover placement chooses its one member among failover.candidates: leave clusters and clusterSelector empty"
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || (has(self.fenced) && self.fenced)",message="a failover placement must be fenced (fenced: true): without the fence, a move away from a member the hub cannot reach waits for a person to confirm it gone"
type Placement struct {
	// Clusters are member cluster names, as the cluster inventory names them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Clusters []string `json:"clusters,omitempty"`

	// ClusterSelector selects members by the labels of their inventory entry (the kubeconfig
	// Secret or the ClusterProfile).
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// Fenced runs each coordinator under the fence: it runs only while the hub renews its fence
	// Lease in the member, and stops by itself within a bound when renewals stop, whether or not
	// the hub can reach the member. A move away from a member that does not answer then completes
	// once that bound has passed, without urutau.io/confirm-cluster-gone (docs/failover.md).
	// +optional
	Fenced bool `json:"fenced,omitempty"`

	// Failover runs the pipeline on one of its candidates at a time and moves it when that
	// member is lost. Exclusive with Clusters and ClusterSelector; needs Fenced.
	// +optional
	Failover *FailoverPlacement `json:"failover,omitempty"`
}

// ClusterOverride changes a few settings on the named member clusters.
type ClusterOverride struct {
	// Clusters this override applies to.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +listType=set
	Clusters []string `json:"clusters"`

	// Image replaces spec.image on these clusters.
	// +optional
	Image string `json:"image,omitempty"`

	// LogLevel replaces spec.logLevel on these clusters.
	// +optional
	// +kubebuilder:validation:Enum=debug;info;warn;error
	LogLevel string `json:"logLevel,omitempty"`

	// Coordinator replaces spec.coordinator.cpu/memory on these clusters.
	// +optional
	Coordinator *ResourceOverride `json:"coordinator,omitempty"`

	// Worker replaces spec.worker.cpu/memory on these clusters.
	// +optional
	Worker *ResourceOverride `json:"worker,omitempty"`
}

// ResourceOverride replaces a CPU and/or memory quantity.
type ResourceOverride struct {
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^[+-]?[0-9.]+([eE][+-]?[0-9]{1,2}|[a-zA-Z]{0,2})$') && isQuantity(self))",message="must be a resource quantity such as 500m or 2"
	// +kubebuilder:validation:MaxLength=64
	CPU string `json:"cpu,omitempty"`

	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^[+-]?[0-9.]+([eE][+-]?[0-9]{1,2}|[a-zA-Z]{0,2})$') && isQuantity(self))",message="must be a resource quantity such as 512Mi or 1Gi"
	// +kubebuilder:validation:MaxLength=64
	Memory string `json:"memory,omitempty"`
}

// CDCPipelineStatus is what the hub (and, for phase and runId, the coordinator) observed.
type CDCPipelineStatus struct {
	// Phase is the coordinator's phase, kept from the single-cluster API.
	// +optional
	Phase string `json:"phase,omitempty"`

	// ObservedGeneration is the generation the hub last reconciled to a conclusion: applied to
	// every placed member, or found terminal/stalled for that generation.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// RunID is the coordinator's run identifier, kept from the single-cluster API.
	// +optional
	RunID string `json:"runId,omitempty"`

	// SpecHash is the hash of the pipeline spec (see PipelineSpec) as annotated on the pods.
	// +optional
	SpecHash string `json:"specHash,omitempty"`

	// Terminated, when set, stops every write to every member for this pipeline until a person
	// removes it or the spec changes.
	// +optional
	Terminated *Terminated `json:"terminated,omitempty"`

	// Conditions: Ready summarises; Reconciling and Stalled are present only when true.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Clusters is the state of the pipeline in each member it is placed on or being removed from.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterStatus `json:"clusters,omitempty"`

	// ReadyClusters reads "ready/placed", e.g. "2/3".
	// +optional
	ReadyClusters string `json:"readyClusters,omitempty"`

	// Inventory lists every member that holds, or may hold, objects of this pipeline. Cleanup works
	// from this list, never from the current cluster inventory.
	// +optional
	// +listType=set
	Inventory []string `json:"inventory,omitempty"`

	// ReaderLease names the ReaderLease (in the hub's namespace) that records where this pipeline
	// runs and guards its source: one reader per source identity across the fleet.
	// +optional
	ReaderLease string `json:"readerLease,omitempty"`

	// Failover is where a failover placement runs and its last move.
	// +optional
	Failover *FailoverStatus `json:"failover,omitempty"`
}

// Terminated records why the pipeline stopped for good.
type Terminated struct {
	// Reason is a short machine-readable reason, e.g. invalid_spec or SecretValidationFailed.
	Reason string `json:"reason"`

	// At is when it happened, RFC3339.
	// +optional
	At string `json:"at,omitempty"`

	// Cluster is the member where it happened; empty means the hub.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// Message says what happened and what to do.
	// +optional
	Message string `json:"message,omitempty"`

	// ObservedGeneration is the generation this termination applies to: a spec change moves the
	// generation past it and clears the termination. When a person sets Terminated without it, the
	// hub records the generation current when it first sees the termination.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ClusterPhase is the state of a pipeline in one member.
// +kubebuilder:validation:Enum=Pending;Applied;Ready;Degraded;Unreachable;Terminated;Deleting;Orphaned
type ClusterPhase string

// The phases of a pipeline in one member.
const (
	ClusterPending     ClusterPhase = "Pending"
	ClusterApplied     ClusterPhase = "Applied"
	ClusterReady       ClusterPhase = "Ready"
	ClusterDegraded    ClusterPhase = "Degraded"
	ClusterUnreachable ClusterPhase = "Unreachable"
	ClusterTerminated  ClusterPhase = "Terminated"
	ClusterDeleting    ClusterPhase = "Deleting"
	// ClusterOrphaned: the member left the cluster inventory while it may hold objects of the
	// pipeline. The hub cannot reach it and leaves them as they are until it is registered again
	// (under any name: the hub knows it by its identity) or a person confirms it gone.
	ClusterOrphaned ClusterPhase = "Orphaned"
)

// ClusterStatus is the state of the pipeline in one member.
type ClusterStatus struct {
	// Name of the member cluster.
	Name string `json:"name"`

	// ClusterID is the member's identity, the UID of its kube-system namespace, as last read.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// Phase in that member.
	Phase ClusterPhase `json:"phase"`

	// ObservedGeneration is the generation last applied to that member.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// CoordinatorReadyReplicas is the coordinator StatefulSet's ready replicas there.
	// +optional
	CoordinatorReadyReplicas int32 `json:"coordinatorReadyReplicas,omitempty"`

	// Message says what is wrong, or what is being waited for.
	// +optional
	Message string `json:"message,omitempty"`

	// LastTransitionTime is when Phase last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// Condition types.
const (
	// ConditionReady is True when every placed member runs a ready coordinator at the current
	// generation.
	ConditionReady = "Ready"
	// ConditionReconciling is present and True while the hub is making progress towards Ready.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is present and True when progress needs a person: terminated, invalid,
	// or blocked on an unreachable member.
	ConditionStalled = "Stalled"
	// ConditionPlaced is True when the placement selects at least one member.
	ConditionPlaced = "Placed"
)

// Finalizer is held on every CDCPipeline of the hub until its workload is gone from every member
// in status.inventory.
const Finalizer = "urutau.io/fleet-cleanup"

// Terminated reasons the hub sets; a person may set any other.
const (
	ReasonInvalidSpec            = "invalid_spec"
	ReasonSecretValidationFailed = "SecretValidationFailed"
)

// Labels and annotations that make up the contract with members. Changing any of them orphans
// objects in every member: never do.
const (
	// LabelApp and LabelPipeline are the frozen selector labels of the coordinator workload.
	LabelApp      = "app"
	LabelPipeline = "urutau.io/pipeline"

	// Fleet ownership labels, on every object the hub writes into a member, never in selectors.
	LabelHubPipelineUID = "urutau.io/hub-pipeline-uid"
	LabelHubNamespace   = "urutau.io/hub-namespace"
	LabelHubName        = "urutau.io/hub-name"
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	ManagedByFleet      = "urutau-fleet"

	// AnnotationSpecHash on the coordinator pod template restarts it when the spec changes.
	AnnotationSpecHash = "urutau.io/spec-hash"

	// AnnotationAppliedHash on every object the hub applies into a member is a hash of what it
	// applied (without this annotation): the hub's member caches keep only metadata, and this is
	// how they tell an object that needs no apply.
	AnnotationAppliedHash = "urutau.io/applied-hash"

	// AnnotationConfirmGone on the CDCPipeline names members (comma-separated) that a person
	// confirms are gone, so a placement move waiting on them may proceed.
	AnnotationConfirmGone = "urutau.io/confirm-cluster-gone"

	// AnnotationClusterID on a member's inventory entry (kubeconfig Secret or ClusterProfile)
	// accepts the identity of the cluster behind it: the UID of its kube-system namespace. When the
	// identity the hub reads there differs from the one it recorded for a pipeline's objects (the
	// entry was pointed at another cluster), nothing is applied there until a person sets this
	// annotation to the new identity; the old cluster is then treated as gone, and emptied if it is
	// ever registered again.
	AnnotationClusterID = "urutau.io/cluster-id"

	// AnnotationDeleteOrphans on a member's inventory entry, set to "true", lets the hub delete
	// orphans there: objects the hub wrote for a pipeline UID that no ReaderLease records. Without
	// it they are only reported.
	AnnotationDeleteOrphans = "urutau.io/delete-orphans"

	// AnnotationCredentialsExpireAt on a member's inventory entry says when the token in its
	// kubeconfig expires (RFC 3339), as `hub join` and `hub member-secret --service-account`
	// write it: run the same command again before then. The hub exports it as
	// urutau_fleet_member_credentials_expiry_timestamp_seconds.
	AnnotationCredentialsExpireAt = "urutau.io/credentials-expire-at"

	// AnnotationScaledDownAt on a member's coordinator StatefulSet is when the hub scaled it to
	// zero to delete it (RFC 3339). The hub deletes it once the member's StatefulSet controller
	// has seen the scale, or when that controller has not answered for two minutes after this.
	AnnotationScaledDownAt = "urutau.io/scaled-down-at"
)

// The member health record: what the hub's health checks last found about a member, published as
// a coordination.k8s.io Lease in the hub's lease namespace, named MemberHealthPrefix + member and
// labelled LabelMemberHealth=true. The hub writes one only when a check finds something new (a
// member going up or down, its message or identity changing), so an idle fleet writes nothing:
// spec.acquireTime is when the current reachability began, spec.renewTime the member's last
// answer as of that write, spec.holderIdentity the hub replica that wrote it. `kubectl urutau
// members` reads them.
const (
	MemberHealthPrefix = "urutau-member-"
	LabelMemberHealth  = "urutau.io/member-health"
	// AnnotationMember names the member the record is about.
	AnnotationMember = "urutau.io/member"
	// AnnotationReachable is True when the member answered its last check, False when not.
	AnnotationReachable = "urutau.io/reachable"
	// AnnotationEngaged is True while the hub holds a connection to the member.
	AnnotationEngaged = "urutau.io/engaged"
	// AnnotationHealthMessage says why the member does not answer.
	AnnotationHealthMessage = "urutau.io/health-message"
	// AnnotationHealthInterval is how often the hub checks the member (a Go duration): a member
	// recorded True answered within about that long, or the hub would have recorded it False.
	AnnotationHealthInterval = "urutau.io/health-check-interval"
)
