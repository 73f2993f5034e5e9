// Package tenancy is the tenancy boundary of the hub, as pure decisions: which hub namespaces may
// place pipelines on which members and into which member namespaces (PlacementPolicies), which
// namespaces are never used (system namespaces), whether a member namespace opted in and enforces
// Pod Security, whether a member Secret may be referenced by a pipeline, which images a pipeline
// may run there, and that the worker names a pipeline derives are bound to its CR.
//
// The webhook (internal/webhook/tenancy.go) asks it at admission for a fast, friendly answer; the
// reconciler asks it again before every write into a member, because members, labels and policies
// change after admission. It reads nothing itself: callers pass the objects.
//
// # In the reconciler
//
// Before any write into member M for pipeline P (hub namespace N; member namespace X, today N):
//
//  0. Once per pipeline: CheckWorkerNames(P) (or CheckPipelineName with the parsed definition).
//  1. b := Boundary{Policies: every PlacementPolicy, Reserved: the hub's --cluster-provider-namespace
//     and --lease-namespace, Images: the hub's image flags, AllowWeakPodSecurity: its flag};
//     b.Check(hub Namespace N, M's inventory.Member, X), then b.CheckImages(N, M, X, P).
//  2. Read Namespace X in M (a live get; Forbidden or NotFound means not opted in):
//     b.CheckMemberNamespace(M, ns), then b.CheckMemberPodSecurity(N, M, ns).
//  3. For each r in SecretRefs(&P.Spec), read Secret r.Name in X of M (the Secret check reads them
//     already): CheckSecret(M, r, secret).
//
// A *Denial from any step: write nothing to M for P (cleanup by UID label stays allowed), report M
// with Denial.Reason and Denial.Message, and retry on the usual interval; a change of a policy, of
// M's labels or of the namespace's labels should re-trigger P.
package tenancy

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// SpokeNamespace is config/spoke's namespace in every member, where the hub's own identity lives.
const SpokeNamespace = "urutau-fleet-system"

// builtinSystem are the namespaces no pipeline may use, hub or member, besides kube-* and the
// hub's own (Boundary.Reserved).
var builtinSystem = []string{"default", SpokeNamespace}

// Reasons of a Denial: short CamelCase strings for conditions and events.
const (
	ReasonSystemNamespace        = "SystemNamespace"
	ReasonNoPlacementPolicy      = "NoPlacementPolicy"
	ReasonClusterNotAllowed      = "ClusterNotAllowed"
	ReasonMemberNamespaceDenied  = "MemberNamespaceNotAllowed"
	ReasonMemberNamespaceOptOut  = "MemberNamespaceNotOptedIn"
	ReasonSecretNotOptedIn       = "SecretNotOptedIn"
	ReasonServiceAccountTokenRef = "ServiceAccountTokenSecret"
)

// Denial is why the boundary refuses something; the message names the namespace, member or
// Secret, and the policies that were considered.
type Denial struct {
	Reason  string
	Message string
}

func (d *Denial) Error() string { return d.Message }

func deny(reason, format string, args ...any) *Denial {
	return &Denial{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Boundary is the tenancy boundary of one hub.
type Boundary struct {
	// Policies are every PlacementPolicy of the hub.
	Policies []urutauv1alpha1.PlacementPolicy
	// Reserved are the hub's own namespaces (--cluster-provider-namespace, --lease-namespace):
	// system namespaces on the hub and in members alike.
	Reserved []string
	// Images are the hub's image rules (--coordinator-image, --allowed-images,
	// --require-image-digests); images.go.
	Images ImageSettings
	// AllowWeakPodSecurity is --allow-weak-pod-security: the hub places into member namespaces
	// that enforce less than the Pod Security baseline level (podsecurity.go).
	AllowWeakPodSecurity bool
}

// System tells why namespace name (with its labels) is a system namespace, "" when it is not.
func (b Boundary) System(name string, nsLabels map[string]string) string {
	switch {
	case strings.HasPrefix(name, "kube-"):
		return "kube-* namespaces belong to Kubernetes"
	case slices.Contains(builtinSystem, name):
		return "it is a shared system namespace"
	case slices.Contains(b.Reserved, name):
		return "it is the hub's own namespace"
	case nsLabels[urutauv1alpha1.LabelSystemNamespace] == "true":
		return "it is labelled " + urutauv1alpha1.LabelSystemNamespace + "=true"
	}
	return ""
}

// CheckHubNamespace refuses a pipeline in a system namespace of the hub.
func (b Boundary) CheckHubNamespace(ns *corev1.Namespace) error {
	if why := b.System(ns.Name, ns.Labels); why != "" {
		return deny(ReasonSystemNamespace, "CDCPipelines may not live in hub namespace %q: %s", ns.Name, why)
	}
	return nil
}

// Check decides whether a pipeline of hub namespace hubNS may run on member in memberNamespace:
// neither namespace may be a system namespace, and one policy must select hubNS, the member and
// memberNamespace. The error names the policies that govern hubNS and what they allow.
func (b Boundary) Check(hubNS *corev1.Namespace, member inventory.Member, memberNamespace string) error {
	if err := b.CheckHubNamespace(hubNS); err != nil {
		return err
	}
	if why := b.System(memberNamespace, nil); why != "" {
		return deny(ReasonSystemNamespace, "pipelines may not run in namespace %q of member %q: %s", memberNamespace, member.Name, why)
	}
	governing := b.governing(hubNS)
	if len(governing) == 0 {
		return deny(ReasonNoPlacementPolicy, "no PlacementPolicy lets pipelines of hub namespace %q run anywhere; a platform admin grants it (docs/security.md)", hubNS.Name)
	}
	var onMember []string
	for _, p := range governing {
		if !selectsCluster(p, member) {
			continue
		}
		if allowsMemberNamespace(p, hubNS.Name, memberNamespace) {
			return nil
		}
		onMember = append(onMember, fmt.Sprintf("%q allows member namespaces %s", p.Name, memberNamespaces(p, hubNS.Name)))
	}
	if len(onMember) > 0 {
		return deny(ReasonMemberNamespaceDenied, "pipelines of hub namespace %q may not write into namespace %q of member %q: PlacementPolicy %s",
			hubNS.Name, memberNamespace, member.Name, strings.Join(onMember, "; "))
	}
	names := make([]string, 0, len(governing))
	for _, p := range governing {
		names = append(names, fmt.Sprintf("%q (%s)", p.Name, clusters(p)))
	}
	return deny(ReasonClusterNotAllowed, "pipelines of hub namespace %q may not run on member %q: the PlacementPolicies that govern the namespace allow other members: %s",
		hubNS.Name, member.Name, strings.Join(names, ", "))
}

// granting are the policies that let pipelines of hubNS run on member in memberNamespace, sorted
// by name: those Check accepts the placement for.
func (b Boundary) granting(hubNS *corev1.Namespace, member inventory.Member, memberNamespace string) []urutauv1alpha1.PlacementPolicy {
	var out []urutauv1alpha1.PlacementPolicy
	for _, p := range b.governing(hubNS) {
		if selectsCluster(p, member) && allowsMemberNamespace(p, hubNS.Name, memberNamespace) {
			out = append(out, p)
		}
	}
	return out
}

// governing are the policies that select hubNS, sorted by name.
func (b Boundary) governing(hubNS *corev1.Namespace) []urutauv1alpha1.PlacementPolicy {
	var out []urutauv1alpha1.PlacementPolicy
	for _, p := range b.Policies {
		if slices.Contains(p.Spec.Namespaces, hubNS.Name) || matches(p.Spec.NamespaceSelector, hubNS.Labels) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b urutauv1alpha1.PlacementPolicy) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func selectsCluster(p urutauv1alpha1.PlacementPolicy, m inventory.Member) bool {
	return slices.Contains(p.Spec.Clusters, m.Name) || matches(p.Spec.ClusterSelector, m.Labels)
}

func allowsMemberNamespace(p urutauv1alpha1.PlacementPolicy, hubNamespace, memberNamespace string) bool {
	if len(p.Spec.MemberNamespaces) == 0 {
		return memberNamespace == hubNamespace
	}
	return slices.Contains(p.Spec.MemberNamespaces, memberNamespace)
}

func memberNamespaces(p urutauv1alpha1.PlacementPolicy, hubNamespace string) string {
	if len(p.Spec.MemberNamespaces) == 0 {
		return fmt.Sprintf("[%s] (the hub namespace's name)", hubNamespace)
	}
	return "[" + strings.Join(p.Spec.MemberNamespaces, ", ") + "]"
}

func clusters(p urutauv1alpha1.PlacementPolicy) string {
	var parts []string
	if len(p.Spec.Clusters) > 0 {
		parts = append(parts, "clusters "+strings.Join(p.Spec.Clusters, ", "))
	}
	if p.Spec.ClusterSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(p.Spec.ClusterSelector)
		if err != nil {
			parts = append(parts, "an invalid clusterSelector")
		} else {
			parts = append(parts, fmt.Sprintf("clusterSelector %q", s.String()))
		}
	}
	return strings.Join(parts, " and ")
}

// matches tells whether a policy's selector selects set. A nil selector selects nothing (the
// field is unset); `{}` selects everything; an invalid selector selects nothing.
func matches(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(set))
}
