package spec

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds Parse arbitrary bytes. It must never panic, every error must lie under
// spec.definition.inline, and its field-by-field shape check must agree with the coordinator's
// strict decode: for every object, the shape check finds nothing exactly when the decode
// succeeds. Seeds: urutau's shapes and every rule case. Run it with
//
//	go test ./internal/spec -run '^$' -fuzz FuzzParse -fuzztime 2m
func FuzzParse(f *testing.F) {
	for _, raw := range urutauShapes(f) {
		f.Add(raw)
	}
	for _, group := range [][]ruleCase{sourceCases(), sinkCases(), tableCases(), columnCases(), filterCases(), enrichCases()} {
		for _, tc := range group {
			f.Add(build(tc.base, tc.change...))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, errs := Parse(raw)
		if (in == nil) == (len(errs) == 0) {
			t.Fatalf("Parse returned %v with errors %v", in, errs)
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, InlinePath.String()) {
				t.Fatalf("error outside spec.definition.inline: %v", e)
			}
		}
		doc, derrs := decodeDocument(raw)
		if len(derrs) > 0 {
			return
		}
		var c shapeChecker
		c.check(doc, reflect.TypeFor[Inline](), InlinePath, false)
		_, err := decodeStrict(doc)
		if (len(c.errs) == 0) != (err == nil) {
			t.Fatalf("shape check %v disagrees with the strict decode %v on %s", c.errs, err, raw)
		}
	})
}
