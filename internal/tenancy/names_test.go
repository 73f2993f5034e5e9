package tenancy

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// TestCheckWorkerNames: the inline definition's pipeline must be the CR's name, so a tenant
// cannot name its worker groups after another team's StatefulSet.
func TestCheckWorkerNames(t *testing.T) {
	pipeline := func(name, inline string) *urutauv1alpha1.CDCPipeline {
		p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
		if inline != "" {
			p.Spec.Definition.Inline = &runtime.RawExtension{Raw: []byte(inline)}
		}
		return p
	}
	tests := []struct {
		name    string
		p       *urutauv1alpha1.CDCPipeline
		refused bool
	}{
		{name: "bound", p: pipeline("orders", `{"pipeline":"orders","source":{"kind":"mysql"}}`)},
		{name: "another team's name", p: pipeline("orders", `{"pipeline":"payments","tables":[{"target":"db"}]}`), refused: true},
		{name: "no pipeline field", p: pipeline("orders", `{"source":{}}`), refused: true},
		{name: "empty pipeline", p: pipeline("orders", `{"pipeline":""}`), refused: true},
		{name: "case differs", p: pipeline("orders", `{"pipeline":"Orders"}`), refused: true},
		{name: "no inline definition", p: pipeline("orders", "")},
		{name: "not an object: the spec's validation says so", p: pipeline("orders", `"x"`)},
	}
	for _, tt := range tests {
		err := CheckWorkerNames(tt.p)
		if (err != nil) != tt.refused {
			t.Errorf("%s: CheckWorkerNames = %v, refused want %v", tt.name, err, tt.refused)
			continue
		}
		var d *Denial
		if err != nil && (!errors.As(err, &d) || d.Reason != ReasonWorkerNamesNotBound ||
			!strings.HasPrefix(d.Message, `spec.definition.inline.pipeline: must equal metadata.name "orders"`)) {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

// A worker group named like a coordinator (this pipeline's, or another's) is refused; other
// names, however close, are not.
func TestCheckWorkerGroupName(t *testing.T) {
	for _, tc := range []struct {
		group  string
		denied bool
	}{
		{"shop-coordinator", true},
		{"shop-orders-coordinator", true},
		{"shop-raw-clicks", false},
		{"shop-coordinators", false},
		{"shop-coordinator-audit", false},
	} {
		err := CheckWorkerGroupName("spec.definition.inline.tables[0].target", tc.group)
		var d *Denial
		if got := errors.As(err, &d) && d.Reason == ReasonWorkerGroupNamesACoordinator; got != tc.denied {
			t.Errorf("%s: denied %v, want %v (%v)", tc.group, got, tc.denied, err)
		}
		if tc.denied && !strings.Contains(err.Error(), "spec.definition.inline.tables[0].target") {
			t.Errorf("%s: the error does not name the field: %v", tc.group, err)
		}
	}
}

// A maintenance pod name cut to 63 characters (no "-maint" left) is refused: it could name any
// pod, another pipeline's coordinator pod among them. Names that keep the suffix pass.
func TestCheckMaintenanceName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		denied bool
	}{
		{"shop-orders-maint", false},
		{"shop-" + strings.Repeat("x", 52) + "-maint", false}, // 63 exactly
		{"victim-" + strings.Repeat("x", 42) + "-coordinator-0", true},
		{"shop-" + strings.Repeat("x", 54) + "-mai", true},
	} {
		err := CheckMaintenanceName("spec.definition.inline.tables[2].target", tc.name)
		var d *Denial
		if got := errors.As(err, &d) && d.Reason == ReasonMaintenanceNameTruncated; got != tc.denied {
			t.Errorf("%s: denied %v, want %v (%v)", tc.name, got, tc.denied, err)
		}
		if tc.denied && !strings.Contains(err.Error(), "spec.definition.inline.tables[2].target") {
			t.Errorf("%s: the error does not name the field: %v", tc.name, err)
		}
	}
}
