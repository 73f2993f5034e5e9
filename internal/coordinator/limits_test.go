package coordinator

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// TestRenderBoundsQuantities: the renderer refuses what would take it minutes, without the
// webhook in front (the quantity parser is never reached: this test would time out otherwise).
func TestRenderBoundsQuantities(t *testing.T) {
	p := pipeline(t, "shop", mysqlInline, func(s *urutauv1alpha1.CDCPipelineSpec) {
		s.Coordinator.CPU = "1e-999999999"
		s.Worker.Memory = "1e-999999999"
	})
	_, err := Render(p, Settings{DefaultImage: testImage})
	var paths []string
	for _, e := range fieldErrors(t, err) {
		paths = append(paths, e.Field)
		if !strings.Contains(e.Detail, "exponent") {
			t.Errorf("%s: %s", e.Field, e.Detail)
		}
	}
	if strings.Join(paths, ",") != "spec.coordinator.cpu,spec.worker.memory" {
		t.Errorf("errors on %v", paths)
	}
}

func TestRenderBoundsInlineSize(t *testing.T) {
	p := pipeline(t, "shop", mysqlInline)
	big := `{"pipeline":"shop","padding":"` + strings.Repeat("x", spec.MaxInlineBytes) + `"}`
	p.Spec.Definition.Inline = &runtime.RawExtension{Raw: []byte(big)}
	_, err := Render(p, Settings{DefaultImage: testImage})
	errs := fieldErrors(t, err)
	if len(errs) != 1 || errs[0].Field != "spec.definition.inline" || errs[0].Type != field.ErrorTypeTooLong {
		t.Fatalf("errors = %v", errs)
	}
}
