package tenancy

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// The names a pipeline's workers and maintenance pods take are checked before anything is placed
// (webhooks may be off): a maintenance pod name cut to 63 characters is refused only while
// maintenance is on, since only then does the Role grant deleting pods of that name.
func TestCheckParsedWorkerNames(t *testing.T) {
	cut := "orders.coordinator-0" + strings.Repeat("_", 42) + "x"
	inline := func(pipeline, target string, maintenance bool) *spec.Inline {
		in := &spec.Inline{Pipeline: pipeline, Tables: []spec.Table{{Source: "shop.orders", Target: target}}}
		if maintenance {
			in.Sink.Maintenance = &spec.Maintenance{Enabled: true}
		}
		return in
	}
	p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "shop"}}
	for name, tc := range map[string]struct {
		in     *spec.Inline
		reason string
	}{
		"ordinary":                   {in: inline("shop", "raw.orders", true)},
		"cut, maintenance off":       {in: inline("shop", cut, false)},
		"cut, maintenance on":        {in: inline("shop", cut, true), reason: ReasonMaintenanceNameTruncated},
		"worker group a coordinator": {in: inline("shop", "orders.coordinator", false), reason: ReasonWorkerGroupNamesACoordinator},
		"pipeline not the CR's name": {in: inline("other", "raw.orders", true), reason: ReasonWorkerNamesNotBound},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckParsedWorkerNames(p, tc.in)
			var d *Denial
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.reason != "" && (!errors.As(err, &d) || d.Reason != tc.reason):
				t.Fatalf("got %v, want a denial %s", err, tc.reason)
			case tc.reason != "" && !strings.Contains(err.Error(), "spec.definition.inline."):
				t.Fatalf("the denial does not name the field: %v", err)
			}
		})
	}
}
