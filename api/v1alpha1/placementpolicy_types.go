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
// must carry urutau.io/fleet-managed=true before the hub writes there (docs/security.md). A policy
// also says which images the pipelines it governs may run on the members it grants (images), and
// may let them into member namespaces with a weak Pod Security level (allowWeakPodSecurity).
//
// Not in the urutau category: `kubectl get urutau -n NS` lists every kind of the category, and a
// cluster-scoped kind there is listed cluster-wide, which a namespace viewer may not do (kubectl
// would fail the whole command with Forbidden).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=placementpolicies,singular=placementpolicy,scope=Cluster,shortName=plpol
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`,description="Hub namespaces, by name, whose pipelines the policy governs (-o wide: by label)"
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.spec.clusters`,description="Members, by name, those pipelines may run on (-o wide: by label)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Namespace Selector",type=string,JSONPath=`.spec.namespaceSelector`,priority=1,description="Hub namespaces by label"
// +kubebuilder:printcolumn:name="Member Selector",type=string,JSONPath=`.spec.clusterSelector`,priority=1,description="Members by the labels of their inventory entries"
// +kubebuilder:printcolumn:name="Member Namespaces",type=string,JSONPath=`.spec.memberNamespaces`,priority=1,description="Member namespaces the pipelines may write into (empty: the one named like the hub namespace)"
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

	// Images are the images, besides the hub's own (--allowed-images and its default
	// --coordinator-image), that pipelines this policy governs may run (spec.image,
	// spec.overrides[].image) on the members it selects. Unset allows none beyond the hub's.
	// +optional
	Images *ImagePolicy `json:"images,omitempty"`

	// AllowWeakPodSecurity lets pipelines this policy governs run in member namespaces that
	// enforce less than the Pod Security "baseline" level (label
	// pod-security.kubernetes.io/enforce missing or "privileged"). Off: the hub refuses to place
	// there, since the coordinator runs the tenant's image with the rights of its Role.
	// +optional
	AllowWeakPodSecurity bool `json:"allowWeakPodSecurity,omitempty"`
}

// ImagePolicy says which images pipelines may run. A pattern is an image repository, written as
// in an image reference ("ghcr.io/urutau-io/urutau"; a name without a registry is Docker Hub's,
// "urutau" is "docker.io/library/urutau"), and matches every tag and digest of that repository;
// with ":tag" or "@sha256:..." it matches only that tag or digest; "registry.example.com/team/*"
// matches every repository below registry.example.com/team/ (not team itself, nor team-b); "*"
// matches every image. Registries compare with their port: "registry:5000/x" is not "registry/x".
type ImagePolicy struct {
	// Allowed are the patterns, any of which allows an image.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^[^\s]+$`
	Allowed []string `json:"allowed,omitempty"`

	// RequireDigest allows an image only when it is pinned by digest (image@sha256:<64 hex>), so
	// what runs cannot change under the same name.
	// +optional
	RequireDigest bool `json:"requireDigest,omitempty"`
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
