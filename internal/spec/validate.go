package spec

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validate applies the coordinator's own rules (urutau spec/validate.go @0b3b110, with
// spec/duration.go @25985fb, spec/validate_kafka.go @625e329, spec/validate_truncate.go @d3f0a1d
// and spec/validate_evolve.go @909f871) as urutau's admission webhook runs them: without the
// credential rules, so source.uri and sink.uri may be empty. It sets an empty sink.type to
// DefaultSinkType first, as urutau's Validate does.
func (in *Inline) validate() field.ErrorList {
	var errs field.ErrorList
	if in.Pipeline == "" {
		errs = append(errs, field.Required(InlinePath.Child("pipeline"), "the pipeline name prefixes every worker the coordinator creates"))
	}
	if in.Sink.Type == "" {
		in.Sink.Type = DefaultSinkType
	}
	errs = append(errs, validateSource(&in.Source, InlinePath.Child("source"))...)
	errs = append(errs, validateSink(&in.Sink, InlinePath.Child("sink"))...)
	errs = append(errs, in.validateTables()...)
	return errs
}

// checkRegistry checks the names the coordinator resolves through its driver registry (urutau
// driver/registry.go; the builtins are listed in internal/builtin/builtin_test.go).
func (in *Inline) checkRegistry() field.ErrorList {
	var errs field.ErrorList
	if k := in.Source.Kind; k != "" && !isOneOf(k, SourceKinds...) {
		errs = append(errs, field.NotSupported(InlinePath.Child("source", "kind"), k, SourceKinds))
	}
	if t := in.Sink.Type; !isOneOf(t, SinkTypes...) {
		errs = append(errs, field.NotSupported(InlinePath.Child("sink", "type"), t, SinkTypes))
	}
	return errs
}

func validateSource(s *Source, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), "one of: "+strings.Join(SourceKinds, ", ")))
	}
	if s.Kind == KindKafka && s.SnapshotMode != "" && s.SnapshotMode != "none" {
		errs = append(errs, field.Invalid(p.Child("snapshotMode"), s.SnapshotMode, `must be "none" for kafka`))
	}
	if s.Kind == KindPostgres && s.SlotName == "" {
		errs = append(errs, field.Required(p.Child("slotName"), "required for postgres: the logical replication slot the coordinator reads"))
	}
	if s.ServerID != "" {
		if _, err := strconv.ParseUint(s.ServerID, 10, 32); err != nil {
			errs = append(errs, field.Invalid(p.Child("serverId"), s.ServerID, "is not a valid uint32 (the MySQL replication server id, written as a string)"))
		}
	}
	if s.MaxReconnectAttempts < 0 {
		errs = append(errs, field.Invalid(p.Child("maxReconnectAttempts"), s.MaxReconnectAttempts, "must be non-negative"))
	}
	errs = append(errs, validateKafkaSource(s, p)...)
	errs = append(errs, validateOnTruncate(s, p)...)
	if s.Postgres != nil {
		if s.Kind != KindPostgres {
			errs = append(errs, field.Forbidden(p.Child("postgres"), "only valid for kind postgres"))
		}
		if s.URI != "" {
			errs = append(errs, field.Forbidden(p.Child("uri"), "source.uri and source.postgres are mutually exclusive: use one or the other"))
		}
		errs = append(errs, validatePostgresSource(s.Postgres, p.Child("postgres"))...)
	}
	return errs
}

// validateKafkaSource checks the decoder format, the decode-error policy and the TLS/SASL block.
func validateKafkaSource(s *Source, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !isOneOf(s.Format, "", "debezium", "raw", "avro") {
		errs = append(errs, field.NotSupported(p.Child("format"), s.Format, []string{"debezium", "raw", "avro"}))
	}
	if (s.Format == "raw" || s.Format == "avro") && s.Kind != KindKafka {
		errs = append(errs, field.Invalid(p.Child("format"), s.Format, s.Format+" is only valid for kind kafka"))
	}
	if s.Format == "avro" && s.SchemaRegistry == "" {
		errs = append(errs, field.Required(p.Child("schemaRegistry"), "required when format is avro (Confluent-compatible registry base URL)"))
	}
	if !isOneOf(s.OnDecodeError, "", "fail", "skip") {
		errs = append(errs, field.NotSupported(p.Child("onDecodeError"), s.OnDecodeError, []string{"fail", "skip"}))
	}
	if s.OnDecodeError != "" && s.Kind != KindKafka {
		errs = append(errs, field.Forbidden(p.Child("onDecodeError"), "only valid for kind kafka"))
	}
	errs = append(errs, validateSchemaRegistryAuth(s.SchemaRegistryAuth, p.Child("schemaRegistryAuth"))...)
	k := s.Kafka
	if k == nil {
		return errs
	}
	kp := p.Child("kafka")
	if s.Kind != KindKafka {
		errs = append(errs, field.Forbidden(kp, "only valid for kind kafka"))
	}
	if t := k.TLS; t != nil && (t.Cert == "") != (t.Key == "") {
		errs = append(errs, field.Invalid(kp.Child("tls"), "<object>", "cert and key must be set together (client authentication needs both)"))
	}
	if sa := k.SASL; sa != nil {
		if !isOneOf(sa.Mechanism, "", "plain", "scram-sha-256", "scram-sha-512") {
			errs = append(errs, field.NotSupported(kp.Child("sasl", "mechanism"), sa.Mechanism, []string{"plain", "scram-sha-256", "scram-sha-512"}))
		}
		if sa.Username == "" || sa.Password == "" {
			errs = append(errs, field.Required(kp.Child("sasl"), "username and password are required"))
		}
	}
	return errs
}

// validateSchemaRegistryAuth: basic auth needs both username and password, a client certificate
// both cert and key.
func validateSchemaRegistryAuth(a *SchemaRegistryAuth, p *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if a.Username == "" || a.Password == "" {
		errs = append(errs, field.Required(p, "username and password are required (the registry's basic auth)"))
	}
	if (a.Cert == "") != (a.Key == "") {
		errs = append(errs, field.Invalid(p, "<object>", "cert and key must be set together"))
	}
	return errs
}

// validateOnTruncate checks the destructive-statement policy of the relational sources.
func validateOnTruncate(s *Source, p *field.Path) field.ErrorList {
	if s.OnTruncate == "" {
		return nil
	}
	tp := p.Child("onTruncate")
	if s.Kind != KindPostgres && s.Kind != KindMySQL {
		return field.ErrorList{field.Forbidden(tp, fmt.Sprintf("only valid for kind postgres or mysql, not %q", s.Kind))}
	}
	if !isOneOf(s.OnTruncate, "ignore", "fail") {
		e := field.NotSupported(tp, s.OnTruncate, []string{"ignore", "fail"})
		e.Detail += " (propagate is not implemented)"
		return field.ErrorList{e}
	}
	return nil
}

func validatePostgresSource(pg *PostgresSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case pg.Host == "":
		errs = append(errs, field.Required(p.Child("host"), ""))
	case strings.Contains(pg.Host, "://") || strings.ContainsAny(pg.Host, "/ \t"):
		errs = append(errs, field.Invalid(p.Child("host"), pg.Host, "must be a bare hostname or IP (no scheme, path, or whitespace)"))
	}
	if pg.Database == "" {
		errs = append(errs, field.Required(p.Child("database"), ""))
	}
	errs = append(errs, portRange(p.Child("port"), pg.Port)...)
	if pg.MaxThreads != 0 && (pg.MaxThreads < 1 || pg.MaxThreads > 32) {
		errs = append(errs, field.Invalid(p.Child("maxThreads"), pg.MaxThreads, "must be 1..32"))
	}
	if pg.RetryCount < 0 {
		errs = append(errs, field.Invalid(p.Child("retryCount"), pg.RetryCount, "must be non-negative"))
	}
	if c := pg.CDC; c != nil {
		if !isOneOf(c.Plugin, "", "pgoutput", "wal2json") {
			errs = append(errs, field.NotSupported(p.Child("cdc", "plugin"), c.Plugin, []string{"pgoutput", "wal2json"}))
		}
		if c.InitialWaitTime != 0 && c.InitialWaitTime < 30 {
			errs = append(errs, field.Invalid(p.Child("cdc", "initialWaitTime"), c.InitialWaitTime, "must be at least 30 seconds"))
		}
	}
	if !isOneOf(pg.ReplicaIdentity, "", "full", "keep") {
		errs = append(errs, field.NotSupported(p.Child("replicaIdentity"), pg.ReplicaIdentity, []string{"full", "keep"}))
	}
	if ssl := pg.SSL; ssl != nil {
		errs = append(errs, validateSSL(ssl, p.Child("ssl"))...)
	}
	if ssh := pg.SSH; ssh != nil {
		sp := p.Child("ssh")
		if ssh.Host == "" {
			errs = append(errs, field.Required(sp.Child("host"), ""))
		}
		errs = append(errs, portRange(sp.Child("port"), ssh.Port)...)
		if ssh.Username == "" {
			errs = append(errs, field.Required(sp.Child("username"), ""))
		}
		if ssh.Password == "" && ssh.PrivateKey == "" {
			errs = append(errs, field.Required(sp, "password or privateKey required (privateKey: /etc/urutau/ssh/privateKey, where spec.secrets.ssh is mounted)"))
		}
	}
	return errs
}

func validateSSL(ssl *SSLConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !isOneOf(ssl.Mode, "", "disable", "require", "verify-ca", "verify-full") {
		errs = append(errs, field.NotSupported(p.Child("mode"), ssl.Mode, []string{"disable", "require", "verify-ca", "verify-full"}))
	}
	if (ssl.Mode == "verify-ca" || ssl.Mode == "verify-full") && ssl.CA == "" {
		errs = append(errs, field.Required(p.Child("ca"), fmt.Sprintf("required when mode is %q", ssl.Mode)))
	}
	if (ssl.Cert == "") != (ssl.Key == "") {
		errs = append(errs, field.Invalid(p, "<object>", "cert and key must be set together"))
	}
	return errs
}

func portRange(p *field.Path, port int) field.ErrorList {
	if port != 0 && (port < 1 || port > 65535) {
		return field.ErrorList{field.Invalid(p, port, "must be 1..65535")}
	}
	return nil
}

func validateSink(s *Sink, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.Namespace == "":
		errs = append(errs, field.Required(p.Child("namespace"), "the namespace (database) the tables are written to"))
	case s.Type == SinkIcebergREST && hasEmptyPathComponent(s.Namespace):
		// Iceberg reads every dot as a level; other sinks take the namespace as one identifier.
		errs = append(errs, field.Invalid(p.Child("namespace"), s.Namespace, "has an empty path component (a namespace level cannot be blank)"))
	}
	if !isOneOf(s.CommitMode, "", "fast", "atomic") {
		errs = append(errs, field.NotSupported(p.Child("commitMode"), s.CommitMode, []string{"fast", "atomic"}))
	}
	if s.CommitMode != "" && s.Type != SinkCouchbase {
		errs = append(errs, field.Forbidden(p.Child("commitMode"), fmt.Sprintf("only the couchbase sink uses commitMode, not sink.type %q", s.Type)))
	}
	if v := s.Defaults.TargetFileSize; v != "" {
		if err := checkBytes(v); err != nil {
			errs = append(errs, field.Invalid(p.Child("defaults", "targetFileSize"), v, err.Error()))
		}
	}
	if s.EvolveSchema && !isIcebergFamily(s.Type) {
		errs = append(errs, field.Forbidden(p.Child("evolveSchema"), fmt.Sprintf("only the Iceberg sink evolves the target schema, not sink.type %q", s.Type)))
	}
	errs = append(errs, validateDeleteMode(s.DeleteMode, s.Type, p.Child("deleteMode"))...)
	return append(errs, validateMaintenance(s.Maintenance, s.Type, p.Child("maintenance"))...)
}

// validateDeleteMode: equality (the default) or positional, and positional deletes (deletion
// vectors) only on the Iceberg sink.
func validateDeleteMode(mode, sinkType string, p *field.Path) field.ErrorList {
	switch mode {
	case "", "equality":
		return nil
	case "positional":
		if !isIcebergFamily(sinkType) {
			return field.ErrorList{field.Forbidden(p, fmt.Sprintf("only the Iceberg sink writes positional deletes, not sink.type %q", sinkType))}
		}
		return nil
	}
	return field.ErrorList{field.NotSupported(p, mode, []string{"equality", "positional"})}
}

func validateMaintenance(m *Maintenance, sinkType string, p *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	if !isIcebergFamily(sinkType) {
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("only the Iceberg sink supports table maintenance, not sink.type %q", sinkType))}
	}
	var errs field.ErrorList
	if c := m.Compaction; c != nil {
		errs = append(errs, positiveDuration(p.Child("compaction", "interval"), c.Interval, "5m")...)
		if v := c.TargetFileSize; v != "" {
			if err := checkBytes(v); err != nil {
				errs = append(errs, field.Invalid(p.Child("compaction", "targetFileSize"), v, err.Error()))
			}
		}
	}
	if e := m.SnapshotExpiry; e != nil {
		errs = append(errs, positiveDuration(p.Child("snapshotExpiry", "interval"), e.Interval, "10m")...)
		errs = append(errs, positiveDuration(p.Child("snapshotExpiry", "maxAge"), e.MaxAge, "168h")...)
		if e.RetainLast < 0 {
			errs = append(errs, field.Invalid(p.Child("snapshotExpiry", "retainLast"), e.RetainLast, "must be positive"))
		}
	}
	if o := m.OrphanCleanup; o != nil {
		errs = append(errs, positiveDuration(p.Child("orphanCleanup", "interval"), o.Interval, "1h")...)
		errs = append(errs, orphanWindow(p.Child("orphanCleanup", "olderThan"), o.OlderThan)...)
	}
	return errs
}

// MinOrphanCleanupOlderThan is the shortest orphan-cleanup window urutau accepts: a data file no
// snapshot references yet may be a worker's staged file waiting for the coordinator's commit.
const MinOrphanCleanupOlderThan = time.Hour

// orphanWindow checks orphanCleanup.olderThan: a duration of at least MinOrphanCleanupOlderThan.
func orphanWindow(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return field.ErrorList{field.Invalid(p, v, "is not a duration (e.g. 72h)")}
	}
	if d < MinOrphanCleanupOlderThan {
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("is below the %s minimum: files a commit has not referenced yet (a worker's staged files waiting for the coordinator's commit) would be taken for orphans and deleted", MinOrphanCleanupOlderThan))}
	}
	return nil
}

// positiveDuration checks an optional Go duration that must be above zero: the coordinator
// replaces a zero or negative one by its default, so it would look configured and do nothing
// (#503).
func positiveDuration(p *field.Path, v, example string) field.ErrorList {
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(p, v, "is not a duration (e.g. "+example+")")}
	case d <= 0:
		return field.ErrorList{field.Invalid(p, v, "must be a positive duration (e.g. "+example+"): zero or negative would silently mean the default")}
	}
	return nil
}

// isIcebergFamily: maintenance and schema evolution are Iceberg features ("iceberg" or
// "iceberg+<catalog>").
func isIcebergFamily(sinkType string) bool {
	return sinkType == "iceberg" || strings.HasPrefix(sinkType, "iceberg+")
}

func isOneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}
