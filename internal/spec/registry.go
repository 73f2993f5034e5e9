package spec

// The names the coordinator's driver registry resolves: the builtins urutau registers
// (internal/builtin/builtin_test.go lists them) and its default sink (driver/registry.go).
const (
	KindKafka    = "kafka"
	KindMySQL    = "mysql"
	KindPostgres = "postgres"

	SinkClickHouse  = "clickhouse"
	SinkCouchbase   = "couchbase"
	SinkIcebergREST = "iceberg+rest"

	// DefaultSinkType is what an empty sink.type means.
	DefaultSinkType = SinkIcebergREST
)

// SourceKinds are the registered source kinds, sorted.
var SourceKinds = []string{KindKafka, KindMySQL, KindPostgres}

// SinkTypes are the registered sink types, sorted.
var SinkTypes = []string{SinkClickHouse, SinkCouchbase, SinkIcebergREST}

// DefaultWorkerTemplateTarget keys the generic worker pod template rendered for a discovery
// pipeline, which lists no tables (#152). The coordinator clones it for every table it finds.
const DefaultWorkerTemplateTarget = "_default"
