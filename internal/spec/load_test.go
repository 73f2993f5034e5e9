package spec

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestLoadErrors: what the coordinator's strict load refuses (spec.LoadYAML: unknown fields
// disallowed, Go's JSON types), each reported under its field path.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		field  string // relative to spec.definition.inline; "" for the definition itself
		typ    field.ErrorType
		detail string
	}{
		{name: "empty", raw: "  ", typ: field.ErrorTypeRequired},
		{name: "null", raw: "null", typ: field.ErrorTypeRequired},
		{name: "bad JSON", raw: `{"pipeline":`, typ: field.ErrorTypeInvalid},
		{name: "not an object", raw: `["pipeline"]`, typ: field.ErrorTypeTypeInvalid},
		{name: "data after the object", raw: string(build(mysqlDoc)) + ` {}`, typ: field.ErrorTypeInvalid},
		{name: "unknown top-level field", raw: string(build(mysqlDoc, set("owner", "team-a"))), field: "owner", typ: field.ErrorTypeForbidden, detail: "fields here: pipeline, sink, source, tables"},
		{name: "the fleet's old slot field", raw: string(build(postgresDoc, set("source.postgres", doc{"slot": "s1"}))), field: "source.postgres.slot", typ: field.ErrorTypeForbidden, detail: "the replication slot is source.slotName"},
		{name: "unknown table field (a typo)", raw: string(build(mysqlDoc, set(table0("wirteMode"), "append"))), field: "tables[0].wirteMode", typ: field.ErrorTypeForbidden},
		{name: "unknown workers field", raw: string(build(mysqlDoc, set(table0("workers"), doc{"min": 1}))), field: "tables[0].workers.min", typ: field.ErrorTypeForbidden},
		{name: "a bare on read as true", raw: string(build(mysqlDoc, set(table0("enrich"), []any{doc{"true": doc{"a": "b"}}}))), field: "tables[0].enrich[0].true", typ: field.ErrorTypeForbidden, detail: `quote it, e.g. "on":`},
		{name: "serverId as a number", raw: string(build(mysqlDoc, set("source.serverId", 1101))), field: "source.serverId", typ: field.ErrorTypeTypeInvalid, detail: `serverId: "1101"`},
		{name: "pipeline as a number", raw: string(build(mysqlDoc, set("pipeline", 7))), field: "pipeline", typ: field.ErrorTypeTypeInvalid},
		{name: "source not an object", raw: string(build(mysqlDoc, set("source", "mysql"))), field: "source", typ: field.ErrorTypeTypeInvalid},
		{name: "tables not a list", raw: string(build(mysqlDoc, set("tables", doc{"target": "a"}))), field: "tables", typ: field.ErrorTypeTypeInvalid},
		{name: "table not an object", raw: string(build(mysqlDoc, set("tables", []any{"a"}))), field: "tables[0]", typ: field.ErrorTypeTypeInvalid},
		{name: "workers.number a string", raw: string(build(mysqlDoc, set(table0("workers"), doc{"number": "3"}))), field: "tables[0].workers.number", typ: field.ErrorTypeTypeInvalid},
		{name: "workers.number fractional", raw: string(build(mysqlDoc, set(table0("workers"), doc{"number": 1.5}))), field: "tables[0].workers.number", typ: field.ErrorTypeTypeInvalid},
		{name: "an exponent is no int", raw: string(build(mysqlDoc, set("source.maxReconnectAttempts", 1e21))), field: "source.maxReconnectAttempts", typ: field.ErrorTypeTypeInvalid},
		{name: "uint not negative", raw: string(build(mysqlDoc, set("sink.maintenance", doc{"compaction": doc{"minInputFiles": -1}}))), field: "sink.maintenance.compaction.minInputFiles", typ: field.ErrorTypeTypeInvalid},
		{name: "bool as a string", raw: string(build(postgresBlockDoc, set("source.postgres.discover", "yes"))), field: "source.postgres.discover", typ: field.ErrorTypeTypeInvalid},
		{name: "list of strings", raw: string(build(mysqlDoc, set(table0("primaryKey"), []any{1}))), field: "tables[0].primaryKey[0]", typ: field.ErrorTypeTypeInvalid},
		{name: "map of strings", raw: string(build(mysqlDoc, set(table0("cast"), doc{"total": 5}))), field: "tables[0].cast[total]", typ: field.ErrorTypeTypeInvalid},
		{name: "params map", raw: string(build(postgresBlockDoc, set("source.postgres.params", doc{"connect_timeout": 10}))), field: "source.postgres.params[connect_timeout]", typ: field.ErrorTypeTypeInvalid},
		{name: "metadata key outside the catalog", raw: string(build(mysqlDoc, set(table0("metadata"), []any{doc{"from": "lsn", "as": "lsn"}}))), field: "tables[0].metadata[0].from", typ: field.ErrorTypeInvalid, detail: "the catalog is closed"},
		{name: "column declaration with two shapes", raw: string(build(kafkaDoc, set(table0("columns"), doc{"c": doc{"type": "int64", "list": "int64"}}))), field: "tables[0].columns[c]", typ: field.ErrorTypeInvalid, detail: "exactly one of type, struct, list, map"},
		{name: "column declaration unknown key", raw: string(build(kafkaDoc, set(table0("columns"), doc{"c": doc{"type": "int64", "nullable": true}}))), field: "tables[0].columns[c]", typ: field.ErrorTypeInvalid, detail: "unknown field"},
		{name: "filter not an object", raw: string(build(mysqlDoc, set(table0("filter"), "status = 'paid'"))), field: "tables[0].filter", typ: field.ErrorTypeTypeInvalid},
		{name: "filter list not a list", raw: string(build(mysqlDoc, set(table0("filter"), doc{"all": doc{}}))), field: "tables[0].filter.all", typ: field.ErrorTypeTypeInvalid},
		{name: "source.groupId, removed by urutau", raw: string(build(kafkaDoc, set("source.groupId", "shop"))), field: "source.groupId", typ: field.ErrorTypeForbidden, detail: "joins no consumer group"},
		{name: "source.bootstrapServers, removed by urutau", raw: string(build(kafkaDoc, set("source.bootstrapServers", "kafka:9092"))), field: "source.bootstrapServers", typ: field.ErrorTypeForbidden, detail: "the kafka brokers are source.uri"},
		{name: "too large", raw: `{"pipeline":"` + strings.Repeat("p", MaxInlineBytes) + `"}`, typ: field.ErrorTypeTooLong},
		{name: "predicate col a number", raw: string(build(mysqlDoc, set(table0("filter"), doc{"col": 3, "op": "is_null"}))), field: "tables[0].filter.col", typ: field.ErrorTypeTypeInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, errs := Parse([]byte(tc.raw))
			if in != nil {
				t.Fatalf("Parse accepted %s", tc.raw)
			}
			if len(errs) != 1 {
				t.Fatalf("Parse(%s) = %v, want exactly one error", tc.raw, errs)
			}
			want := InlinePath.String()
			if tc.field != "" {
				want += "." + tc.field
			}
			if e := errs[0]; e.Field != want || e.Type != tc.typ {
				t.Errorf("error = %s %q, want %s %q (%v)", e.Type, e.Field, tc.typ, want, e)
			}
			if !strings.Contains(errs[0].Error(), tc.detail) {
				t.Errorf("error %q does not contain %q", errs[0].Error(), tc.detail)
			}
		})
	}
}

// TestLoadAcceptsWhatTheCoordinatorAccepts: Go's JSON rules, which the coordinator's load follows,
// accept more than the canonical spelling; so does Parse.
func TestLoadAcceptsWhatTheCoordinatorAccepts(t *testing.T) {
	tests := []struct {
		name  string
		raw   []byte
		check func(t *testing.T, in *Inline)
	}{
		{
			name: "keys match their field ignoring case",
			raw:  build(postgresDoc, del("source.slotName"), set("source.SlotName", "Legacy_Case")),
			check: func(t *testing.T, in *Inline) {
				if in.Source.SlotName != "Legacy_Case" {
					t.Errorf("SlotName = %q", in.Source.SlotName)
				}
			},
		},
		{
			name: "null leaves a field unset",
			raw:  build(mysqlDoc, set("source.snapshotUri", nil), set(table0("workers"), nil)),
			check: func(t *testing.T, in *Inline) {
				if in.Tables[0].Workers != nil || in.Source.SnapshotURI != "" {
					t.Errorf("null fields set: %+v", in)
				}
			},
		},
		{
			name: "unknown keys inside a filter are ignored, as urutau's filter decoder ignores them",
			raw: build(mysqlDoc, appendTable, set(table0("filterImmutable"), true),
				set(table0("filter"), doc{"col": "status", "op": "eq", "value": "paid", "comment": "paid only"})),
			check: func(t *testing.T, in *Inline) {
				if p := in.Tables[0].Filter.Predicate; p == nil || p.Column != "status" {
					t.Errorf("predicate = %+v", p)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, mustParse(t, tc.raw)) })
	}
}
