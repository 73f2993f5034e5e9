package spec

import "testing"

// BenchmarkParse: the webhook parses every pipeline of the hub on each CREATE (the uniqueness
// check), so one parse must stay cheap.
func BenchmarkParse(b *testing.B) {
	raw := build(mysqlDoc)
	for b.Loop() {
		if _, errs := Parse(raw); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
