package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// Naming a namespace in --namespaces is the member's platform team opening it to the fleet, so join
// does both halves of that (config/spoke/README.md): the RoleBinding of pipeline-namespace/ and
// the label urutau.io/fleet-managed=true, which the hub checks before every write there. It never
// creates a namespace (the member's team owns them), and refuses the namespaces the hub refuses
// whatever their labels say. Leave undoes both.

// checkNamespaces refuses namespaces the member does not have, and system namespaces.
func (m *member) checkNamespaces(ctx context.Context, names []string, hubNamespace string) error {
	var errs []error
	for _, name := range names {
		ns := &corev1.Namespace{}
		if err := m.c.Get(ctx, client.ObjectKey{Name: name}, ns); apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("--namespaces %s: the member has no such namespace: create it there first (join never creates namespaces)", name))
			continue
		} else if err != nil {
			return fmt.Errorf("reading namespace %s in the member: %w", name, err)
		}
		if why := systemNamespace(ns, hubNamespace); why != "" {
			errs = append(errs, fmt.Errorf("--namespaces %s: the hub never writes there: %s", name, why))
		}
	}
	return errors.Join(errs...)
}

// systemNamespace says why the hub refuses to write into ns, "" when it does not: the tenancy
// boundary's rule, with the hub's namespace reserved as the hub reserves it.
func systemNamespace(ns *corev1.Namespace, hubNamespace string) string {
	return tenancy.Boundary{Reserved: []string{hubNamespace}}.System(ns.Name, ns.Labels)
}

// openNamespace labels the namespace urutau.io/fleet-managed=true and, unless it enforces a Pod
// Security level already, pod-security.kubernetes.io/enforce=restricted (podSecurityLabel), both
// owned by join's field manager so that leave removes them only where nobody else set them too.
// It returns a note for the person running join ("" when there is nothing to say).
func (m *member) openNamespace(ctx context.Context, name string) (string, error) {
	ns := &corev1.Namespace{}
	if err := m.c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return "", fmt.Errorf("reading namespace %s in the member: %w", name, err)
	}
	set, note := podSecurityLabel(name, ns.Labels)
	if err := m.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(namespaceApply(name, true, set)), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("labelling namespace %s in the member %s=true: %w", name, urutauv1alpha1.LabelFleetManaged, err)
	}
	return note, nil
}

// podSecurityLabel decides whether join sets pod-security.kubernetes.io/enforce=restricted on a
// namespace it opens, from the namespace's labels: yes when it has no enforce label (or has
// restricted already: applying it again keeps join's ownership); no when the member's team chose
// another level, which join leaves as it is, with a note (the hub refuses to place where less
// than baseline is enforced, unless the platform admin allows it).
func podSecurityLabel(name string, labels map[string]string) (set bool, note string) {
	level, ok := labels[tenancy.LabelPodSecurityEnforce]
	switch {
	case !ok || level == tenancy.PodSecurityRestricted:
		return true, ""
	case level == tenancy.PodSecurityBaseline:
		return false, fmt.Sprintf("namespace %s keeps %s=%s: the hub places there; the coordinator and workers meet %s too",
			name, tenancy.LabelPodSecurityEnforce, level, tenancy.PodSecurityRestricted)
	}
	return false, fmt.Sprintf("namespace %s enforces %s=%s: the hub refuses to place pipelines there until it enforces at least %s (label it %s=%s), unless a platform admin allows it (PlacementPolicy spec.allowWeakPodSecurity)",
		name, tenancy.LabelPodSecurityEnforce, level, tenancy.PodSecurityBaseline, tenancy.LabelPodSecurityEnforce, tenancy.PodSecurityRestricted)
}

// namespaceApply is join's apply configuration of a Namespace: the opt-in label and, with
// podSecurity, the restricted Pod Security level; or nothing (leave).
func namespaceApply(name string, open, podSecurity bool) *unstructured.Unstructured {
	meta := map[string]any{"name": name}
	if open {
		labels := map[string]any{urutauv1alpha1.LabelFleetManaged: "true"}
		if podSecurity {
			labels[tenancy.LabelPodSecurityEnforce] = tenancy.PodSecurityRestricted
		}
		meta["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta}}
}

// closeNamespaces undoes what join (or a person, by the same recipe) opened: every RoleBinding
// that gives the hub's identity its ClusterRole, and join's opt-in label. A label someone else set
// as well stays: theirs to remove.
func (m *member) closeNamespaces(ctx context.Context, out io.Writer) error {
	l := &rbacv1.RoleBindingList{}
	if err := m.c.List(ctx, l); err != nil {
		return fmt.Errorf("listing the member's RoleBindings of the hub's identity: %w", err)
	}
	var errs []error
	for i := range l.Items {
		b := &l.Items[i]
		if !bindsHub(b) {
			continue
		}
		if err := m.c.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting rolebinding %s in %s: %w", b.Name, b.Namespace, err))
			continue
		}
		fmt.Fprintf(out, "member: rolebinding/%s deleted in %s\n", b.Name, b.Namespace)
		if err := m.unlabel(ctx, b.Namespace); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintf(out, "member: namespace/%s closed to the fleet\n", b.Namespace)
		}
	}
	return errors.Join(errs...)
}

// bindsHub is true for a RoleBinding of config/spoke's ClusterRole to the hub's identity.
func bindsHub(b *rbacv1.RoleBinding) bool {
	return b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == SpokeClusterRole && slices.ContainsFunc(b.Subjects, isHubSubject)
}

// unlabel drops join's ownership of the namespace's labels (the opt-in, and the Pod Security level
// join set): the API server removes each unless another field manager set it too.
func (m *member) unlabel(ctx context.Context, name string) error {
	ns := &corev1.Namespace{}
	if err := m.c.Get(ctx, client.ObjectKey{Name: name}, ns); apierrors.IsNotFound(err) {
		return nil // never re-create a namespace by applying to it
	} else if err != nil {
		return fmt.Errorf("reading namespace %s in the member: %w", name, err)
	}
	if !slices.ContainsFunc(ns.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == FieldManager }) {
		return nil
	}
	if err := m.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(namespaceApply(name, false, false)), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("removing the label %s of namespace %s in the member: %w", urutauv1alpha1.LabelFleetManaged, name, err)
	}
	return nil
}

// reportPlacement tells, after a join, what still keeps pipelines off the member: no opened
// namespace, or no PlacementPolicy letting the hub namespace of the same name place there (the
// boundary is closed by default). Notes only: a platform admin may write policies later.
func reportPlacement(ctx context.Context, hub client.Client, o Options, out io.Writer) {
	if len(o.Namespaces) == 0 {
		fmt.Fprintf(out, "note: no namespace of %s is open to the fleet: open one with --namespaces (join again) or config/spoke/pipeline-namespace\n", o.Name)
		return
	}
	policies := &urutauv1alpha1.PlacementPolicyList{}
	if err := hub.List(ctx, policies); err != nil {
		fmt.Fprintf(out, "note: could not read the hub's PlacementPolicies to tell whether pipelines may be placed on %s: %v\n", o.Name, err)
		return
	}
	var hubNamespaces []corev1.Namespace
	for _, name := range o.Namespaces {
		ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := hub.Get(ctx, client.ObjectKey{Name: name}, &ns); client.IgnoreNotFound(err) != nil {
			fmt.Fprintf(out, "note: could not read namespace %s on the hub: %v\n", name, err)
		}
		hubNamespaces = append(hubNamespaces, ns)
	}
	for _, n := range placementNotes(policies.Items, hubNamespaces, inventory.Member{Name: o.Name, Labels: o.Labels}, o.HubNamespace) {
		fmt.Fprintln(out, "note:", n)
	}
}

// placementNotes are the tenancy boundary's denials for pipelines of each hub namespace placed on
// member into the member namespace of the same name, where the hub places them.
func placementNotes(policies []urutauv1alpha1.PlacementPolicy, hubNamespaces []corev1.Namespace, member inventory.Member, hubNamespace string) []string {
	b := tenancy.Boundary{Policies: policies, Reserved: []string{hubNamespace}}
	var notes []string
	for i := range hubNamespaces {
		if err := b.Check(&hubNamespaces[i], member, hubNamespaces[i].Name); err != nil {
			notes = append(notes, err.Error())
		}
	}
	return notes
}
