package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PlacementPolicy is the platform admin's grant that lets the CDCPipelines of some hub namespaces
// run on some member clusters, in some namespaces of those members. It is cluster-scoped, so
// tenants who own a hub namespace cannot write one.
//
// Without any PlacementPolicy no pipeline runs anywhere: the default install is closed. A
// pipeline may run on member M in member namespace N when at least one policy selects its hub
// namespace, M and N. Whatever the policies say, system namespaces are never used (kube-system,
// kube-public, kube-node-lease, default, every kube-* namespace, the hub's and config/spoke's own
// namespaces, and any namespace labelled urutau.io/system-namespace=true), and a member namespace
// must carry urutau.io/fleet-managed=true before the hub writes there (docs/security.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=placementpolicies,singular=placementpolicy,scope=Cluster
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PlacementPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PlacementPolicySpec `json:"spec"`
}

// PlacementPolicySpec says who may place where. Each of the three parts selects by name, by
// labels, or both (the union); an empty label selector `{}` selects everything, and is how a
// policy says "every namespace" or "every member" explicitly.
//
// +kubebuilder:validation:XValidation:rule="has(self.namespaces) || has(self.namespaceSelector)",message="set namespaces or namespaceSelector: the hub namespaces whose pipelines this policy lets run"
// +kubebuilder:validation:XValidation:rule="has(self.clusters) || has(self.clusterSelector)",message="set clusters or clusterSelector: the member clusters this policy lets pipelines run on"
type PlacementPolicySpec struct {
	// Namespaces are hub namespaces, by name, whose CDCPipelines this policy governs.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=63
	Namespaces []string `json:"namespaces,omitempty"`

	// NamespaceSelector selects hub namespaces by their labels.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Clusters are member clusters, by inventory name, those pipelines may run on.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=253
	Clusters []string `json:"clusters,omitempty"`

	// ClusterSelector selects member clusters by the labels of their inventory entries (kubeconfig
	// Secret or ClusterProfile), as spec.placement.clusterSelector does.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// MemberNamespaces are the namespaces of those members the pipelines may write into. Empty
	// means the member namespace named like the pipeline's hub namespace, which is where the hub
	// places a pipeline.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=63
	MemberNamespaces []string `json:"memberNamespaces,omitempty"`
}

// PlacementPolicyList is a list of PlacementPolicies.
//
// +kubebuilder:object:root=true
type PlacementPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacementPolicy `json:"items"`
}

// Labels of the tenancy boundary (docs/security.md). Each is a contract with platform teams:
// changing one opens or closes namespaces and Secrets in every member.
const (
	// LabelFleetManaged on a member Namespace, value "true", lets the hub write there. A member's
	// platform team sets it on the namespaces pipelines may run in.
	LabelFleetManaged = "urutau.io/fleet-managed"
	// LabelSystemNamespace on a Namespace (hub or member), value "true", keeps every pipeline out
	// of it, whatever the policies say.
	LabelSystemNamespace = "urutau.io/system-namespace"
	// LabelFleetSecret on a member Secret, value "true", lets pipelines reference it (secrets.*,
	// coordinator.tls.*, coordinator.eventlog.secret). An unlabelled Secret is never mounted or read for a pipeline.
	LabelFleetSecret = "urutau.io/fleet-secret"
)

// AnnotationAdopt on an existing member object, value "<hub namespace>/<hub name>" of a
// CDCPipeline, hands that object to the pipeline: the hub then applies over it (taking its fields
// and adding its labels) although it was not created by the fleet. Without it, or the pipeline's
// UID label, or the single-cluster operator's labels for the same CR, the hub refuses to touch
// an object that already exists (internal/adopt).
const AnnotationAdopt = "urutau.io/adopt"

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &PlacementPolicy{}, &PlacementPolicyList{})
		return nil
	})
}
