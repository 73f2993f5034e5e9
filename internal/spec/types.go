package spec

// The typed view of spec.definition.inline. Every type, field name, JSON name and Go kind mirrors
// urutau's spec package (repository maltzsama/urutau), because the coordinator decodes
// pipeline.yaml into exactly these shapes with unknown fields disallowed: a string where it wants a
// number, or a key it does not know, stops it at boot. The revisions followed, file by file, are
// listed in doc.go and testdata/urutau/provenance.yaml:
//
//   - spec/spec.go @0b3b110: every field below unless noted otherwise. That revision has no
//     source.bootstrapServers and no source.groupId any more: the Kafka source reads its brokers
//     from source.uri and assigns partitions itself, joining no consumer group;
//   - spec/kafka.go @625e329: KafkaSource, KafkaTLS, KafkaSASL (#598) and SchemaRegistryAuth;
//   - spec/filter.go, spec/columndecl.go and core/meta.go: Filter, ColumnDecl, MetadataColumn.

// Inline is the pipeline definition: urutau's spec.Spec.
type Inline struct {
	Pipeline string  `json:"pipeline"`
	Source   Source  `json:"source"`
	Sink     Sink    `json:"sink"`
	Tables   []Table `json:"tables"`
}

// Source is where the pipeline reads.
type Source struct {
	Kind string `json:"kind"`
	// URI is a credential: left empty inline, filled from the source Secret at coordinator boot.
	URI         string `json:"uri"`
	SnapshotURI string `json:"snapshotUri,omitempty"`
	// ServerID is the MySQL replication server_id, a string holding a uint32. Empty means the
	// coordinator's --server-id default, 1101 (spec/load.go).
	ServerID string `json:"serverId,omitempty"`
	// SlotName is the Postgres logical replication slot, required for postgres.
	SlotName             string `json:"slotName,omitempty"`
	SnapshotMode         string `json:"snapshotMode,omitempty"`
	MaxReconnectAttempts int    `json:"maxReconnectAttempts,omitempty"`
	// PartitionedByPrimaryKey asserts the Kafka topics are partitioned by the key; required for an
	// upsert from kafka.
	PartitionedByPrimaryKey bool   `json:"partitionedByPrimaryKey,omitempty"`
	Format                  string `json:"format,omitempty"`
	SchemaRegistry          string `json:"schemaRegistry,omitempty"`
	// SchemaRegistryAuth authenticates to the schema registry: basic auth, and PEM files under the
	// schema-registry-tls mount.
	SchemaRegistryAuth *SchemaRegistryAuth `json:"schemaRegistryAuth,omitempty"`
	// OnDecodeError is the kafka decode-error policy: fail or skip.
	OnDecodeError string `json:"onDecodeError,omitempty"`
	// OnTruncate is the destructive-statement policy of postgres and mysql: ignore or fail.
	OnTruncate string          `json:"onTruncate,omitempty"`
	Postgres   *PostgresSource `json:"postgres,omitempty"`
	Kafka      *KafkaSource    `json:"kafka,omitempty"`
}

// PostgresSource builds the Postgres connection from fields instead of source.uri.
type PostgresSource struct {
	Host       string            `json:"host,omitempty"`
	Port       int               `json:"port,omitempty"`
	Database   string            `json:"database,omitempty"`
	Username   string            `json:"username,omitempty"`
	Password   string            `json:"password,omitempty"`
	Params     map[string]string `json:"params,omitempty"`
	SSL        *SSLConfig        `json:"ssl,omitempty"`
	SSH        *SSHConfig        `json:"ssh,omitempty"`
	MaxThreads int               `json:"maxThreads,omitempty"`
	RetryCount int               `json:"retryCount,omitempty"`
	// Schemas limits discovery to these schemas; ignored (with a warning) without Discover.
	Schemas []string `json:"schemas,omitempty"`
	// Discover replaces the tables list with every table the user may read (#152).
	Discover bool       `json:"discover,omitempty"`
	CDC      *CDCConfig `json:"cdc,omitempty"`
	// ReplicaIdentity is what the coordinator does to the tables' REPLICA IDENTITY: full (the
	// default: set FULL where it is not) or keep (#571).
	ReplicaIdentity string `json:"replicaIdentity,omitempty"`
}

// CDCConfig holds the logical-decoding knobs.
type CDCConfig struct {
	Plugin          string `json:"plugin,omitempty"`
	InitialWaitTime int    `json:"initialWaitTime,omitempty"`
}

// SSLConfig is the TLS of the Postgres connection; CA, Cert and Key are file paths.
type SSLConfig struct {
	Mode string `json:"mode,omitempty"`
	CA   string `json:"ca,omitempty"`
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
}

// SSHConfig is the SSH tunnel to Postgres. PrivateKey is a file path: the ssh Secret is mounted at
// /etc/urutau/ssh, so it is /etc/urutau/ssh/privateKey.
type SSHConfig struct {
	Host       string `json:"host,omitempty"`
	Port       int    `json:"port,omitempty"`
	Username   string `json:"username,omitempty"`
	Password   string `json:"password,omitempty"`
	PrivateKey string `json:"privateKey,omitempty"`
	Passphrase string `json:"passphrase,omitempty"`
	KnownHosts string `json:"knownHosts,omitempty"`
}

// KafkaSource is the transport security of a kafka source (#598).
type KafkaSource struct {
	TLS  *KafkaTLS  `json:"tls,omitempty"`
	SASL *KafkaSASL `json:"sasl,omitempty"`
}

// KafkaTLS names PEM files under the kafka-tls mount.
type KafkaTLS struct {
	CA                 string `json:"ca,omitempty"`
	Cert               string `json:"cert,omitempty"`
	Key                string `json:"key,omitempty"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
}

// KafkaSASL authenticates to the brokers.
type KafkaSASL struct {
	Mechanism string `json:"mechanism,omitempty"`
	Username  string `json:"username,omitempty"`
	Password  string `json:"password,omitempty"`
}

// SchemaRegistryAuth is the schema registry client's basic auth and TLS; CA, Cert and Key name
// PEM files under the schema-registry-tls mount.
type SchemaRegistryAuth struct {
	Username           string `json:"username,omitempty"`
	Password           string `json:"password,omitempty"`
	CA                 string `json:"ca,omitempty"`
	Cert               string `json:"cert,omitempty"`
	Key                string `json:"key,omitempty"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
}

// Sink is where the pipeline writes.
type Sink struct {
	// Type is a registered sink type; Parse sets an empty one to DefaultSinkType, as urutau's
	// Validate does.
	Type string `json:"type,omitempty"`
	// URI, ClientID, ClientSecret and Scope are credentials, filled from the catalog Secret.
	URI          string   `json:"uri"`
	Namespace    string   `json:"namespace"`
	Warehouse    string   `json:"warehouse,omitempty"`
	ClientID     string   `json:"clientId,omitempty"`
	ClientSecret string   `json:"clientSecret,omitempty"`
	Scope        string   `json:"scope,omitempty"`
	Defaults     Defaults `json:"defaults"`
	// CommitMode is couchbase-only: fast or atomic.
	CommitMode string `json:"commitMode,omitempty"`
	// EvolveSchema and Maintenance are iceberg-only.
	EvolveSchema bool `json:"evolveSchema,omitempty"`
	// DeleteMode is how an Iceberg upsert removes a row's old version: equality (the default) or
	// positional, which only the Iceberg sink writes.
	DeleteMode  string       `json:"deleteMode,omitempty"`
	Maintenance *Maintenance `json:"maintenance,omitempty"`
}

// MaintenanceEnabled reports whether background table maintenance is on: a maintenance block with
// enabled true.
func (s Sink) MaintenanceEnabled() bool {
	return s.Maintenance != nil && s.Maintenance.Enabled
}

// Defaults apply to every table that does not say otherwise.
type Defaults struct {
	WriteMode      string `json:"writeMode,omitempty"`
	TargetFileSize string `json:"targetFileSize,omitempty"`
}

// Maintenance configures Iceberg compaction, snapshot expiry and orphan cleanup.
type Maintenance struct {
	Enabled        bool                  `json:"enabled,omitempty"`
	Compaction     *CompactionConfig     `json:"compaction,omitempty"`
	SnapshotExpiry *SnapshotExpiryConfig `json:"snapshotExpiry,omitempty"`
	OrphanCleanup  *OrphanCleanupConfig  `json:"orphanCleanup,omitempty"`
}

// CompactionConfig tunes small-file compaction.
type CompactionConfig struct {
	Interval       string `json:"interval,omitempty"`
	TargetFileSize string `json:"targetFileSize,omitempty"`
	MinInputFiles  uint   `json:"minInputFiles,omitempty"`
}

// SnapshotExpiryConfig tunes snapshot expiry.
type SnapshotExpiryConfig struct {
	Interval   string `json:"interval,omitempty"`
	RetainLast int    `json:"retainLast,omitempty"`
	MaxAge     string `json:"maxAge,omitempty"`
}

// OrphanCleanupConfig tunes unreferenced-file removal.
type OrphanCleanupConfig struct {
	Interval  string `json:"interval,omitempty"`
	OlderThan string `json:"olderThan,omitempty"`
}

// Table is one replicated table.
type Table struct {
	Source      string   `json:"source"`
	Target      string   `json:"target"`
	PrimaryKey  []string `json:"primaryKey,omitempty"`
	PartitionBy []string `json:"partitionBy,omitempty"`
	Filter      *Filter  `json:"filter,omitempty"`
	WriteMode   string   `json:"writeMode,omitempty"`
	OnDelete    string   `json:"onDelete,omitempty"`
	// Identity names the transport metadata columns of an append-idempotent table.
	Identity []string `json:"identity,omitempty"`
	Workers  *Workers `json:"workers,omitempty"`
	// CreateIfNotExists unset means true: the coordinator creates a missing target table.
	CreateIfNotExists *bool                 `json:"createIfNotExists,omitempty"`
	FilterImmutable   bool                  `json:"filterImmutable,omitempty"`
	Metadata          []MetadataColumn      `json:"metadata,omitempty"`
	Cast              map[string]string     `json:"cast,omitempty"`
	Columns           map[string]ColumnDecl `json:"columns,omitempty"`
	ColumnFilter      []string              `json:"columnFilter,omitempty"`
	ChunkColumn       string                `json:"chunkColumn,omitempty"`
	Mode              string                `json:"mode,omitempty"`
	Cursor            string                `json:"cursor,omitempty"`
	Bootstrap         *Bootstrap            `json:"bootstrap,omitempty"`
	Enrich            []Enrich              `json:"enrich,omitempty"`
}

// Workers sizes a table's worker group (urutau's WorkerSpec).
type Workers struct {
	Number int `json:"number,omitempty"`
	// Max is the partition cap (#312); > 0 turns KEDA autoscaling on for the table.
	Max    int    `json:"max,omitempty"`
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
}

// WorkerCount is the number of workers a table starts with: workers.number, at least 1.
func (t Table) WorkerCount() int {
	if t.Workers == nil || t.Workers.Number < 1 {
		return 1
	}
	return t.Workers.Number
}

// MaxWorkers is workers.max, 0 when unset.
func (t Table) MaxWorkers() int {
	if t.Workers == nil {
		return 0
	}
	return t.Workers.Max
}

// MetadataColumn lands one pipeline metadata value in a column named As.
type MetadataColumn struct {
	From MetadataKey `json:"from"`
	As   string      `json:"as"`
}

// Bootstrap says how the initial load is done.
type Bootstrap struct {
	Mode     string `json:"mode,omitempty"`
	StartAt  string `json:"startAt,omitempty"`
	Position string `json:"position,omitempty"`
}

// Enrich is one broadcast reference join.
type Enrich struct {
	Table        string             `json:"table"`
	Source       EnrichSource       `json:"source"`
	On           map[string]string  `json:"on"`
	Select       []string           `json:"select,omitempty"`
	As           map[string]string  `json:"as,omitempty"`
	JoinType     string             `json:"joinType"`
	Refresh      string             `json:"refresh,omitempty"`
	OnColdStart  string             `json:"onColdStart,omitempty"`
	BufferLimits EnrichBufferLimits `json:"bufferLimits,omitempty"`
	MaxRows      int                `json:"maxRows,omitempty"`
}

// EnrichSource is where a reference table is read from.
type EnrichSource struct {
	URI   string `json:"uri"`
	Query string `json:"query"`
}

// EnrichBufferLimits bound the cold-start buffer.
type EnrichBufferLimits struct {
	MaxEvents int    `json:"maxEvents,omitempty"`
	MaxWait   string `json:"maxWait,omitempty"`
}

// Tunnels reports whether the source is a Postgres reached through an SSH tunnel.
func (s Source) Tunnels() bool {
	return s.Kind == KindPostgres && s.Postgres != nil && s.Postgres.SSH != nil
}

// Discovers reports whether the source is a Postgres that lists its tables at boot (#152).
func (s Source) Discovers() bool {
	return s.Postgres != nil && s.Postgres.Discover
}
