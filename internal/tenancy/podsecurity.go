package tenancy

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/urutau-io/fleet/internal/inventory"
)

// Pod Security admission (https://kubernetes.io/docs/concepts/security/pod-security-admission/):
// the label on a Namespace that says which level the API server enforces for its pods.
const (
	LabelPodSecurityEnforce = "pod-security.kubernetes.io/enforce"
	PodSecurityRestricted   = "restricted"
	PodSecurityBaseline     = "baseline"
)

// ReasonWeakPodSecurity is the Denial reason of a member namespace that enforces less than the
// baseline level.
const ReasonWeakPodSecurity = "WeakPodSecurity"

// CheckPodSecurity refuses member namespace ns of member when it enforces less than the Pod
// Security baseline level (the label missing, "privileged", or a value the hub does not know),
// unless allowWeak. The coordinator runs the tenant's image with its Role's rights; in a namespace
// that admits privileged pods, whatever the coordinator starts could take the node. The hub's own
// pods meet "restricted", which `hub join` labels the namespaces it opens with. An API server's
// cluster-wide default level or namespace exemptions are not visible here: only the label counts.
func CheckPodSecurity(member string, ns *corev1.Namespace, allowWeak bool) error {
	level, set := ns.Labels[LabelPodSecurityEnforce]
	if allowWeak || level == PodSecurityRestricted || level == PodSecurityBaseline {
		return nil
	}
	why := "does not carry the label " + LabelPodSecurityEnforce
	if set {
		why = "enforces Pod Security level \"" + level + "\""
	}
	return deny(ReasonWeakPodSecurity,
		"namespace %q of member %q %s: the hub places pipelines only where pods are held to at least %q (the coordinator and workers meet %q): the member's platform team labels it %s=%s, or a platform admin allows weaker namespaces (PlacementPolicy spec.allowWeakPodSecurity, or --allow-weak-pod-security)",
		ns.Name, member, why, PodSecurityBaseline, PodSecurityRestricted, LabelPodSecurityEnforce, PodSecurityRestricted)
}

// CheckMemberPodSecurity is CheckPodSecurity with the admin's opt-out as the boundary holds it:
// the hub's --allow-weak-pod-security, or a PlacementPolicy that grants pipelines of hubNS this
// member and namespace and sets spec.allowWeakPodSecurity.
func (b Boundary) CheckMemberPodSecurity(hubNS *corev1.Namespace, member inventory.Member, ns *corev1.Namespace) error {
	return CheckPodSecurity(member.Name, ns, b.AllowsWeakPodSecurity(hubNS, member, ns.Name))
}

// AllowsWeakPodSecurity tells whether the admin lets pipelines of hubNS run in memberNamespace of
// member although it enforces less than baseline.
func (b Boundary) AllowsWeakPodSecurity(hubNS *corev1.Namespace, member inventory.Member, memberNamespace string) bool {
	if b.AllowWeakPodSecurity {
		return true
	}
	for _, p := range b.granting(hubNS, member, memberNamespace) {
		if p.Spec.AllowWeakPodSecurity {
			return true
		}
	}
	return false
}
