package tenancy

import (
	"errors"
	"strings"
	"testing"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// TestCheckPodSecurity: the hub places only into member namespaces that enforce at least the
// baseline Pod Security level, unless the admin allows weaker ones.
func TestCheckPodSecurity(t *testing.T) {
	labelled := func(level string) map[string]string {
		return map[string]string{urutauv1alpha1.LabelFleetManaged: "true", LabelPodSecurityEnforce: level}
	}
	tests := []struct {
		name      string
		labels    map[string]string
		allowWeak bool
		wantIn    string // empty: allowed
	}{
		{name: "restricted", labels: labelled("restricted")},
		{name: "baseline", labels: labelled("baseline")},
		{name: "privileged", labels: labelled("privileged"), wantIn: `enforces Pod Security level "privileged"`},
		{name: "unknown level", labels: labelled("Restricted"), wantIn: `enforces Pod Security level "Restricted"`},
		{name: "no label", labels: map[string]string{urutauv1alpha1.LabelFleetManaged: "true"}, wantIn: "does not carry the label pod-security.kubernetes.io/enforce"},
		{name: "privileged, allowed by the admin", labels: labelled("privileged"), allowWeak: true},
		{name: "no label, allowed by the admin", allowWeak: true},
	}
	for _, tt := range tests {
		err := CheckPodSecurity("eu-1", namespace("shop", tt.labels), tt.allowWeak)
		if tt.wantIn == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", tt.name, err)
			}
			continue
		}
		var d *Denial
		if !errors.As(err, &d) || d.Reason != ReasonWeakPodSecurity || !strings.Contains(d.Message, tt.wantIn) ||
			!strings.Contains(d.Message, `namespace "shop" of member "eu-1"`) || !strings.Contains(d.Message, "allowWeakPodSecurity") {
			t.Errorf("%s: err = %v, want a %s denial containing %q", tt.name, err, ReasonWeakPodSecurity, tt.wantIn)
		}
	}
}

// TestCheckMemberPodSecurity: the opt-out is the hub's flag, or a PlacementPolicy that grants this
// very placement; a policy for another member does not count.
func TestCheckMemberPodSecurity(t *testing.T) {
	policies := []urutauv1alpha1.PlacementPolicy{
		policy("lab", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, Clusters: []string{"lab-1"}, AllowWeakPodSecurity: true}),
		policy("prod", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, Clusters: []string{"eu-1"}}),
	}
	weak := namespace("shop", map[string]string{LabelPodSecurityEnforce: "privileged"})
	shop := namespace("shop", nil)
	b := Boundary{Policies: policies}
	if err := b.CheckMemberPodSecurity(shop, inventory.Member{Name: "lab-1"}, weak); err != nil {
		t.Errorf("lab-1: the granting policy allows it: %v", err)
	}
	if err := b.CheckMemberPodSecurity(shop, inventory.Member{Name: "eu-1"}, weak); err == nil {
		t.Error("eu-1: refused by no policy")
	}
	b.AllowWeakPodSecurity = true
	if err := b.CheckMemberPodSecurity(shop, inventory.Member{Name: "eu-1"}, weak); err != nil {
		t.Errorf("eu-1 with --allow-weak-pod-security: %v", err)
	}
}
