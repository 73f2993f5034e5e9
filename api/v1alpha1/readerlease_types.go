package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReaderLease is the hub's durable record of one replication source: the pipeline that may run
// its readers, and every member cluster that holds, or may hold, objects of a pipeline reading
// it. The hub writes it with optimistic concurrency before a coordinator starts anywhere, so two
// pipelines with one source identity never run at once, whatever happens in between (a move, a
// rename, two creates racing past admission, a hub restart, a failover). It also outlives a
// deleted pipeline for as long as a member that did not answer may still hold that pipeline's
// objects: the entry is then the tombstone that cleans the member when it returns.
//
// Written by the hub only; people read it (`kubectl get readerleases -n urutau-system`).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=readerleases,singular=readerlease,scope=Namespaced,shortName=rl,categories=urutau
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.source.kind`
// +kubebuilder:printcolumn:name="Field",type=string,JSONPath=`.spec.source.field`
// +kubebuilder:printcolumn:name="Value",type=string,JSONPath=`.spec.source.value`
// +kubebuilder:printcolumn:name="Holder",type=string,JSONPath=`.spec.holder.name`
// +kubebuilder:printcolumn:name="Holder Namespace",type=string,JSONPath=`.spec.holder.namespace`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReaderLease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReaderLeaseSpec `json:"spec"`
}

// ReaderLeaseList is a list of ReaderLeases.
//
// +kubebuilder:object:root=true
type ReaderLeaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReaderLease `json:"items"`
}

// ReaderLeaseSpec is the whole record.
type ReaderLeaseSpec struct {
	// Source is the replication identity this lease guards. Unset for a pipeline whose source has
	// no reader identity: its lease then only records where its objects are.
	// +optional
	Source *SourceIdentity `json:"source,omitempty"`

	// Holder is the pipeline that may start readers of the source. Another pipeline takes the
	// lease over only once the holder is gone (deleted, or re-created under a new UID) and no
	// member may still run one of the holder's readers.
	Holder PipelineRef `json:"holder"`

	// Members has one entry per (member cluster, its identity, pipeline) that holds, or may hold, objects of a
	// pipeline of this source.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	// +listMapKey=clusterID
	// +listMapKey=pipelineUID
	// +kubebuilder:validation:MaxItems=1024
	Members []LeaseMember `json:"members,omitempty"`
}

// SourceIdentity is what one reader of a replication source is known by, as urutau defines it:
// e.g. kind mysql, field serverId, value "1101".
type SourceIdentity struct {
	// Kind is the source kind of the inline definition (mysql, postgres, kafka).
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Field is the field of spec.definition.inline.source the identity comes from.
	// +kubebuilder:validation:MinLength=1
	Field string `json:"field"`
	// Value is its canonical value.
	Value string `json:"value"`
}

// PipelineRef names one CDCPipeline of the hub, by UID: a pipeline re-created under the same name
// is another pipeline.
type PipelineRef struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
}

// LeaseMemberState is what the hub knows of one pipeline's readers in one member.
// +kubebuilder:validation:Enum=Active;Drained;Gone
type LeaseMemberState string

const (
	// LeaseMemberActive: the pipeline's coordinator may run there (it was started, or is about
	// to be). It counts as a reader until the member answers that no reader pod is left.
	LeaseMemberActive LeaseMemberState = "Active"
	// LeaseMemberDrained: the member answered that no reader pod of the pipeline is left; other
	// objects of the pipeline may remain until it is emptied.
	LeaseMemberDrained LeaseMemberState = "Drained"
	// LeaseMemberGone: a person confirmed the member gone while it did not answer. It no longer
	// counts as a reader; the entry stays so that the member is emptied if it ever answers again.
	LeaseMemberGone LeaseMemberState = "Gone"
)

// LeaseMember is one (member cluster, pipeline) pair of a ReaderLease.
type LeaseMember struct {
	// Cluster is the member's name in the cluster inventory when the entry was written.
	// +kubebuilder:validation:MinLength=1
	Cluster string `json:"cluster"`

	// PipelineUID is the UID of the pipeline whose objects are (or may be) there.
	PipelineUID types.UID `json:"pipelineUID"`

	// PipelineNamespace and PipelineName name that pipeline on the hub (its objects are named
	// after it).
	PipelineNamespace string `json:"pipelineNamespace"`
	PipelineName      string `json:"pipelineName"`

	// Namespace is the member namespace that holds the objects.
	Namespace string `json:"namespace"`

	// ClusterID is the member's identity, the UID of its kube-system namespace, read before the
	// entry was written: a kubeconfig later pointed at another cluster does not make that cluster
	// this one, and a member registered again under another name is still this one.
	// +kubebuilder:validation:MinLength=1
	ClusterID string `json:"clusterID"`

	// State says whether the pipeline may still run a reader there.
	State LeaseMemberState `json:"state"`

	// Reason says why the entry is kept, once its pipeline no longer places anything there.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Since is when the entry took its current state.
	// +optional
	Since metav1.Time `json:"since,omitempty"`

	// Fence is set while the pipeline's placement there is fenced (spec.placement.fenced).
	// +optional
	Fence *LeaseMemberFence `json:"fence,omitempty"`
}
