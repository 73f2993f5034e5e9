package spec

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParse(t *testing.T) {
	raw := `{
		"pipeline": "shop",
		"source": {"kind": "postgres", "serverId": 42, "snapshotUri": "s3://snap",
			"postgres": {"ssh": {"host": "bastion"}, "discover": false, "slot": "s1", "publication": "p1"}},
		"sink": {"type": "iceberg", "warehouse": "wh", "maintenance": {"enabled": true}},
		"tables": [
			{"target": "raw.orders", "workers": {"number": 3, "max": 8, "cpu": "1", "memory": "2Gi"}},
			{"target": "raw.items"}
		],
		"unknown": {"kept": "in the ConfigMap, ignored here"}
	}`
	got, errs := Parse([]byte(raw))
	if len(errs) > 0 {
		t.Fatalf("Parse: %v", errs)
	}
	want := &Inline{
		Pipeline: "shop",
		Source: Source{Kind: "postgres", ServerID: "42", SnapshotURI: "s3://snap",
			Postgres: &Postgres{SSH: true, Slot: "s1", Publication: "p1"}},
		Sink: Sink{Type: "iceberg", Warehouse: "wh", MaintenanceEnabled: true},
		Tables: []Table{
			{Target: "raw.orders", Workers: &Workers{Number: 3, Max: 8, CPU: "1", Memory: "2Gi"}},
			{Target: "raw.items"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %#v\nwant %#v", got, want)
	}
	if !got.Source.Tunnels() || got.Source.Discovers() {
		t.Errorf("Tunnels/Discovers = %v/%v, want true/false", got.Source.Tunnels(), got.Source.Discovers())
	}
	if n := got.Tables[0].WorkerCount(); n != 3 {
		t.Errorf("WorkerCount = %d, want 3", n)
	}
	if n := got.Tables[1].WorkerCount(); n != 1 {
		t.Errorf("WorkerCount without workers = %d, want 1", n)
	}
	if n := got.Tables[1].MaxWorkers(); n != 0 {
		t.Errorf("MaxWorkers without workers = %d, want 0", n)
	}
}

func TestParseServerIDAsString(t *testing.T) {
	got, errs := Parse([]byte(`{"pipeline":"p","source":{"kind":"mysql","serverId":"1001"},"sink":{"type":"kafka"}}`))
	if len(errs) > 0 {
		t.Fatalf("Parse: %v", errs)
	}
	if got.Source.ServerID != "1001" {
		t.Errorf("ServerID = %q, want 1001", got.Source.ServerID)
	}
}

// TestParseErrors asserts the exact path and type of each error: the hub shows them to users, and
// the webhook and the renderer report them under these paths.
func TestParseErrors(t *testing.T) {
	// valid is a minimal valid document; each case replaces one part of it.
	const (
		src  = `"source":{"kind":"mysql"}`
		sink = `"sink":{"type":"iceberg"}`
	)
	doc := func(parts ...string) string { return "{" + strings.Join(parts, ",") + "}" }
	p := `"pipeline":"shop"`

	tests := []struct {
		name        string
		raw         string
		wantField   string
		wantType    field.ErrorType
		wantContain string // in the error's message, when it matters
	}{
		{name: "empty", raw: "  ", wantField: "spec.definition.inline", wantType: field.ErrorTypeRequired},
		{name: "null", raw: "null", wantField: "spec.definition.inline", wantType: field.ErrorTypeRequired},
		{name: "bad JSON", raw: `{"pipeline":`, wantField: "spec.definition.inline", wantType: field.ErrorTypeInvalid},
		{name: "not an object", raw: `["pipeline"]`, wantField: "spec.definition.inline", wantType: field.ErrorTypeInvalid},
		{name: "data after the object", raw: doc(p, src, sink) + ` {}`, wantField: "spec.definition.inline", wantType: field.ErrorTypeInvalid},
		{name: "missing pipeline", raw: doc(src, sink), wantField: "spec.definition.inline.pipeline", wantType: field.ErrorTypeRequired},
		{name: "pipeline not a string", raw: doc(`"pipeline":7`, src, sink), wantField: "spec.definition.inline.pipeline", wantType: field.ErrorTypeTypeInvalid},
		{name: "missing source", raw: doc(p, sink), wantField: "spec.definition.inline.source", wantType: field.ErrorTypeRequired},
		{name: "source not an object", raw: doc(p, `"source":"mysql"`, sink), wantField: "spec.definition.inline.source", wantType: field.ErrorTypeTypeInvalid},
		{name: "missing source.kind", raw: doc(p, `"source":{}`, sink), wantField: "spec.definition.inline.source.kind", wantType: field.ErrorTypeRequired},
		{
			name: "unknown source kind", raw: doc(p, `"source":{"kind":"oracle"}`, sink),
			wantField: "spec.definition.inline.source.kind", wantType: field.ErrorTypeNotSupported,
			wantContain: `supported values: "kafka", "mysql", "postgres"`,
		},
		{name: "serverId as a bool", raw: doc(p, `"source":{"kind":"mysql","serverId":true}`, sink), wantField: "spec.definition.inline.source.serverId", wantType: field.ErrorTypeTypeInvalid},
		{name: "ssh not an object", raw: doc(p, `"source":{"kind":"postgres","postgres":{"ssh":"bastion:22"}}`, sink), wantField: "spec.definition.inline.source.postgres.ssh", wantType: field.ErrorTypeTypeInvalid},
		{name: "discover not a bool", raw: doc(p, `"source":{"kind":"postgres","postgres":{"discover":"yes"}}`, sink), wantField: "spec.definition.inline.source.postgres.discover", wantType: field.ErrorTypeTypeInvalid},
		{name: "missing sink", raw: doc(p, src), wantField: "spec.definition.inline.sink", wantType: field.ErrorTypeRequired},
		{
			name: "unknown sink type", raw: doc(p, src, `"sink":{"type":"bigquery"}`),
			wantField: "spec.definition.inline.sink.type", wantType: field.ErrorTypeNotSupported,
			wantContain: `supported values: "iceberg", "kafka"`,
		},
		{name: "maintenance.enabled not a bool", raw: doc(p, src, `"sink":{"type":"iceberg","maintenance":{"enabled":1}}`), wantField: "spec.definition.inline.sink.maintenance.enabled", wantType: field.ErrorTypeTypeInvalid},
		{name: "tables not a list", raw: doc(p, src, sink, `"tables":{"target":"a"}`), wantField: "spec.definition.inline.tables", wantType: field.ErrorTypeTypeInvalid},
		{name: "table not an object", raw: doc(p, src, sink, `"tables":["a"]`), wantField: "spec.definition.inline.tables[0]", wantType: field.ErrorTypeTypeInvalid},
		{name: "table without target", raw: doc(p, src, sink, `"tables":[{"workers":{"number":1}}]`), wantField: "spec.definition.inline.tables[0].target", wantType: field.ErrorTypeRequired},
		{
			name: "duplicate target", raw: doc(p, src, sink, `"tables":[{"target":"a"},{"target":"b"},{"target":"a"}]`),
			wantField: "spec.definition.inline.tables[2].target", wantType: field.ErrorTypeDuplicate, wantContain: "also tables[0]",
		},
		{name: "workers not an object", raw: doc(p, src, sink, `"tables":[{"target":"a","workers":3}]`), wantField: "spec.definition.inline.tables[0].workers", wantType: field.ErrorTypeTypeInvalid},
		{name: "workers.number negative", raw: doc(p, src, sink, `"tables":[{"target":"a","workers":{"number":-1}}]`), wantField: "spec.definition.inline.tables[0].workers.number", wantType: field.ErrorTypeInvalid},
		{name: "workers.number not a number", raw: doc(p, src, sink, `"tables":[{"target":"a","workers":{"number":"three"}}]`), wantField: "spec.definition.inline.tables[0].workers.number", wantType: field.ErrorTypeTypeInvalid},
		{name: "workers.number fractional", raw: doc(p, src, sink, `"tables":[{"target":"a","workers":{"number":1.5}}]`), wantField: "spec.definition.inline.tables[0].workers.number", wantType: field.ErrorTypeTypeInvalid},
		{name: "workers.max negative", raw: doc(p, src, sink, `"tables":[{"target":"a"},{"target":"b","workers":{"max":-2}}]`), wantField: "spec.definition.inline.tables[1].workers.max", wantType: field.ErrorTypeInvalid},
		{name: "workers.cpu not a string", raw: doc(p, src, sink, `"tables":[{"target":"a","workers":{"cpu":2}}]`), wantField: "spec.definition.inline.tables[0].workers.cpu", wantType: field.ErrorTypeTypeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, errs := Parse([]byte(tt.raw))
			if in != nil {
				t.Errorf("Parse returned %+v with errors, want nil", in)
			}
			if len(errs) != 1 {
				t.Fatalf("Parse errors = %v, want exactly one", errs)
			}
			e := errs[0]
			if e.Field != tt.wantField || e.Type != tt.wantType {
				t.Errorf("error = %s %q, want %s %q (%v)", e.Type, e.Field, tt.wantType, tt.wantField, e)
			}
			if !strings.Contains(e.Error(), tt.wantContain) {
				t.Errorf("error %q does not contain %q", e.Error(), tt.wantContain)
			}
		})
	}
}

// TestParseReportsAllErrors: one pass reports every problem, so a user fixes them all at once.
func TestParseReportsAllErrors(t *testing.T) {
	_, errs := Parse([]byte(`{"source":{"kind":"oracle"},"sink":{},"tables":[{}]}`))
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{
		"spec.definition.inline.pipeline",
		"spec.definition.inline.source.kind",
		"spec.definition.inline.sink.type",
		"spec.definition.inline.tables[0].target",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %v, want %v", got, want)
	}
}
