package chaos

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/urutau-io/fleet/internal/spec"
)

func TestZZScratchReview(t *testing.T) {
	for _, c := range [][2]string{{"mysql", "100010"}, {"mysql", "00100010"}, {"postgres", "chaos_3_p0"}} {
		in, errs := spec.Parse(inlineDefinition("p0", c[0], c[1]))
		if len(errs) > 0 || in == nil {
			t.Errorf("%v: %v", c, errs)
			continue
		}
		id, ok := in.Identity()
		t.Logf("%v -> %v %v ; checker %s", c, id, ok, identityOf(inlineDefinition("p0", c[0], c[1])))
	}
	h := History{Name: "x", Ops: []Op{FreezeHub{Millis: 20000}, Create{Name: "p0", Identity: "s0", Padded: true}, CreateRace{Names: []string{"p1", "p2"}, Identity: "s1", Padded: true}}}
	p := filepath.Join(t.TempDir(), "h.json")
	if err := h.Save(p); err != nil {
		t.Fatal(err)
	}
	got, err := LoadHistory(p)
	if err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("%v %#v", err, got)
	}
	r := OpRecord{Op: FreezeHub{Millis: 3}}
	raw, _ := json.Marshal(r)
	var r2 OpRecord
	if err := json.Unmarshal(raw, &r2); err != nil || !reflect.DeepEqual(r, r2) {
		t.Fatalf("%s %v %#v", raw, err, r2)
	}
	t.Logf("%s", raw)
}
