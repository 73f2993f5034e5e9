package coordinator

import (
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// Settings are the inputs of a render that do not come from the pipeline itself.
type Settings struct {
	// DefaultImage is the hub's --coordinator-image, used when neither the override nor
	// spec.image names one.
	DefaultImage string

	// KEDAPrometheusAddress turns KEDA ScaledObjects on when non-empty (for this member: the
	// inventory entry may override the hub flag).
	KEDAPrometheusAddress string

	// KEDAThreshold is the trigger threshold; empty means "30".
	KEDAThreshold string

	// Override is the merged per-cluster override for this member, nil when none applies.
	Override *urutauv1alpha1.ClusterOverride

	// NetworkPolicy renders a NetworkPolicy for the coordinator (the hub's
	// --coordinator-network-policy). The single-cluster operator renders none: off by default.
	NetworkPolicy bool

	// Fence, when set, runs the coordinator under the fence (fence.go): the placement is fenced.
	// nil renders exactly what the single-cluster operator renders.
	Fence *Fence

	// Parsed is the pipeline's definition as spec.Parse read it from spec.definition.inline, when
	// the caller parsed it already (overrides never change the definition, so one parse serves
	// every member); nil: Render parses it. Render only reads it.
	Parsed *spec.Inline
}

// Workload is the rendered coordinator workload of one pipeline for one member, in apply order.
type Workload struct {
	CoordinatorServiceAccount *corev1ac.ServiceAccountApplyConfiguration
	WorkerServiceAccount      *corev1ac.ServiceAccountApplyConfiguration
	PodDisruptionBudget       *policyv1ac.PodDisruptionBudgetApplyConfiguration
	Role                      *rbacv1ac.RoleApplyConfiguration
	RoleBinding               *rbacv1ac.RoleBindingApplyConfiguration
	Service                   *corev1ac.ServiceApplyConfiguration
	ConfigMap                 *corev1ac.ConfigMapApplyConfiguration
	// StatefulSet is the coordinator. It is applied last among the built-in kinds, after the
	// Secrets it references have been checked.
	StatefulSet *appsv1ac.StatefulSetApplyConfiguration
	// ScaledObjects has one entry per table with workers.max > 0, sorted by name; empty when KEDA
	// is off for this member.
	ScaledObjects []*kedav1alpha1.ScaledObject
	// NetworkPolicy admits to the coordinator's pod only its own workers on the control-plane
	// port and anyone on the metrics port; nil unless Settings.NetworkPolicy.
	NetworkPolicy *networkingv1ac.NetworkPolicyApplyConfiguration

	// SpecHash is the value of the urutau.io/spec-hash annotation (and status.specHash).
	SpecHash string
	// RequiredSecrets lists, in check order, the Secrets and keys that must exist before the
	// StatefulSet is applied (source/uri, catalog/uri, ssh/privateKey).
	RequiredSecrets []SecretKeyRef
}

// SecretKeyRef is a Secret in the pipeline's namespace and a key it must hold.
type SecretKeyRef struct {
	Name string
	Key  string
}
