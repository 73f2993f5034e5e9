package spec

import (
	"slices"
	"strings"
	"testing"
)

// urutau's own tests of its spec package, ported as table rows: each row is one case of the
// upstream test it is named after (testdata/urutau/provenance.yaml names the revisions). The
// upstream tests call Validate on a Spec; these rows call Parse on the same definition, written as
// the document the coordinator loads, so the strict load and the registry check run too.

// upstreamValidSpec is urutau's validSpec(): a minimal MySQL upsert pipeline, credentials inline.
func upstreamValidSpec() doc {
	return doc{
		"pipeline": "ibe",
		"source":   doc{"kind": "mysql", "uri": "mysql://user@localhost:3306/db"},
		"sink":     doc{"uri": "polaris://localhost:8181/api/catalog", "namespace": "raw"},
		"tables":   []any{doc{"source": "ibe.orders", "target": "raw.orders", "primaryKey": []any{"id"}}},
	}
}

// upstreamRow is one ported case: the changes to the base, and the errors Parse must give, each
// "path" or "path: part of the message", relative to spec.definition.inline; none means valid.
type upstreamRow struct {
	name   string
	base   func() doc
	change []func(doc)
	want   []string
}

func runUpstreamRows(t *testing.T, rows []upstreamRow) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			base := r.base
			if base == nil {
				base = upstreamValidSpec
			}
			raw := build(base, r.change...)
			_, errs := Parse(raw)
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = strings.TrimPrefix(e.Field, InlinePath.String()+".") + ": " + e.ErrorBody()
			}
			if len(got) != len(r.want) {
				t.Fatalf("Parse(%s) = %q, want %d errors %q", raw, got, len(r.want), r.want)
			}
			for _, w := range r.want {
				path, part, _ := strings.Cut(w, ": ")
				i := slices.IndexFunc(got, func(g string) bool {
					return strings.HasPrefix(g, path+": ") && strings.Contains(g, part)
				})
				if i < 0 {
					t.Fatalf("Parse(%s) = %q, want an error %q", raw, got, w)
				}
				got = slices.Delete(got, i, i+1)
			}
		})
	}
}

// kafkaAppend is the kafka table of urutau's kafka tests: append, no key, one declared column.
func kafkaAppend(d doc) {
	d["source"] = doc{"kind": "kafka", "uri": "broker:9092"}
	set(table0("writeMode"), "append")(d)
	del(table0("primaryKey"))(d)
	set(table0("columns"), doc{"id": "string"})(d)
}

// TestUpstreamValidate ports spec/validate_test.go. One upstream case is adapted: its
// TestValidateCommitMode sets commitMode on the default sink, which the newest validate.go refuses
// (commitMode is couchbase-only), so its rows run on a couchbase sink.
func TestUpstreamValidate(t *testing.T) {
	enrich := func(change func(doc)) func(doc) {
		e := doc{"table": "users", "source": doc{"uri": "mysql://refdb/internal", "query": "SELECT id, name FROM users"},
			"on": doc{"user_ref": "id"}, "select": []any{"name", "tier"}, "joinType": "left"}
		if change != nil {
			change(e)
		}
		return set(table0("enrich"), []any{e})
	}
	filter := func(f any) func(doc) { return set(table0("filter"), f) }
	appendNoKey := func(d doc) { set(table0("writeMode"), "append")(d); del(table0("primaryKey"))(d) }
	meta := func(m ...any) func(doc) { return set(table0("metadata"), m) }
	e0 := "tables[0].enrich[0]."
	runUpstreamRows(t, []upstreamRow{
		{name: "TestValidateAcceptsMinimalUpsert"},
		{name: "TestValidateEnrich/minimal", change: fs(enrich(nil))},
		{name: "TestValidateEnrich/joinType required", change: fs(enrich(func(e doc) { e["joinType"] = "" })), want: []string{e0 + "joinType"}},
		{name: "TestValidateEnrich/joinType grammar", change: fs(enrich(func(e doc) { e["joinType"] = "full" })), want: []string{e0 + "joinType"}},
		{name: "TestValidateEnrich/onColdStart grammar", change: fs(enrich(func(e doc) { e["onColdStart"] = "retry" })), want: []string{e0 + "onColdStart"}},
		{name: "TestValidateEnrich/refresh duration", change: fs(enrich(func(e doc) { e["refresh"] = "soon" })), want: []string{e0 + "refresh"}},
		{name: "TestValidateEnrich/source.query required", change: fs(enrich(func(e doc) { e["source"].(doc)["query"] = "" })), want: []string{e0 + "source.query"}},
		{name: "TestValidateEnrich/as not in select", change: fs(enrich(func(e doc) { e["select"] = []any{"name"}; e["as"] = doc{"tier": "user_tier"} })), want: []string{e0 + "as[tier]"}},
		{name: "TestValidateEnrich/duplicated reference", change: fs(func(d doc) {
			enrich(nil)(d)
			ts := d["tables"].([]any)[0].(doc)
			ts["enrich"] = append(ts["enrich"].([]any), ts["enrich"].([]any)[0])
		}), want: []string{"tables[0].enrich[1].table: Duplicate"}},
		{name: "TestValidateEnrich/select required", change: fs(enrich(func(e doc) { delete(e, "select") })), want: []string{e0 + "select: Required"}},
		{name: "TestValidateEnrich/star only", change: fs(enrich(func(e doc) { e["select"] = []any{"*", "name"} })), want: []string{e0 + `select[0]: Invalid value: "*": "*" must be the only entry`}},
		{name: "TestValidateEnrich/duplicated select", change: fs(enrich(func(e doc) { e["select"] = []any{"name", "name"} })), want: []string{e0 + "select[1]: Duplicate"}},
		{name: "TestValidateEnrich/star and rename", change: fs(enrich(func(e doc) { e["select"] = []any{"*"}; e["as"] = doc{"name": "user_name"} }))},
		{name: "TestValidateCommitMode/atomic (on couchbase, the one sink that has it)", change: fs(set("sink.type", "couchbase"), set("sink.commitMode", "atomic"))},
		{name: "TestValidateCommitMode/eventual", change: fs(set("sink.type", "couchbase"), set("sink.commitMode", "eventual")), want: []string{"sink.commitMode"}},
		{name: "TestValidateUpsertRequiresPrimaryKey", change: fs(del(table0("primaryKey"))), want: []string{"tables[0].primaryKey"}},
		{name: "TestValidateAppendWithFilterRequiresImmutable/mutable", change: fs(appendNoKey, filter(doc{"col": "status", "op": "neq", "value": "draft"})), want: []string{"tables[0].filterImmutable"}},
		{name: "TestValidateAppendWithFilterRequiresImmutable/immutable", change: fs(appendNoKey, filter(doc{"col": "status", "op": "neq", "value": "draft"}), set(table0("filterImmutable"), true))},
		{name: "TestValidateUnsupportedWriteMode", change: fs(set(table0("writeMode"), "merge")), want: []string{"tables[0].writeMode"}},
		{name: "TestValidateDefaultsToUpsert/empty writeMode", change: fs(set(table0("writeMode"), ""))},
		{name: "TestValidateDefaultsToUpsert/still needs a key", change: fs(set(table0("writeMode"), ""), del(table0("primaryKey"))), want: []string{"tables[0].primaryKey"}},
		{name: "TestValidateDuplicateTargets", change: fs(func(d doc) {
			d["tables"] = append(d["tables"].([]any), doc{"source": "ibe.other", "target": "raw.orders", "primaryKey": []any{"id"}})
		}), want: []string{"tables[1].target: Duplicate"}},
		{name: "TestValidateFilterGrammar/empty node", change: fs(filter(doc{})), want: []string{"tables[0].filter: Required value: filter node is empty"}},
		{name: "TestValidateFilterGrammar/ambiguous node", change: fs(filter(doc{"where": doc{"col": "a", "op": "eq", "value": 1}, "not": doc{"col": "b", "op": "is_null"}})), want: []string{"tables[0].filter: Invalid value: \"<object>\": filter node carries more than one"}},
		{name: "TestValidateFilterGrammar/unknown op", change: fs(filter(doc{"col": "a", "op": "regex", "value": "x"})), want: []string{"tables[0].filter.op: Unsupported"}},
		{name: "TestValidateFilterGrammar/eq without value", change: fs(filter(doc{"col": "a", "op": "eq"})), want: []string{"tables[0].filter.value: Required value: op \"eq\" requires a value"}},
		{name: "TestValidateFilterGrammar/in with scalar", change: fs(filter(doc{"col": "a", "op": "in", "value": "x"})), want: []string{"tables[0].filter.value: Invalid value: \"x\": op \"in\" requires a list value"}},
		{name: "TestValidateFilterGrammar/is_null with value", change: fs(filter(doc{"col": "a", "op": "is_null", "value": 1})), want: []string{"tables[0].filter.value: Forbidden: op \"is_null\" takes no value"}},
		{name: "TestValidateFilterGrammar/valid tree", change: fs(filter(doc{"all": []any{
			doc{"col": "status", "op": "neq", "value": "draft"},
			doc{"any": []any{doc{"col": "type", "op": "in", "value": []any{"web", "mobile"}}, doc{"not": doc{"col": "id", "op": "is_not_null"}}}},
		}}))},
		{name: "TestValidateMetadataClosedCatalog", change: fs(meta(doc{"from": "op", "as": "operation"}))},
		{name: "TestValidateMetadataUnknownKey", change: fs(meta(doc{"from": "unknown_key", "as": "x"})), want: []string{"tables[0].metadata[0].from: Invalid value: \"unknown_key\": unknown metadata key"}},
		{name: "TestValidateMetadataDuplicateAs", change: fs(meta(doc{"from": "op", "as": "x"}, doc{"from": "phase", "as": "x"})), want: []string{"tables[0].metadata[1].as: Duplicate"}},
		{name: "TestValidateMetadataAsCollisionWithPK", change: fs(meta(doc{"from": "op", "as": "id"})), want: []string{"tables[0].metadata[0].as: Invalid value: \"id\": cannot be part of the primary key"}},
		{name: "TestValidateMetadataAsRegex", change: fs(meta(doc{"from": "op", "as": "invalid name!"})), want: []string{"tables[0].metadata[0].as: Invalid value: \"invalid name!\": is not a valid column name"}},
		{name: "TestValidateCastValid", change: fs(set(table0("cast"), doc{"amount": "float64"}))},
		{name: "TestValidateCastInvalidTarget", change: fs(set(table0("cast"), doc{"amount": "invalid_type"})), want: []string{"tables[0].cast[amount]"}},
		{name: "TestValidateBootstrapModes/typo", change: fs(set(table0("bootstrap"), doc{"mode": "adopt-verifi"})), want: []string{"tables[0].bootstrap.mode"}},
		{name: "TestValidateBootstrapModes/snapshot", change: fs(set(table0("bootstrap"), doc{"mode": "snapshot"}))},
		{name: "TestValidateBootstrapModes/adopt", change: fs(set(table0("bootstrap"), doc{"mode": "adopt"}))},
		{name: "TestValidateBootstrapModes/adopt-verify", change: fs(set(table0("bootstrap"), doc{"mode": "adopt-verify"}))},
		{name: "TestValidateBootstrapStartAt/explicit without position", change: fs(set(table0("bootstrap"), doc{"mode": "adopt", "startAt": "explicit"})), want: []string{"tables[0].bootstrap.position"}},
		{name: "TestValidateBootstrapStartAt/explicit position", change: fs(set(table0("bootstrap"), doc{"mode": "adopt", "startAt": "explicit", "position": "lsn:0/1A"}))},
		{name: "TestValidateBootstrapStartAt/position without explicit", change: fs(set(table0("bootstrap"), doc{"mode": "adopt", "startAt": "current", "position": "lsn:0/1A"})), want: []string{"tables[0].bootstrap.startAt"}},
		{name: "TestValidateKafkaPrimaryKeyByMode/append without key", change: fs(kafkaAppend, set(table0("onDelete"), "skip"))},
		{name: "TestValidateKafkaPrimaryKeyByMode/upsert without key or assertion", change: fs(kafkaAppend, set(table0("onDelete"), "skip"), set(table0("writeMode"), "")),
			want: []string{"tables[0].primaryKey: Required", "tables[0].primaryKey: partitionedByPrimaryKey"}},
		{name: "TestValidateKafkaPrimaryKeyByMode/upsert without key", change: fs(kafkaAppend, set(table0("onDelete"), "skip"), set(table0("writeMode"), ""), set("source.partitionedByPrimaryKey", true)),
			want: []string{"tables[0].primaryKey: Required"}},
		{name: "TestValidateKafkaPrimaryKeyByMode/upsert with key and assertion", change: fs(kafkaAppend, set(table0("onDelete"), "skip"), set(table0("writeMode"), ""), set("source.partitionedByPrimaryKey", true), set(table0("primaryKey"), []any{"id"}))},
		{name: "TestValidateKafkaAppendOnDelete/record", change: fs(kafkaAppend), want: []string{"tables[0].onDelete"}},
		{name: "TestValidateKafkaAppendOnDelete/skip", change: fs(kafkaAppend, set(table0("onDelete"), "skip"))},
		{name: "TestValidateAppendIdempotent/no identity", change: fs(idempotent), want: []string{"tables[0].identity: Required"}},
		{name: "TestValidateAppendIdempotent/no coordinate", change: fs(idempotent, set(table0("identity"), []any{"stream_name"})), want: []string{"tables[0].identity: shard or sequence"}},
		{name: "TestValidateAppendIdempotent/transport identity", change: fs(idempotent, set(table0("identity"), []any{"partition", "offset"}))},
		{name: "TestValidateAppendIdempotent/data column", change: fs(idempotent, set(table0("identity"), []any{"payload"})),
			want: []string{"tables[0].identity[0]: transport metadata", "tables[0].identity: shard or sequence"}},
		{name: "TestValidateAvroFormat/no registry", change: fs(kafkaAppend, set(table0("onDelete"), "skip"), set("source.format", "avro")), want: []string{"source.schemaRegistry"}},
		{name: "TestValidateAvroFormat/registry", change: fs(kafkaAppend, set(table0("onDelete"), "skip"), set("source.format", "avro"), set("source.schemaRegistry", "http://registry:8081"))},
		{name: "TestValidateAvroFormat/not kafka", change: fs(kafkaAppend, set(table0("onDelete"), "skip"), set("source.format", "avro"), set("source.schemaRegistry", "http://registry:8081"), set("source.kind", "mysql")),
			want: []string{"source.format: avro is only valid for kind kafka"}},
		{name: "TestValidateNestedPrimaryKeyRejected/nested", change: fs(set(table0("primaryKey"), []any{"address.city"})), want: []string{"tables[0].primaryKey[0]: nested"}},
	})
}

// idempotent is the append-idempotent table of urutau's TestValidateAppendIdempotent.
func idempotent(d doc) {
	kafkaAppend(d)
	set(table0("writeMode"), "append-idempotent")(d)
	set(table0("columns"), doc{"payload": "string"})(d)
	set(table0("onDelete"), "skip")(d)
	set(table0("metadata"), []any{
		doc{"from": "stream", "as": "stream_name"}, doc{"from": "shard", "as": "partition"}, doc{"from": "sequence", "as": "offset"},
	})(d)
}

// TestUpstreamValidateWarnings ports TestValidateWarningsOpInUpsert.
func TestUpstreamValidateWarnings(t *testing.T) {
	in := mustParse(t, build(upstreamValidSpec, set(table0("writeMode"), "upsert"), set(table0("metadata"), []any{doc{"from": "op", "as": "op"}})))
	if w := strings.Join(in.Warnings(), "\n"); !strings.Contains(w, "op") || !strings.Contains(w, "upsert") {
		t.Errorf("expected op-in-upsert advisory warning, got %q", w)
	}
}

// TestUpstreamValidateDeleteMode ports spec/validate_evolve_test.go: TestValidateDeleteMode and
// TestValidateRejectsAnUnknownDeleteMode.
func TestUpstreamValidateDeleteMode(t *testing.T) {
	mode := func(sinkType, m string) []func(doc) {
		return fs(set("sink.type", sinkType), set("sink.deleteMode", m))
	}
	runUpstreamRows(t, []upstreamRow{
		{name: "TestValidateDeleteMode/default", change: mode("iceberg+rest", "")},
		{name: "TestValidateDeleteMode/equality", change: mode("iceberg+rest", "equality")},
		{name: "TestValidateDeleteMode/positional on iceberg", change: mode("iceberg+rest", "positional")},
		{name: "TestValidateDeleteMode/unknown value", change: mode("iceberg+rest", "vectors"), want: []string{`sink.deleteMode: Unsupported value: "vectors"`}},
		{name: "TestValidateDeleteMode/positional on clickhouse", change: mode("clickhouse", "positional"), want: []string{"sink.deleteMode: only the Iceberg sink writes positional deletes"}},
		{name: "TestValidateDeleteMode/equality on clickhouse", change: mode("clickhouse", "equality")},
		{name: "TestValidateRejectsAnUnknownDeleteMode", change: fs(set("sink.deleteMode", "vectors")), want: []string{"sink.deleteMode"}},
	})
}

// maintSpec is urutau's maintSpec(): every maintenance operation configured, enabled.
func maintSpec() doc {
	d := upstreamValidSpec()
	d["sink"].(doc)["maintenance"] = doc{
		"enabled":        true,
		"compaction":     doc{"interval": "5m", "targetFileSize": "512Mi", "minInputFiles": 5},
		"snapshotExpiry": doc{"interval": "10m", "retainLast": 1, "maxAge": "168h"},
		"orphanCleanup":  doc{"interval": "1h", "olderThan": "72h"},
	}
	return d
}

// TestUpstreamMaintenance ports spec/maintenance_test.go's Validate tests. Its "Iceberg family"
// case validates sink types urutau registers no driver for (iceberg, iceberg+glue): Validate
// accepts their maintenance block, and urutau's webhook then refuses the sink type, as Parse does.
func TestUpstreamMaintenance(t *testing.T) {
	m := func(path string, v any) func(doc) { return set("sink.maintenance."+path, v) }
	mp := "sink.maintenance."
	runUpstreamRows(t, []upstreamRow{
		{name: "TestValidateMaintenanceAccepted", base: maintSpec},
		{name: "TestValidateMaintenanceRejectsNonIcebergSink/clickhouse", base: maintSpec, change: fs(set("sink.type", "clickhouse")), want: []string{"sink.maintenance: Forbidden"}},
		{name: "TestValidateMaintenanceRejectsNonIcebergSink/couchbase", base: maintSpec, change: fs(set("sink.type", "couchbase")), want: []string{"sink.maintenance: Forbidden"}},
		{name: "TestValidateMaintenanceAcceptsIcebergSink/empty", base: maintSpec, change: fs(set("sink.type", ""))},
		{name: "TestValidateMaintenanceAcceptsIcebergSink/iceberg+rest", base: maintSpec, change: fs(set("sink.type", "iceberg+rest"))},
		{name: "TestValidateMaintenanceAcceptsIcebergSink/iceberg (no driver)", base: maintSpec, change: fs(set("sink.type", "iceberg")), want: []string{"sink.type: Unsupported"}},
		{name: "TestValidateMaintenanceAcceptsIcebergSink/iceberg+glue (no driver)", base: maintSpec, change: fs(set("sink.type", "iceberg+glue")), want: []string{"sink.type: Unsupported"}},
		{name: "TestValidateMaintenanceNilIsFine/nil"},
		{name: "TestValidateMaintenanceNilIsFine/all-nil sub-configs", change: fs(set("sink.maintenance", doc{"enabled": true}))},
		{name: "TestValidateMaintenanceBadDurations/compaction interval", base: maintSpec, change: fs(m("compaction.interval", "five minutes")), want: []string{mp + "compaction.interval"}},
		{name: "TestValidateMaintenanceBadDurations/compaction targetFileSize", base: maintSpec, change: fs(m("compaction.targetFileSize", "big")), want: []string{mp + "compaction.targetFileSize"}},
		{name: "TestValidateMaintenanceBadDurations/snapshotExpiry interval", base: maintSpec, change: fs(m("snapshotExpiry.interval", "soon")), want: []string{mp + "snapshotExpiry.interval"}},
		{name: "TestValidateMaintenanceBadDurations/snapshotExpiry maxAge", base: maintSpec, change: fs(m("snapshotExpiry.maxAge", "a week")), want: []string{mp + "snapshotExpiry.maxAge"}},
		{name: "TestValidateMaintenanceBadDurations/snapshotExpiry retainLast", base: maintSpec, change: fs(m("snapshotExpiry.retainLast", -1)), want: []string{mp + "snapshotExpiry.retainLast"}},
		{name: "TestValidateMaintenanceBadDurations/orphanCleanup interval", base: maintSpec, change: fs(m("orphanCleanup.interval", "hourly")), want: []string{mp + "orphanCleanup.interval"}},
		{name: "TestValidateMaintenanceBadDurations/orphanCleanup olderThan", base: maintSpec, change: fs(m("orphanCleanup.olderThan", "old")), want: []string{mp + "orphanCleanup.olderThan"}},
		{name: "TestValidateTargetFileSize", change: fs(set("sink.defaults", doc{"targetFileSize": "not-a-size"})), want: []string{"sink.defaults.targetFileSize"}},
	})
}

// TestUpstreamParseBytes ports TestParseBytes and TestParseBytesRejectsNonBinaryUnit.
func TestUpstreamParseBytes(t *testing.T) {
	for _, ok := range []string{"512", "0", "1Ki", "128Mi", "512Mi", "1Gi", "2Ti"} {
		if err := checkBytes(ok); err != nil {
			t.Errorf("TestParseBytes: checkBytes(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"1K", "1M", "1G", "1.5Mi", "-1Mi", "Mi", "", "abc",
		"9223372036854775807Mi", "9007199254740992Gi", "9223372036854775807Ti"} {
		if err := checkBytes(bad); err == nil {
			t.Errorf("TestParseBytesRejectsNonBinaryUnit: checkBytes(%q) accepted it", bad)
		}
	}
}

// TestUpstreamMaintenanceEnabled ports TestLoadYAMLWithoutMaintenanceBlockIsDisabled and
// TestMaintenanceEnabledCases.
func TestUpstreamMaintenanceEnabled(t *testing.T) {
	for name, tc := range map[string]struct {
		maintenance any
		want        bool
	}{
		"nil block":                 {nil, false},
		"empty block":               {doc{}, false},
		"populated but not enabled": {doc{"compaction": doc{"interval": "5m"}}, false},
		"explicitly enabled":        {doc{"enabled": true}, true},
	} {
		change := del("sink.maintenance")
		if tc.maintenance != nil {
			change = set("sink.maintenance", tc.maintenance)
		}
		if got := mustParse(t, build(upstreamValidSpec, change)).Sink.MaintenanceEnabled(); got != tc.want {
			t.Errorf("TestMaintenanceEnabledCases/%s: MaintenanceEnabled() = %v, want %v", name, got, tc.want)
		}
	}
}
