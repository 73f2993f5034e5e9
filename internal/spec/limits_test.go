package spec

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// FuzzQuantityBounds: whatever string reaches the renderer, a quantity CheckQuantityBounds lets
// through parses in bounded time (the fuzzer reports a hang otherwise), and one it refuses is
// refused with a reason.
//
//	go test ./internal/spec -run '^$' -fuzz FuzzQuantityBounds -fuzztime 60s
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
