package spec

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ruleCase is one rejecting case: a base definition with one change, and the one error it must
// give, by field path and type.
type ruleCase struct {
	name   string
	base   func() doc
	change []func(doc)
	field  string // relative to spec.definition.inline
	typ    field.ErrorType
	detail string // a part of the message, when it matters
}

func table0(parts ...string) string { return "tables.0." + strings.Join(parts, ".") }

// appendTable makes table 0 an append table.
var appendTable = set(table0("writeMode"), "append")

func sourceCases() []ruleCase {
	return []ruleCase{
		{name: "pipeline required", base: mysqlDoc, change: fs(del("pipeline")), field: "pipeline", typ: field.ErrorTypeRequired},
		{name: "source.kind required", base: mysqlDoc, change: fs(del("source.kind")), field: "source.kind", typ: field.ErrorTypeRequired},
		{name: "source.kind registered", base: mysqlDoc, change: fs(set("source.kind", "oracle")), field: "source.kind", typ: field.ErrorTypeNotSupported, detail: `"kafka", "mysql", "postgres"`},
		{name: "kafka snapshotMode none", base: kafkaDoc, change: fs(set("source.snapshotMode", "initial")), field: "source.snapshotMode", typ: field.ErrorTypeInvalid},
		{name: "postgres slotName required", base: postgresDoc, change: fs(del("source.slotName")), field: "source.slotName", typ: field.ErrorTypeRequired},
		{name: "serverId not a number", base: mysqlDoc, change: fs(set("source.serverId", "db-1")), field: "source.serverId", typ: field.ErrorTypeInvalid},
		{name: "serverId beyond uint32", base: mysqlDoc, change: fs(set("source.serverId", "4294967296")), field: "source.serverId", typ: field.ErrorTypeInvalid},
		{name: "maxReconnectAttempts negative", base: mysqlDoc, change: fs(set("source.maxReconnectAttempts", -1)), field: "source.maxReconnectAttempts", typ: field.ErrorTypeInvalid},
		{name: "format unknown", base: kafkaDoc, change: fs(set("source.format", "protobuf")), field: "source.format", typ: field.ErrorTypeNotSupported},
		{name: "format raw only for kafka", base: mysqlDoc, change: fs(set("source.format", "raw"), appendTable), field: "source.format", typ: field.ErrorTypeInvalid},
		{name: "format avro only for kafka", base: mysqlDoc, change: fs(set("source.format", "avro"), set("source.schemaRegistry", "http://r:8081")), field: "source.format", typ: field.ErrorTypeInvalid},
		{name: "avro needs a schema registry", base: kafkaDoc, change: fs(set("source.format", "avro")), field: "source.schemaRegistry", typ: field.ErrorTypeRequired},
		{name: "onDecodeError unknown", base: kafkaDoc, change: fs(set("source.onDecodeError", "retry")), field: "source.onDecodeError", typ: field.ErrorTypeNotSupported},
		{name: "onDecodeError only for kafka", base: mysqlDoc, change: fs(set("source.onDecodeError", "skip")), field: "source.onDecodeError", typ: field.ErrorTypeForbidden},
		{name: "kafka block only for kafka", base: mysqlDoc, change: fs(set("source.kafka", doc{})), field: "source.kafka", typ: field.ErrorTypeForbidden},
		{name: "kafka tls cert without key", base: kafkaDoc, change: fs(set("source.kafka", doc{"tls": doc{"cert": "/etc/urutau/kafka-tls/tls.crt"}})), field: "source.kafka.tls", typ: field.ErrorTypeInvalid},
		{name: "kafka sasl mechanism", base: kafkaDoc, change: fs(set("source.kafka", doc{"sasl": doc{"mechanism": "gssapi", "username": "u", "password": "p"}})), field: "source.kafka.sasl.mechanism", typ: field.ErrorTypeNotSupported},
		{name: "kafka sasl credentials", base: kafkaDoc, change: fs(set("source.kafka", doc{"sasl": doc{"mechanism": "plain", "username": "u"}})), field: "source.kafka.sasl", typ: field.ErrorTypeRequired},
		{name: "onTruncate only relational", base: kafkaDoc, change: fs(set("source.onTruncate", "fail")), field: "source.onTruncate", typ: field.ErrorTypeForbidden},
		{name: "onTruncate unknown", base: mysqlDoc, change: fs(set("source.onTruncate", "propagate")), field: "source.onTruncate", typ: field.ErrorTypeNotSupported},
		{name: "postgres block only for postgres", base: mysqlDoc, change: fs(set("source.postgres", doc{"host": "h", "database": "d"})), field: "source.postgres", typ: field.ErrorTypeForbidden},
		{name: "uri and postgres exclusive", base: postgresBlockDoc, change: fs(set("source.uri", "postgres://h/d")), field: "source.uri", typ: field.ErrorTypeForbidden},
		{name: "postgres host required", base: postgresBlockDoc, change: fs(del("source.postgres.host")), field: "source.postgres.host", typ: field.ErrorTypeRequired},
		{name: "postgres host bare", base: postgresBlockDoc, change: fs(set("source.postgres.host", "postgres://pg")), field: "source.postgres.host", typ: field.ErrorTypeInvalid},
		{name: "postgres database required", base: postgresBlockDoc, change: fs(del("source.postgres.database")), field: "source.postgres.database", typ: field.ErrorTypeRequired},
		{name: "postgres port", base: postgresBlockDoc, change: fs(set("source.postgres.port", 70000)), field: "source.postgres.port", typ: field.ErrorTypeInvalid},
		{name: "postgres maxThreads", base: postgresBlockDoc, change: fs(set("source.postgres.maxThreads", 33)), field: "source.postgres.maxThreads", typ: field.ErrorTypeInvalid},
		{name: "postgres retryCount", base: postgresBlockDoc, change: fs(set("source.postgres.retryCount", -1)), field: "source.postgres.retryCount", typ: field.ErrorTypeInvalid},
		{name: "postgres cdc plugin", base: postgresBlockDoc, change: fs(set("source.postgres.cdc", doc{"plugin": "decoderbufs"})), field: "source.postgres.cdc.plugin", typ: field.ErrorTypeNotSupported},
		{name: "postgres cdc initialWaitTime", base: postgresBlockDoc, change: fs(set("source.postgres.cdc", doc{"initialWaitTime": 10})), field: "source.postgres.cdc.initialWaitTime", typ: field.ErrorTypeInvalid},
		{name: "postgres ssl mode", base: postgresBlockDoc, change: fs(set("source.postgres.ssl", doc{"mode": "prefer"})), field: "source.postgres.ssl.mode", typ: field.ErrorTypeNotSupported},
		{name: "postgres ssl verify needs ca", base: postgresBlockDoc, change: fs(set("source.postgres.ssl", doc{"mode": "verify-full"})), field: "source.postgres.ssl.ca", typ: field.ErrorTypeRequired},
		{name: "postgres ssl cert and key", base: postgresBlockDoc, change: fs(set("source.postgres.ssl", doc{"key": "/k"})), field: "source.postgres.ssl", typ: field.ErrorTypeInvalid},
		{name: "ssh host required", base: postgresBlockDoc, change: fs(set("source.postgres.ssh", doc{"username": "u", "privateKey": "/k"})), field: "source.postgres.ssh.host", typ: field.ErrorTypeRequired},
		{name: "ssh port", base: postgresBlockDoc, change: fs(set("source.postgres.ssh", doc{"host": "b", "port": -1, "username": "u", "privateKey": "/k"})), field: "source.postgres.ssh.port", typ: field.ErrorTypeInvalid},
		{name: "ssh username required", base: postgresBlockDoc, change: fs(set("source.postgres.ssh", doc{"host": "b", "privateKey": "/k"})), field: "source.postgres.ssh.username", typ: field.ErrorTypeRequired},
		{name: "ssh key or password", base: postgresBlockDoc, change: fs(set("source.postgres.ssh", doc{"host": "b", "username": "u"})), field: "source.postgres.ssh", typ: field.ErrorTypeRequired},
		// urutau validate.go @0b3b110: source.postgres.replicaIdentity (#571).
		{name: "postgres replicaIdentity (#571)", base: postgresBlockDoc, change: fs(set("source.postgres.replicaIdentity", "default")), field: "source.postgres.replicaIdentity", typ: field.ErrorTypeNotSupported, detail: `"full", "keep"`},
		// urutau validate_kafka.go @625e329: validateSchemaRegistryAuth.
		{name: "schemaRegistryAuth basic auth", base: kafkaDoc, change: fs(set("source.schemaRegistryAuth", doc{"ca": "/etc/urutau/schema-registry-tls/ca.crt"})), field: "source.schemaRegistryAuth", typ: field.ErrorTypeRequired},
		{name: "schemaRegistryAuth cert and key", base: kafkaDoc, change: fs(set("source.schemaRegistryAuth", doc{"username": "u", "password": "p", "cert": "/c"})), field: "source.schemaRegistryAuth", typ: field.ErrorTypeInvalid},
	}
}

func sinkCases() []ruleCase {
	maint := func(m doc) func(doc) { return set("sink.maintenance", m) }
	return []ruleCase{
		{name: "sink.namespace required", base: mysqlDoc, change: fs(del("sink.namespace")), field: "sink.namespace", typ: field.ErrorTypeRequired},
		{name: "iceberg namespace level", base: mysqlDoc, change: fs(set("sink.namespace", "raw..x")), field: "sink.namespace", typ: field.ErrorTypeInvalid},
		{name: "empty type defaults to iceberg: namespace level", base: mysqlDoc, change: fs(del("sink.type"), set("sink.namespace", ".raw")), field: "sink.namespace", typ: field.ErrorTypeInvalid},
		{name: "sink.type registered", base: mysqlDoc, change: fs(set("sink.type", "iceberg")), field: "sink.type", typ: field.ErrorTypeNotSupported, detail: `"clickhouse", "couchbase", "iceberg+rest"`},
		{name: "kafka is no sink", base: mysqlDoc, change: fs(set("sink.type", "kafka")), field: "sink.type", typ: field.ErrorTypeNotSupported},
		{name: "commitMode unknown", base: mysqlDoc, change: fs(set("sink.type", "couchbase"), set("sink.commitMode", "eventual")), field: "sink.commitMode", typ: field.ErrorTypeNotSupported},
		{name: "commitMode couchbase only", base: mysqlDoc, change: fs(set("sink.commitMode", "fast")), field: "sink.commitMode", typ: field.ErrorTypeForbidden},
		{name: "commitMode not on the default sink", base: mysqlDoc, change: fs(del("sink.type"), set("sink.commitMode", "atomic")), field: "sink.commitMode", typ: field.ErrorTypeForbidden, detail: `"iceberg+rest"`},
		{name: "defaults.targetFileSize", base: mysqlDoc, change: fs(set("sink.defaults", doc{"targetFileSize": "512MB"})), field: "sink.defaults.targetFileSize", typ: field.ErrorTypeInvalid},
		{name: "defaults.targetFileSize overflow", base: mysqlDoc, change: fs(set("sink.defaults", doc{"targetFileSize": "9223372036854775807Mi"})), field: "sink.defaults.targetFileSize", typ: field.ErrorTypeInvalid},
		{name: "defaults.writeMode", base: mysqlDoc, change: fs(set("sink.defaults", doc{"writeMode": "merge"})), field: "sink.defaults.writeMode", typ: field.ErrorTypeNotSupported},
		{name: "evolveSchema iceberg only", base: mysqlDoc, change: fs(set("sink.type", "clickhouse"), set("sink.evolveSchema", true)), field: "sink.evolveSchema", typ: field.ErrorTypeForbidden},
		{name: "maintenance iceberg only", base: mysqlDoc, change: fs(set("sink.type", "couchbase"), maint(doc{"enabled": true})), field: "sink.maintenance", typ: field.ErrorTypeForbidden},
		{name: "compaction interval", base: mysqlDoc, change: fs(maint(doc{"compaction": doc{"interval": "5 minutes"}})), field: "sink.maintenance.compaction.interval", typ: field.ErrorTypeInvalid},
		{name: "compaction targetFileSize", base: mysqlDoc, change: fs(maint(doc{"compaction": doc{"targetFileSize": "1Zi"}})), field: "sink.maintenance.compaction.targetFileSize", typ: field.ErrorTypeInvalid},
		{name: "snapshotExpiry interval", base: mysqlDoc, change: fs(maint(doc{"snapshotExpiry": doc{"interval": "ten"}})), field: "sink.maintenance.snapshotExpiry.interval", typ: field.ErrorTypeInvalid},
		{name: "snapshotExpiry maxAge", base: mysqlDoc, change: fs(maint(doc{"snapshotExpiry": doc{"maxAge": "7d"}})), field: "sink.maintenance.snapshotExpiry.maxAge", typ: field.ErrorTypeInvalid},
		{name: "snapshotExpiry retainLast", base: mysqlDoc, change: fs(maint(doc{"snapshotExpiry": doc{"retainLast": -1}})), field: "sink.maintenance.snapshotExpiry.retainLast", typ: field.ErrorTypeInvalid},
		{name: "orphanCleanup interval", base: mysqlDoc, change: fs(maint(doc{"orphanCleanup": doc{"interval": "hourly"}})), field: "sink.maintenance.orphanCleanup.interval", typ: field.ErrorTypeInvalid},
		{name: "orphanCleanup olderThan", base: mysqlDoc, change: fs(maint(doc{"orphanCleanup": doc{"olderThan": "3d"}})), field: "sink.maintenance.orphanCleanup.olderThan", typ: field.ErrorTypeInvalid},
		// urutau validate.go @0b3b110 and duration.go @25985fb: positiveDuration (#503).
		{name: "compaction interval zero (#503)", base: mysqlDoc, change: fs(maint(doc{"compaction": doc{"interval": "0s"}})), field: "sink.maintenance.compaction.interval", typ: field.ErrorTypeInvalid, detail: "positive duration"},
		{name: "snapshotExpiry interval negative (#503)", base: mysqlDoc, change: fs(maint(doc{"snapshotExpiry": doc{"interval": "-5m"}})), field: "sink.maintenance.snapshotExpiry.interval", typ: field.ErrorTypeInvalid, detail: "positive duration"},
		{name: "snapshotExpiry maxAge zero (#503)", base: mysqlDoc, change: fs(maint(doc{"snapshotExpiry": doc{"maxAge": "0s"}})), field: "sink.maintenance.snapshotExpiry.maxAge", typ: field.ErrorTypeInvalid, detail: "positive duration"},
		{name: "snapshotExpiry maxAge negative (#503)", base: mysqlDoc, change: fs(maint(doc{"snapshotExpiry": doc{"maxAge": "-5m"}})), field: "sink.maintenance.snapshotExpiry.maxAge", typ: field.ErrorTypeInvalid, detail: "positive duration"},
		{name: "orphanCleanup interval zero (#503)", base: mysqlDoc, change: fs(maint(doc{"orphanCleanup": doc{"interval": "0s"}})), field: "sink.maintenance.orphanCleanup.interval", typ: field.ErrorTypeInvalid, detail: "positive duration"},
		// urutau validate.go @0b3b110: MinOrphanCleanupOlderThan, 1h.
		{name: "orphanCleanup olderThan below 1h", base: mysqlDoc, change: fs(maint(doc{"orphanCleanup": doc{"olderThan": "59m"}})), field: "sink.maintenance.orphanCleanup.olderThan", typ: field.ErrorTypeInvalid, detail: "below the 1h0m0s minimum"},
		{name: "orphanCleanup olderThan zero", base: mysqlDoc, change: fs(maint(doc{"orphanCleanup": doc{"olderThan": "0s"}})), field: "sink.maintenance.orphanCleanup.olderThan", typ: field.ErrorTypeInvalid, detail: "staged files"},
		// urutau validate_evolve.go @ca577c0: validateDeleteMode.
		{name: "deleteMode unknown", base: mysqlDoc, change: fs(set("sink.deleteMode", "vectors")), field: "sink.deleteMode", typ: field.ErrorTypeNotSupported, detail: `"equality", "positional"`},
		{name: "deleteMode positional iceberg only", base: mysqlDoc, change: fs(set("sink.type", "couchbase"), set("sink.deleteMode", "positional")), field: "sink.deleteMode", typ: field.ErrorTypeForbidden},
	}
}

func tableCases() []ruleCase {
	two := func(d doc) {
		d["tables"] = []any{
			doc{"source": "shop.orders", "target": "raw.orders", "primaryKey": []any{"id"}},
			doc{"source": "shop.items", "target": "raw.items", "primaryKey": []any{"id"}},
		}
	}
	discover := set("source.postgres.discover", true)
	return []ruleCase{
		{name: "tables required", base: mysqlDoc, change: fs(del("tables")), field: "tables", typ: field.ErrorTypeRequired},
		{name: "tables required: an empty list", base: mysqlDoc, change: fs(set("tables", []any{})), field: "tables", typ: field.ErrorTypeRequired},
		{name: "discover excludes tables", base: postgresBlockDoc, change: fs(discover), field: "source.postgres.discover", typ: field.ErrorTypeForbidden},
		{name: "table source required", base: mysqlDoc, change: fs(del(table0("source"))), field: "tables[0].source", typ: field.ErrorTypeRequired},
		{name: "table target required", base: mysqlDoc, change: fs(del(table0("target"))), field: "tables[0].target", typ: field.ErrorTypeRequired},
		{name: "iceberg target level", base: mysqlDoc, change: fs(set(table0("target"), "raw.")), field: "tables[0].target", typ: field.ErrorTypeInvalid},
		{name: "table source unique", base: mysqlDoc, change: fs(two, set("tables.1.source", "shop.orders")), field: "tables[1].source", typ: field.ErrorTypeDuplicate, detail: "also tables[0]"},
		{name: "table target unique", base: mysqlDoc, change: fs(two, set("tables.1.target", "raw.orders")), field: "tables[1].target", typ: field.ErrorTypeDuplicate},
		{name: "workers.number", base: mysqlDoc, change: fs(set(table0("workers"), doc{"number": -1})), field: "tables[0].workers.number", typ: field.ErrorTypeInvalid},
		{name: "workers.max negative", base: mysqlDoc, change: fs(set(table0("workers"), doc{"max": -1})), field: "tables[0].workers.max", typ: field.ErrorTypeInvalid},
		{name: "workers.max below number", base: mysqlDoc, change: fs(set(table0("workers"), doc{"number": 3, "max": 2})), field: "tables[0].workers.max", typ: field.ErrorTypeInvalid, detail: "below workers.number (3)"},
		{name: "cursor only incremental", base: postgresDoc, change: fs(set(table0("cursor"), "updated_at")), field: "tables[0].cursor", typ: field.ErrorTypeForbidden},
		{name: "incremental needs cursor", base: postgresDoc, change: fs(set(table0("mode"), "incremental")), field: "tables[0].cursor", typ: field.ErrorTypeRequired},
		{name: "mode unknown", base: postgresDoc, change: fs(set(table0("mode"), "batch")), field: "tables[0].mode", typ: field.ErrorTypeNotSupported},
		{name: "upsert needs primaryKey", base: mysqlDoc, change: fs(del(table0("primaryKey"))), field: "tables[0].primaryKey", typ: field.ErrorTypeRequired},
		{name: "primaryKey top-level", base: mysqlDoc, change: fs(set(table0("primaryKey"), []any{"address.city"})), field: "tables[0].primaryKey[0]", typ: field.ErrorTypeInvalid},
		{name: "kafka upsert partitioned by key", base: kafkaDoc, change: fs(del("source.partitionedByPrimaryKey")), field: "tables[0].primaryKey", typ: field.ErrorTypeInvalid},
		{name: "raw is append-only", base: kafkaDoc, change: fs(set("source.format", "raw")), field: "tables[0].writeMode", typ: field.ErrorTypeInvalid},
		{name: "append filter immutable", base: mysqlDoc, change: fs(appendTable, set(table0("filter"), doc{"col": "a", "op": "is_null"})), field: "tables[0].filterImmutable", typ: field.ErrorTypeRequired},
		{name: "kafka append onDelete skip", base: kafkaDoc, change: fs(appendTable), field: "tables[0].onDelete", typ: field.ErrorTypeInvalid},
		{name: "onDelete unknown", base: mysqlDoc, change: fs(appendTable, set(table0("onDelete"), "archive")), field: "tables[0].onDelete", typ: field.ErrorTypeNotSupported},
		{name: "append-idempotent needs kafka", base: mysqlDoc, change: fs(set(table0("writeMode"), "append-idempotent")), field: "tables[0].writeMode", typ: field.ErrorTypeInvalid},
		{name: "append-idempotent identity", base: kafkaDoc, change: fs(set(table0("writeMode"), "append-idempotent"), set(table0("onDelete"), "skip")), field: "tables[0].identity", typ: field.ErrorTypeRequired},
		{name: "identity is transport", base: kafkaDoc, change: fs(set(table0("writeMode"), "append-idempotent"), set(table0("onDelete"), "skip"),
			set(table0("metadata"), []any{doc{"from": "sequence", "as": "seq"}}), set(table0("identity"), []any{"seq", "id"})), field: "tables[0].identity[1]", typ: field.ErrorTypeInvalid},
		{name: "identity has a coordinate", base: kafkaDoc, change: fs(set(table0("writeMode"), "append-idempotent"), set(table0("onDelete"), "skip"),
			set(table0("metadata"), []any{doc{"from": "stream", "as": "topic"}}), set(table0("identity"), []any{"topic"})), field: "tables[0].identity", typ: field.ErrorTypeInvalid},
		{name: "writeMode unknown", base: mysqlDoc, change: fs(set(table0("writeMode"), "merge")), field: "tables[0].writeMode", typ: field.ErrorTypeNotSupported},
		{name: "columnFilter empty name", base: mysqlDoc, change: fs(set(table0("columnFilter"), []any{"id", ""})), field: "tables[0].columnFilter[1]", typ: field.ErrorTypeInvalid},
		{name: "columnFilter duplicate", base: mysqlDoc, change: fs(set(table0("columnFilter"), []any{"id", "id"})), field: "tables[0].columnFilter[1]", typ: field.ErrorTypeDuplicate},
		{name: "columnFilter keeps the key", base: mysqlDoc, change: fs(set(table0("columnFilter"), []any{"total"})), field: "tables[0].columnFilter", typ: field.ErrorTypeInvalid},
		{name: "chunkColumn is a key column", base: mysqlDoc, change: fs(set(table0("chunkColumn"), "created_at")), field: "tables[0].chunkColumn", typ: field.ErrorTypeInvalid},
		// urutau validate.go @0b3b110: targets must differ beyond punctuation (one worker group).
		{name: "targets differ only in punctuation", base: mysqlDoc, change: fs(two, set("tables.1.target", "raw-orders")), field: "tables[1].target", typ: field.ErrorTypeInvalid, detail: `same worker group name "shop-raw-orders" as tables[0]`},
		{name: "targets differ only in case", base: mysqlDoc, change: fs(two, set("tables.1.target", "RAW.Orders")), field: "tables[1].target", typ: field.ErrorTypeInvalid, detail: "worker group"},
		// What the API server would refuse once the hub applies the ConfigMap, or once the
		// coordinator creates the table's worker pods.
		{name: "target is no ConfigMap key", base: mysqlDoc, change: fs(set(table0("target"), "raw/orders")), field: "tables[0].target", typ: field.ErrorTypeInvalid, detail: "worker-pod-template.raw/orders.yaml"},
		{name: "target is no label value", base: mysqlDoc, change: fs(set("sink.type", "clickhouse"), set(table0("target"), "orders_")), field: "tables[0].target", typ: field.ErrorTypeInvalid, detail: "urutau.io/table label"},
		{name: "target too long for a label", base: mysqlDoc, change: fs(set(table0("target"), "raw."+strings.Repeat("o", 60))), field: "tables[0].target", typ: field.ErrorTypeInvalid, detail: "must be no more than 63"},
		// What the renderer refused, Parse refuses first (one source of truth).
		{name: "workers.cpu a quantity", base: mysqlDoc, change: fs(set(table0("workers"), doc{"cpu": "lots"})), field: "tables[0].workers.cpu", typ: field.ErrorTypeInvalid},
		{name: "workers.memory not negative", base: mysqlDoc, change: fs(set(table0("workers"), doc{"memory": "-1Gi"})), field: "tables[0].workers.memory", typ: field.ErrorTypeInvalid},
		{name: "workers.cpu bounded", base: mysqlDoc, change: fs(set(table0("workers"), doc{"cpu": "1e-999999999"})), field: "tables[0].workers.cpu", typ: field.ErrorTypeInvalid, detail: "exponent"},
		{name: "workers.number int32", base: mysqlDoc, change: fs(set(table0("workers"), doc{"number": int64(math.MaxInt32) + 1})), field: "tables[0].workers.number", typ: field.ErrorTypeInvalid},
		{name: "workers.max int32", base: mysqlDoc, change: fs(set(table0("workers"), doc{"max": int64(math.MaxInt32) + 1})), field: "tables[0].workers.max", typ: field.ErrorTypeInvalid},
	}
}

func columnCases() []ruleCase {
	meta := func(m ...any) func(doc) { return set(table0("metadata"), m) }
	cols := func(c doc) func(doc) { return set(table0("columns"), c) }
	avro := set("source.format", "avro")
	return []ruleCase{
		{name: "metadata from required", base: mysqlDoc, change: fs(meta(doc{"as": "op_col"})), field: "tables[0].metadata[0].from", typ: field.ErrorTypeNotSupported},
		{name: "metadata as required", base: mysqlDoc, change: fs(meta(doc{"from": "op"})), field: "tables[0].metadata[0].as", typ: field.ErrorTypeRequired},
		{name: "metadata as identifier", base: mysqlDoc, change: fs(meta(doc{"from": "phase", "as": "1phase"})), field: "tables[0].metadata[0].as", typ: field.ErrorTypeInvalid},
		{name: "metadata as unique", base: mysqlDoc, change: fs(meta(doc{"from": "phase", "as": "p"}, doc{"from": "position", "as": "p"})), field: "tables[0].metadata[1].as", typ: field.ErrorTypeDuplicate},
		{name: "metadata not in the key", base: mysqlDoc, change: fs(meta(doc{"from": "position", "as": "id"})), field: "tables[0].metadata[0].as", typ: field.ErrorTypeInvalid},
		{name: "cast column name", base: mysqlDoc, change: fs(set(table0("cast"), doc{"": "string"})), field: "tables[0].cast", typ: field.ErrorTypeInvalid},
		{name: "cast target", base: mysqlDoc, change: fs(set(table0("cast"), doc{"total": "varchar"})), field: "tables[0].cast[total]", typ: field.ErrorTypeInvalid},
		{name: "cast decimal scale", base: mysqlDoc, change: fs(set(table0("cast"), doc{"total": "decimal(2,5)"})), field: "tables[0].cast[total]", typ: field.ErrorTypeInvalid},
		{name: "cast encoding", base: mysqlDoc, change: fs(set(table0("cast"), doc{"blob": "string(base32)"})), field: "tables[0].cast[blob]", typ: field.ErrorTypeInvalid},
		{name: "columns type", base: kafkaDoc, change: fs(cols(doc{"total": "money"})), field: "tables[0].columns[total]", typ: field.ErrorTypeInvalid},
		{name: "columns nested type", base: kafkaDoc, change: fs(cols(doc{"items": doc{"list": doc{"struct": doc{"sku": "text"}}}})), field: "tables[0].columns[items]", typ: field.ErrorTypeInvalid, detail: `struct field "sku"`},
		{name: "columns empty name", base: kafkaDoc, change: fs(cols(doc{"": "string"})), field: "tables[0].columns", typ: field.ErrorTypeInvalid},
		{name: "columns from only kafka raw/avro", base: kafkaDoc, change: fs(cols(doc{"total": doc{"type": "int64", "from": "totals.grand"}})), field: "tables[0].columns[total]", typ: field.ErrorTypeForbidden},
		{name: "columns payload not for avro", base: kafkaDoc, change: fs(avro, set("source.schemaRegistry", "http://r:8081"), appendTable, set(table0("onDelete"), "skip"), cols(doc{"payload": "binary"})), field: "tables[0].columns[payload]", typ: field.ErrorTypeForbidden},
		{name: "partitionBy grammar", base: mysqlDoc, change: fs(set(table0("partitionBy"), []any{"day(ts)", "month(ts"})), field: "tables[0].partitionBy[1]", typ: field.ErrorTypeInvalid},
		{name: "partitionBy bucket size", base: mysqlDoc, change: fs(set(table0("partitionBy"), []any{"bucket(0, id)"})), field: "tables[0].partitionBy[0]", typ: field.ErrorTypeInvalid},
		{name: "bootstrap mode", base: mysqlDoc, change: fs(set(table0("bootstrap"), doc{"mode": "copy"})), field: "tables[0].bootstrap.mode", typ: field.ErrorTypeNotSupported},
		{name: "bootstrap explicit position", base: mysqlDoc, change: fs(set(table0("bootstrap"), doc{"mode": "adopt", "startAt": "explicit"})), field: "tables[0].bootstrap.position", typ: field.ErrorTypeRequired},
		{name: "bootstrap startAt", base: mysqlDoc, change: fs(set(table0("bootstrap"), doc{"startAt": "latest"})), field: "tables[0].bootstrap.startAt", typ: field.ErrorTypeNotSupported},
		{name: "bootstrap position needs explicit", base: mysqlDoc, change: fs(set(table0("bootstrap"), doc{"position": "mysql-bin.000003:4"})), field: "tables[0].bootstrap.startAt", typ: field.ErrorTypeInvalid},
	}
}

func filterCases() []ruleCase {
	filter := func(f any) []func(doc) {
		return fs(appendTable, set(table0("filterImmutable"), true), set(table0("filter"), f))
	}
	return []ruleCase{
		{name: "filter node empty", base: mysqlDoc, change: filter(doc{}), field: "tables[0].filter", typ: field.ErrorTypeRequired},
		{name: "filter node ambiguous", base: mysqlDoc, change: filter(doc{"not": doc{"col": "a", "op": "is_null"}, "all": []any{doc{"col": "b", "op": "is_null"}}}), field: "tables[0].filter", typ: field.ErrorTypeInvalid},
		{name: "predicate col", base: mysqlDoc, change: filter(doc{"where": doc{"op": "eq", "value": 1}}), field: "tables[0].filter.where.col", typ: field.ErrorTypeRequired},
		{name: "predicate value", base: mysqlDoc, change: filter(doc{"col": "status", "op": "eq"}), field: "tables[0].filter.value", typ: field.ErrorTypeRequired},
		{name: "predicate list value", base: mysqlDoc, change: filter(doc{"col": "status", "op": "in", "value": "paid"}), field: "tables[0].filter.value", typ: field.ErrorTypeInvalid},
		{name: "predicate list not empty", base: mysqlDoc, change: filter(doc{"col": "status", "op": "not_in", "value": []any{}}), field: "tables[0].filter.value", typ: field.ErrorTypeInvalid},
		{name: "predicate takes no value", base: mysqlDoc, change: filter(doc{"col": "status", "op": "is_null", "value": 1}), field: "tables[0].filter.value", typ: field.ErrorTypeForbidden},
		{name: "predicate op required", base: mysqlDoc, change: filter(doc{"col": "status"}), field: "tables[0].filter.op", typ: field.ErrorTypeRequired},
		{name: "predicate op known", base: mysqlDoc, change: filter(doc{"any": []any{doc{"col": "a", "op": "is_null"}, doc{"col": "b", "op": "like", "value": "x%"}}}), field: "tables[0].filter.any[1].op", typ: field.ErrorTypeNotSupported},
		{name: "nested empty node", base: mysqlDoc, change: filter(doc{"not": doc{"all": []any{nil}}}), field: "tables[0].filter.not.all[0]", typ: field.ErrorTypeRequired},
	}
}

func enrichCases() []ruleCase {
	ok := func() doc {
		return doc{"table": "customers", "source": doc{"uri": "mysql://r@db/crm", "query": "SELECT id, name FROM customers"},
			"on": doc{"customer_id": "id"}, "joinType": "left", "select": []any{"name"}}
	}
	enrich := func(change func(doc)) []func(doc) {
		e := ok()
		change(e)
		return fs(set(table0("enrich"), []any{e}))
	}
	e0 := func(parts ...string) string { return "tables[0].enrich[0]." + strings.Join(parts, ".") }
	return []ruleCase{
		{name: "enrich table", base: mysqlDoc, change: enrich(func(e doc) { delete(e, "table") }), field: e0("table"), typ: field.ErrorTypeRequired},
		{name: "enrich table unique", base: mysqlDoc, change: fs(set(table0("enrich"), []any{ok(), ok()})), field: "tables[0].enrich[1].table", typ: field.ErrorTypeDuplicate},
		{name: "enrich source.uri", base: mysqlDoc, change: enrich(func(e doc) { delete(e["source"].(doc), "uri") }), field: e0("source", "uri"), typ: field.ErrorTypeRequired},
		{name: "enrich source.query", base: mysqlDoc, change: enrich(func(e doc) { delete(e["source"].(doc), "query") }), field: e0("source", "query"), typ: field.ErrorTypeRequired},
		{name: "enrich on", base: mysqlDoc, change: enrich(func(e doc) { delete(e, "on") }), field: e0("on"), typ: field.ErrorTypeRequired},
		{name: "enrich joinType required", base: mysqlDoc, change: enrich(func(e doc) { delete(e, "joinType") }), field: e0("joinType"), typ: field.ErrorTypeRequired},
		{name: "enrich joinType known", base: mysqlDoc, change: enrich(func(e doc) { e["joinType"] = "right" }), field: e0("joinType"), typ: field.ErrorTypeNotSupported},
		{name: "enrich onColdStart", base: mysqlDoc, change: enrich(func(e doc) { e["onColdStart"] = "wait" }), field: e0("onColdStart"), typ: field.ErrorTypeNotSupported},
		{name: "enrich refresh", base: mysqlDoc, change: enrich(func(e doc) { e["refresh"] = "daily" }), field: e0("refresh"), typ: field.ErrorTypeInvalid},
		{name: "enrich maxEvents", base: mysqlDoc, change: enrich(func(e doc) { e["bufferLimits"] = doc{"maxEvents": -1} }), field: e0("bufferLimits", "maxEvents"), typ: field.ErrorTypeInvalid},
		{name: "enrich maxWait", base: mysqlDoc, change: enrich(func(e doc) { e["bufferLimits"] = doc{"maxWait": "soon"} }), field: e0("bufferLimits", "maxWait"), typ: field.ErrorTypeInvalid},
		// urutau validate.go @0b3b110: positiveDuration (#503).
		{name: "enrich refresh zero (#503)", base: mysqlDoc, change: enrich(func(e doc) { e["refresh"] = "0s" }), field: e0("refresh"), typ: field.ErrorTypeInvalid, detail: "positive duration"},
		{name: "enrich refresh negative (#503)", base: mysqlDoc, change: enrich(func(e doc) { e["refresh"] = "-5m" }), field: e0("refresh"), typ: field.ErrorTypeInvalid, detail: "positive duration"},
		{name: "enrich maxWait zero (#503)", base: mysqlDoc, change: enrich(func(e doc) { e["bufferLimits"] = doc{"maxWait": "0s"} }), field: e0("bufferLimits", "maxWait"), typ: field.ErrorTypeInvalid, detail: "positive duration"},
		{name: "enrich maxWait negative (#503)", base: mysqlDoc, change: enrich(func(e doc) { e["bufferLimits"] = doc{"maxWait": "-5m"} }), field: e0("bufferLimits", "maxWait"), typ: field.ErrorTypeInvalid, detail: "positive duration"},
		{name: "enrich maxRows negative", base: mysqlDoc, change: enrich(func(e doc) { e["maxRows"] = -1 }), field: e0("maxRows"), typ: field.ErrorTypeInvalid},
		{name: "enrich maxRows int32", base: mysqlDoc, change: enrich(func(e doc) { e["maxRows"] = math.MaxInt32 + 1 }), field: e0("maxRows"), typ: field.ErrorTypeInvalid},
		{name: "enrich select with semi join", base: mysqlDoc, change: enrich(func(e doc) { e["joinType"] = "left semi" }), field: e0("select"), typ: field.ErrorTypeForbidden},
		{name: "enrich select required", base: mysqlDoc, change: enrich(func(e doc) { delete(e, "select") }), field: e0("select"), typ: field.ErrorTypeRequired},
		{name: "enrich star alone", base: mysqlDoc, change: enrich(func(e doc) { e["select"] = []any{"name", "*"} }), field: "tables[0].enrich[0].select[1]", typ: field.ErrorTypeInvalid},
		{name: "enrich select name", base: mysqlDoc, change: enrich(func(e doc) { e["select"] = []any{"name", ""} }), field: "tables[0].enrich[0].select[1]", typ: field.ErrorTypeInvalid},
		{name: "enrich select unique", base: mysqlDoc, change: enrich(func(e doc) { e["select"] = []any{"name", "name"} }), field: "tables[0].enrich[0].select[1]", typ: field.ErrorTypeDuplicate},
		{name: "enrich as prefixed", base: mysqlDoc, change: enrich(func(e doc) { e["as"] = doc{"name": "customer_name"} }), field: "tables[0].enrich[0].as[name]", typ: field.ErrorTypeInvalid},
		{name: "enrich as selected", base: mysqlDoc, change: enrich(func(e doc) { e["as"] = doc{"customers.tier": "tier"} }), field: "tables[0].enrich[0].as[customers.tier]", typ: field.ErrorTypeInvalid},
		{name: "enrich as collision", base: mysqlDoc, change: enrich(func(e doc) { e["select"] = []any{"*"}; e["as"] = doc{"customers.a": "x", "customers.b": "x"} }), field: "tables[0].enrich[0].as[customers.b]", typ: field.ErrorTypeInvalid},
	}
}

func fs(f ...func(doc)) []func(doc) { return f }

// TestValidateRules: every rule of urutau's Validate (and of its registry) has a case here that
// breaks it alone, and Parse reports exactly that one error, under its field path.
func TestValidateRules(t *testing.T) {
	var all []ruleCase
	for _, group := range [][]ruleCase{sourceCases(), sinkCases(), tableCases(), columnCases(), filterCases(), enrichCases()} {
		all = append(all, group...)
	}
	for _, tc := range all {
		t.Run(tc.name, func(t *testing.T) {
			// The base is valid: the change alone must make it invalid.
			mustParse(t, build(tc.base))
			raw := build(tc.base, tc.change...)
			in, errs := Parse(raw)
			if in != nil {
				t.Fatalf("Parse(%s) accepted it", raw)
			}
			if len(errs) != 1 {
				t.Fatalf("Parse(%s) = %v, want exactly one error", raw, errs)
			}
			want := InlinePath.String() + "." + tc.field
			if e := errs[0]; e.Field != want || e.Type != tc.typ {
				t.Errorf("error = %s %q, want %s %q (%v)", e.Type, e.Field, tc.typ, want, e)
			}
			if !strings.Contains(errs[0].Error(), tc.detail) {
				t.Errorf("error %q does not contain %q", errs[0].Error(), tc.detail)
			}
		})
	}
}

// TestNewestRulesAccept: what urutau's newest rules accept, Parse accepts.
func TestNewestRulesAccept(t *testing.T) {
	long := strings.Repeat("t", 50)
	for name, raw := range map[string][]byte{
		"deleteMode equality on couchbase":   build(mysqlDoc, set("sink.type", "couchbase"), set("sink.deleteMode", "equality")),
		"deleteMode positional on iceberg":   build(mysqlDoc, del("sink.type"), set("sink.deleteMode", "positional")),
		"replicaIdentity full":               build(postgresBlockDoc, set("source.postgres.replicaIdentity", "full")),
		"replicaIdentity keep":               build(postgresBlockDoc, set("source.postgres.replicaIdentity", "keep")),
		"orphanCleanup olderThan 1h":         build(mysqlDoc, set("sink.maintenance", doc{"orphanCleanup": doc{"olderThan": "1h", "interval": "30s"}})),
		"positive durations":                 build(mysqlDoc, set("sink.maintenance", doc{"compaction": doc{"interval": "1ns"}, "snapshotExpiry": doc{"interval": "1s", "maxAge": "1m"}})),
		"schemaRegistryAuth with basic auth": build(kafkaDoc, set("source.schemaRegistryAuth", doc{"username": "u", "password": "p", "insecureSkipVerify": true})),
		"createIfNotExists false":            build(mysqlDoc, set(table0("createIfNotExists"), false)),
		"two long targets, 43 characters alike": build(mysqlDoc, set("tables", []any{
			doc{"source": "a", "target": "raw." + long + "_2024", "primaryKey": []any{"id"}},
			doc{"source": "b", "target": "raw." + long + "_2025", "primaryKey": []any{"id"}},
		})),
	} {
		t.Run(name, func(t *testing.T) { mustParse(t, raw) })
	}
}

// TestValidateReportsAllErrors: one pass reports every problem, so a user fixes them all at once.
func TestValidateReportsAllErrors(t *testing.T) {
	_, errs := Parse([]byte(`{"source":{"kind":"oracle"},"sink":{"type":"bigquery"},"tables":[{}]}`))
	var got []string
	for _, e := range errs {
		got = append(got, strings.TrimPrefix(e.Field, InlinePath.String()+"."))
	}
	want := []string{"pipeline", "sink.namespace", "tables[0].source", "tables[0].target", "tables[0].primaryKey", "source.kind", "sink.type"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fields = %v, want %v", got, want)
	}
}
