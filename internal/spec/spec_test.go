package spec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// urutauShapes reads the pipeline definitions of testdata/urutau (README.md there): the shapes at
// its top and urutau's examples under examples/, as JSON, by path without .yaml.
func urutauShapes(t testing.TB) map[string][]byte {
	t.Helper()
	top, err := filepath.Glob("testdata/urutau/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob("testdata/urutau/examples/*.yaml")
	if err != nil || len(top) == 0 || len(examples) == 0 {
		t.Fatalf("no shapes: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range append(top, examples...) {
		if filepath.Base(f) == "provenance.yaml" {
			continue
		}
		y, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(strings.TrimPrefix(filepath.ToSlash(f), "testdata/urutau/"), ".yaml")] = j
	}
	return out
}

// TestUrutauShapesParse: every urutau shape and example parses unchanged, with what the renderer
// reads.
func TestUrutauShapesParse(t *testing.T) {
	type view struct {
		pipeline, sinkType string
		tables             int
		discovers, tunnels bool
		maintenance        bool
		identity           string
	}
	want := map[string]view{
		"mysql-sample":           {pipeline: "shop-mysql", sinkType: "iceberg+rest", tables: 1, identity: "mysql serverId 1101"},
		"mysql-operator-fixture": {pipeline: "e2e", sinkType: "iceberg+rest", tables: 1, maintenance: true, identity: "mysql serverId 1101"},
		"postgres-slot":          {pipeline: "billing", sinkType: "iceberg+rest", tables: 2, tunnels: true, identity: "postgres slotName billing_slot"},
		"postgres-discover":      {pipeline: "crm", sinkType: "iceberg+rest", discovers: true, maintenance: true, identity: "postgres slotName crm_slot"},
		"clickhouse":             {pipeline: "analytics", sinkType: "clickhouse", tables: 1, identity: "mysql serverId 2201"},
		"couchbase-kafka":        {pipeline: "carts", sinkType: "couchbase", tables: 1},
		"kafka-default-sink":     {pipeline: "orders-stream", sinkType: "iceberg+rest", tables: 1},

		"examples/distributed":            {pipeline: "e2e", sinkType: "iceberg+rest", tables: 1, identity: "mysql serverId 1101"},
		"examples/iceberg-maintenance":    {pipeline: "e2e-mysql-maintenance", sinkType: "iceberg+rest", tables: 1, maintenance: true, identity: "mysql serverId 1102"},
		"examples/kafka-avro-nested":      {pipeline: "e2e-kafka-avro", sinkType: "iceberg+rest", tables: 1},
		"examples/mysql-clickhouse":       {pipeline: "e2e-mysql-clickhouse", sinkType: "clickhouse", tables: 1, identity: "mysql serverId 1101"},
		"examples/mysql-couchbase":        {pipeline: "e2e-mysql-couchbase", sinkType: "couchbase", tables: 1, identity: "mysql serverId 1101"},
		"examples/mysql-iceberg-timezone": {pipeline: "e2e-mysql-timezone", sinkType: "iceberg+rest", tables: 1, identity: "mysql serverId 1102"},
		"examples/mysql-iceberg":          {pipeline: "e2e-mysql", sinkType: "iceberg+rest", tables: 1, identity: "mysql serverId 1101"},
		"examples/postgres-iceberg":       {pipeline: "e2e-postgres", sinkType: "iceberg+rest", tables: 1, identity: "postgres slotName urutau_e2e"},
	}
	shapes := urutauShapes(t)
	if len(shapes) != len(want) {
		t.Errorf("shapes = %d, want %d", len(shapes), len(want))
	}
	for name, raw := range shapes {
		t.Run(name, func(t *testing.T) {
			in := mustParse(t, raw)
			id, ok := in.Identity()
			got := view{
				pipeline: in.Pipeline, sinkType: in.Sink.Type, tables: len(in.Tables),
				discovers: in.Source.Discovers(), tunnels: in.Source.Tunnels(),
				maintenance: in.Sink.MaintenanceEnabled(),
			}
			if ok {
				got.identity = id.String()
			}
			if got != want[name] {
				t.Errorf("got %+v, want %+v", got, want[name])
			}
		})
	}
}

// TestUrutauShapesSurviveTheConfigMap: the hub writes the definition into pipeline.yaml with
// sigs.k8s.io/yaml; the coordinator reads it back with yaml.v3, re-marshals it to JSON and decodes
// that. The round trip must keep every shape loadable and unchanged (a string that looks like a
// number stays a string).
func TestUrutauShapesSurviveTheConfigMap(t *testing.T) {
	for name, raw := range urutauShapes(t) {
		t.Run(name, func(t *testing.T) {
			var obj any
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			pipelineYAML, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var back any
			if err := yamlv3.NewDecoder(bytes.NewReader(pipelineYAML)).Decode(&back); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			before, after := mustParse(t, raw), mustParse(t, again)
			if !reflect.DeepEqual(before, after) {
				t.Errorf("changed by the round trip:\n%s\n%s", raw, again)
			}
		})
	}
}

func TestDefaultSinkType(t *testing.T) {
	in := mustParse(t, build(mysqlDoc, del("sink.type")))
	if in.Sink.Type != SinkIcebergREST {
		t.Errorf("sink.type = %q, want %q", in.Sink.Type, SinkIcebergREST)
	}
}

func TestRegisteredNames(t *testing.T) {
	for _, kind := range SourceKinds {
		d := mysqlDoc
		switch kind {
		case KindPostgres:
			d = postgresDoc
		case KindKafka:
			d = kafkaDoc
		}
		mustParse(t, build(d))
	}
	for _, sink := range SinkTypes {
		mustParse(t, build(mysqlDoc, set("sink.type", sink)))
	}
	if !slices.IsSorted(SourceKinds) || !slices.IsSorted(SinkTypes) {
		t.Error("the registered names must be sorted: the messages list them in this order")
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		want ReaderIdentity
		ok   bool
	}{
		{name: "mysql serverId", raw: build(mysqlDoc, set("source.serverId", "42")), want: ReaderIdentity{"mysql", "serverId", "42"}, ok: true},
		{name: "mysql serverId canonical", raw: build(mysqlDoc, set("source.serverId", "0042")), want: ReaderIdentity{"mysql", "serverId", "42"}, ok: true},
		{name: "mysql default", raw: build(mysqlDoc, del("source.serverId")), want: ReaderIdentity{"mysql", "serverId", DefaultMySQLServerID}, ok: true},
		{name: "postgres slotName", raw: build(postgresDoc), want: ReaderIdentity{"postgres", "slotName", "shop_slot"}, ok: true},
		{name: "postgres ignores a serverId", raw: build(postgresDoc, set("source.serverId", "7")), want: ReaderIdentity{"postgres", "slotName", "shop_slot"}, ok: true},
		// The kafka coordinator joins no consumer group (urutau spec/spec.go @0b3b110 has no
		// groupId): any number of pipelines may read one topic.
		{name: "kafka has none", raw: build(kafkaDoc), ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mustParse(t, tc.raw).Identity()
			if got != tc.want || ok != tc.ok {
				t.Errorf("Identity() = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	in := mustParse(t, build(postgresBlockDoc,
		set("source.postgres.schemas", []any{"public"}),
		set(table0("metadata"), []any{doc{"from": "op", "as": "_op"}})))
	got := strings.Join(in.Warnings(), "\n")
	for _, want := range []string{
		"spec.definition.inline.source.postgres.schemas: ignored without source.postgres.discover",
		"spec.definition.inline.tables[0].metadata[0]: in upsert mode a delete removes the row",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %q lack %q", got, want)
		}
	}
	if w := mustParse(t, build(mysqlDoc)).Warnings(); len(w) != 0 {
		t.Errorf("a plain definition warns: %v", w)
	}
}

func TestWorkerCounts(t *testing.T) {
	in := mustParse(t, build(mysqlDoc, set("tables", []any{
		doc{"source": "a", "target": "a", "primaryKey": []any{"id"}, "workers": doc{"number": 3, "max": 8}},
		doc{"source": "b", "target": "b", "primaryKey": []any{"id"}},
	})))
	if n, m := in.Tables[0].WorkerCount(), in.Tables[0].MaxWorkers(); n != 3 || m != 8 {
		t.Errorf("table 0: %d/%d, want 3/8", n, m)
	}
	if n, m := in.Tables[1].WorkerCount(), in.Tables[1].MaxWorkers(); n != 1 || m != 0 {
		t.Errorf("table 1: %d/%d, want 1/0", n, m)
	}
}
