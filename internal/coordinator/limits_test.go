package coordinator

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

func TestCheckQuantityBounds(t *testing.T) {
	p := field.NewPath("spec", "coordinator", "cpu")
	for v, want := range map[string]string{
		"500m": "", "2": "", "1Gi": "", "1e3": "", "5E-2": "", "1e64": "", "1e-64": "", "1E": "", "2Ei": "",
		"1e65":                    "exponent",
		"1e-999999999":            "exponent",
		"1E+00000000000000000099": "exponent",
		strings.Repeat("9", 65):   "may not be more than 64",
	} {
		e := CheckQuantityBounds(p, v)
		switch {
		case want == "" && e != nil:
			t.Errorf("%q refused: %v", v, e)
		case want != "" && (e == nil || !strings.Contains(e.Error(), want)):
			t.Errorf("%q: %v, want an error containing %q", v, e, want)
		}
	}
}

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
	big := `{"pipeline":"shop","padding":"` + strings.Repeat("x", MaxInlineBytes) + `"}`
	p.Spec.Definition.Inline = &runtime.RawExtension{Raw: []byte(big)}
	_, err := Render(p, Settings{DefaultImage: testImage})
	errs := fieldErrors(t, err)
	if len(errs) != 1 || errs[0].Field != "spec.definition.inline" || errs[0].Type != field.ErrorTypeTooLong {
		t.Fatalf("errors = %v", errs)
	}
}

// FuzzQuantityBounds: whatever string reaches the renderer, a quantity CheckQuantityBounds lets
// through parses in bounded time (the fuzzer reports a hang otherwise), and one it refuses is
// refused with a reason.
//
//	go test ./internal/coordinator -run '^$' -fuzz FuzzQuantityBounds -fuzztime 60s
func FuzzQuantityBounds(f *testing.F) {
	for _, s := range []string{"500m", "1e-999999999", "1E+64", "1.5Gi", "-1", "0.000000001", "9e9e9", "1e0000000000000064"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if e := CheckQuantityBounds(field.NewPath("q"), v); e != nil {
			if e.Detail == "" {
				t.Fatalf("refusal of %q without a reason", v)
			}
			return
		}
		_, _ = resource.ParseQuantity(v)
	})
}
