package join

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/tenancy"
)

func TestSystemNamespace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		system bool
	}{
		{"shop", nil, false},
		{"kube-system", nil, true},
		{"kube-public", nil, true},
		{"default", nil, true},
		{SpokeNamespace, nil, true},
		{"urutau-system", nil, true}, // the hub's namespace
		{"infra", map[string]string{urutauv1alpha1.LabelSystemNamespace: "true"}, true},
	} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Labels: tc.labels}}
		if got := systemNamespace(ns, "urutau-system"); (got != "") != tc.system {
			t.Errorf("%s: %q, want system=%v", tc.name, got, tc.system)
		}
	}
}

func TestBindsHub(t *testing.T) {
	hub := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: SpokeServiceAccount, Namespace: SpokeNamespace}
	role := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SpokeClusterRole}
	for _, tc := range []struct {
		name string
		b    rbacv1.RoleBinding
		want bool
	}{
		{"pipeline-namespace's binding", rbacv1.RoleBinding{RoleRef: role, Subjects: []rbacv1.Subject{hub}}, true},
		{"another role", rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"}, Subjects: []rbacv1.Subject{hub}}, false},
		{"a Role of that name", rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{Kind: "Role", Name: SpokeClusterRole}, Subjects: []rbacv1.Subject{hub}}, false},
		// The hub's own ClusterRole on its cluster, bound to the hub's own ServiceAccount.
		{"the hub's own binding", rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "urutau-fleet-hub"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "urutau-fleet-hub", Namespace: "urutau-system"}}}, false},
		{"another subject", rbacv1.RoleBinding{RoleRef: role, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: SpokeServiceAccount, Namespace: "shop"}}}, false},
	} {
		if got := bindsHub(&tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPlacementNotes: after a join, the boundary's answer for each opened namespace, closed by
// default.
func TestPlacementNotes(t *testing.T) {
	member := inventory.Member{Name: "eu-1", Labels: map[string]string{"region": "eu"}}
	shop := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	open := urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: "open"},
		Spec: urutauv1alpha1.PlacementPolicySpec{NamespaceSelector: &metav1.LabelSelector{}, ClusterSelector: &metav1.LabelSelector{}}}
	usOnly := urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: "us-only"},
		Spec: urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}}}
	for _, tc := range []struct {
		name     string
		policies []urutauv1alpha1.PlacementPolicy
		want     string // a substring of the one note; "" for none
	}{
		{"no policy: closed", nil, "no PlacementPolicy lets pipelines of hub namespace \"shop\""},
		{"an open policy", []urutauv1alpha1.PlacementPolicy{open}, ""},
		{"a policy for other members", []urutauv1alpha1.PlacementPolicy{usOnly}, "may not run on member \"eu-1\""},
	} {
		notes := placementNotes(tc.policies, []corev1.Namespace{shop}, member, "urutau-system")
		switch {
		case tc.want == "" && len(notes) > 0:
			t.Errorf("%s: notes %q, want none", tc.name, notes)
		case tc.want != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.want)):
			t.Errorf("%s: notes %q, want one with %q", tc.name, notes, tc.want)
		}
	}
}

// TestPodSecurityLabel: join sets the restricted Pod Security level on a namespace it opens unless
// the member's team chose a level; a level weaker than baseline gets a note saying the hub will
// refuse it.
func TestPodSecurityLabel(t *testing.T) {
	for _, tt := range []struct {
		labels map[string]string
		set    bool
		note   string
	}{
		{labels: nil, set: true},
		{labels: map[string]string{"team": "shop"}, set: true},
		{labels: map[string]string{tenancy.LabelPodSecurityEnforce: "restricted"}, set: true},
		{labels: map[string]string{tenancy.LabelPodSecurityEnforce: "baseline"}, note: "keeps pod-security.kubernetes.io/enforce=baseline: the hub places there"},
		{labels: map[string]string{tenancy.LabelPodSecurityEnforce: "privileged"}, note: "the hub refuses to place pipelines there"},
	} {
		set, note := podSecurityLabel("shop", tt.labels)
		if set != tt.set || (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
			t.Errorf("podSecurityLabel(%v) = %v, %q; want %v, %q", tt.labels, set, note, tt.set, tt.note)
		}
	}
	labels, _, _ := unstructured.NestedMap(namespaceApply("shop", true, true).Object, "metadata", "labels")
	if labels[tenancy.LabelPodSecurityEnforce] != "restricted" || labels[urutauv1alpha1.LabelFleetManaged] != "true" {
		t.Errorf("namespaceApply labels = %v", labels)
	}
	if _, found, _ := unstructured.NestedMap(namespaceApply("shop", false, false).Object, "metadata", "labels"); found {
		t.Error("leave's apply keeps labels: it must drop join's ownership of both")
	}
}
