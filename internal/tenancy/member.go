package tenancy

import (
	corev1 "k8s.io/api/core/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// CheckMemberNamespace refuses to write into namespace ns of member: a system namespace, or one
// whose platform team has not opted it in with urutau.io/fleet-managed=true. ns is the member's
// Namespace as read there.
func (b Boundary) CheckMemberNamespace(member string, ns *corev1.Namespace) error {
	if why := b.System(ns.Name, ns.Labels); why != "" {
		return deny(ReasonSystemNamespace, "the hub writes nothing into namespace %q of member %q: %s", ns.Name, member, why)
	}
	if ns.Labels[urutauv1alpha1.LabelFleetManaged] != "true" {
		return deny(ReasonMemberNamespaceOptOut, "namespace %q of member %q is not open to the fleet: the member's platform team labels it %s=true to let the hub write there",
			ns.Name, member, urutauv1alpha1.LabelFleetManaged)
	}
	return nil
}

// CheckUnreadableNamespace is CheckMemberNamespace for a namespace the hub could not read in
// member: missing, or forbidden (config/spoke lets the hub read only the namespaces opened to it,
// so forbidden means not opened, or the hub's RBAC there was removed).
func (b Boundary) CheckUnreadableNamespace(member, name string, forbidden bool) error {
	if why := b.System(name, nil); why != "" {
		return deny(ReasonSystemNamespace, "the hub writes nothing into namespace %q of member %q: %s", name, member, why)
	}
	if forbidden {
		return deny(ReasonMemberNamespaceOptOut, "the hub may not read namespace %q of member %q (forbidden): it is not open to the fleet, or the hub's RBAC there was removed: the member's platform team labels it %s=true and binds the hub's role in it (config/spoke, or kubectl urutau join)",
			name, member, urutauv1alpha1.LabelFleetManaged)
	}
	return deny(ReasonMemberNamespaceOptOut, "namespace %q does not exist in member %q: the member's platform team creates it and labels it %s=true to let the hub write there",
		name, member, urutauv1alpha1.LabelFleetManaged)
}

// SecretRef is one Secret a pipeline references in its member namespace, and the field naming it.
type SecretRef struct {
	Field string
	Name  string
}

// SecretRefs lists every Secret spec references (secrets.*, coordinator.tls.*, coordinator.eventlog.secret), in field
// order. Each must pass CheckSecret in every member before the coordinator is applied there.
func SecretRefs(spec *urutauv1alpha1.CDCPipelineSpec) []SecretRef {
	s := spec.Secrets
	candidates := []SecretRef{
		{"spec.secrets.source", s.Source},
		{"spec.secrets.catalog", s.Catalog},
		{"spec.secrets.ssh", s.SSH},
		{"spec.secrets.kafkaTLS", s.KafkaTLS},
		{"spec.secrets.schemaRegistryTLS", s.SchemaRegistryTLS},
	}
	if tls := spec.Coordinator.TLS; tls != nil {
		candidates = append(candidates, SecretRef{"spec.coordinator.tls.serverSecret", tls.ServerSecret}, SecretRef{"spec.coordinator.tls.clientSecret", tls.ClientSecret})
	}
	if el := spec.Coordinator.Eventlog; el != nil {
		candidates = append(candidates, SecretRef{"spec.coordinator.eventlog.secret", el.Secret})
	}
	var refs []SecretRef
	for _, r := range candidates {
		if r.Name != "" {
			refs = append(refs, r)
		}
	}
	return refs
}

// CheckSecret refuses a member Secret that a pipeline may not reference: one that did not opt in
// with urutau.io/fleet-secret=true, and, whatever its labels, a ServiceAccount token Secret (it
// would hand a pod another identity, such as the hub's own in config/spoke).
func CheckSecret(member string, ref SecretRef, s *corev1.Secret) error {
	if s.Type == corev1.SecretTypeServiceAccountToken {
		return deny(ReasonServiceAccountTokenRef, "%s: Secret %s/%s in member %q is a ServiceAccount token; pipelines may not reference one",
			ref.Field, s.Namespace, s.Name, member)
	}
	if s.Labels[urutauv1alpha1.LabelFleetSecret] != "true" {
		return deny(ReasonSecretNotOptedIn, "%s: Secret %s/%s in member %q is not open to pipelines: label it %s=true to let pipelines of the fleet use it",
			ref.Field, s.Namespace, s.Name, member, urutauv1alpha1.LabelFleetSecret)
	}
	return nil
}
