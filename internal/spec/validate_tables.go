package spec

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Write modes, table sync modes and append-only delete policies (urutau spec/spec.go).
const (
	WriteModeUpsert           = "upsert"
	WriteModeAppend           = "append"
	WriteModeAppendIdempotent = "append-idempotent"
)

var writeModes = []string{WriteModeUpsert, WriteModeAppend, WriteModeAppendIdempotent}

// EffectiveWriteMode is the table's writeMode, else sink.defaults.writeMode, else upsert.
func (in *Inline) EffectiveWriteMode(t Table) string {
	switch {
	case t.WriteMode != "":
		return t.WriteMode
	case in.Sink.Defaults.WriteMode != "":
		return in.Sink.Defaults.WriteMode
	}
	return WriteModeUpsert
}

func (in *Inline) validateTables() field.ErrorList {
	var errs field.ErrorList
	tp := InlinePath.Child("tables")
	// A discovery pipeline declares no tables: the source lists them at boot.
	discover := in.Source.Discovers()
	switch {
	case len(in.Tables) == 0 && !discover:
		errs = append(errs, field.Required(tp, "at least one table (or a postgres source with discover: true)"))
	case discover && len(in.Tables) > 0:
		errs = append(errs, field.Forbidden(InlinePath.Child("source", "postgres", "discover"), "cannot be combined with an explicit tables list"))
	}
	if m := in.Sink.Defaults.WriteMode; m != "" && !isOneOf(m, writeModes...) && slices.ContainsFunc(in.Tables, func(t Table) bool { return t.WriteMode == "" }) {
		errs = append(errs, field.NotSupported(InlinePath.Child("sink", "defaults", "writeMode"), m, writeModes))
	}
	seen := tableNames{source: map[string]int{}, target: map[string]int{}, group: map[string]int{}}
	for i, t := range in.Tables {
		p := tp.Index(i)
		errs = append(errs, in.validateTableNames(t, p, i, seen)...)
		errs = append(errs, validateWorkers(t, p.Child("workers"))...)
		errs = append(errs, validateSyncMode(t, p)...)
		errs = append(errs, in.validateWriteMode(t, p)...)
		errs = append(errs, validateFilter(t.Filter, p.Child("filter"))...)
		errs = append(errs, validateColumnFilter(t, p)...)
		errs = append(errs, validateMetadata(t, p)...)
		errs = append(errs, validateCast(t, p.Child("cast"))...)
		errs = append(errs, validateColumns(t, in.Source, p.Child("columns"))...)
		errs = append(errs, validatePartitionBy(t, p.Child("partitionBy"))...)
		errs = append(errs, validateBootstrap(t.Bootstrap, p.Child("bootstrap"))...)
		errs = append(errs, validateEnrich(t.Enrich, p.Child("enrich"))...)
	}
	return errs
}

// tableNames are the names seen so far, each with the index of the table that has it.
type tableNames struct {
	source, target, group map[string]int
}

func (in *Inline) validateTableNames(t Table, p *field.Path, i int, seen tableNames) field.ErrorList {
	var errs field.ErrorList
	if t.Source == "" {
		errs = append(errs, field.Required(p.Child("source"), "the source table, e.g. shop.orders"))
	} else if j, dup := seen.source[t.Source]; dup {
		errs = append(errs, duplicate(p.Child("source"), t.Source, j))
	} else {
		seen.source[t.Source] = i
	}
	switch {
	case t.Target == "":
		errs = append(errs, field.Required(p.Child("target"), "the target table, e.g. raw.orders"))
	case in.Sink.Type == SinkIcebergREST && hasEmptyPathComponent(t.Target):
		errs = append(errs, field.Invalid(p.Child("target"), t.Target, "has an empty path component (a namespace level or the table name cannot be blank)"))
	default:
		errs = append(errs, in.validateTargetNames(t.Target, p.Child("target"), i, seen)...)
	}
	if t.ChunkColumn != "" && !slices.Contains(t.PrimaryKey, t.ChunkColumn) {
		errs = append(errs, field.Invalid(p.Child("chunkColumn"), t.ChunkColumn, "is not a primary-key column (chunking must follow the key)"))
	}
	return errs
}

// validateTargetNames checks what the coordinator and the hub derive from a target: it must be
// unique, and so must its worker group name (urutau: targets that differ only in punctuation,
// raw.orders and raw-orders, would share one worker StatefulSet). The hub adds what the API server
// would refuse later, when the ConfigMap is applied or when the coordinator creates the table's
// workers: the worker pod template key, and the urutau.io/table label of the worker pods.
func (in *Inline) validateTargetNames(target string, p *field.Path, i int, seen tableNames) field.ErrorList {
	if j, dup := seen.target[target]; dup {
		return field.ErrorList{duplicate(p, target, j)}
	}
	seen.target[target] = i
	group := WorkerGroupPrefix(in.Pipeline, target)
	if j, dup := seen.group[group]; dup {
		return field.ErrorList{field.Invalid(p, target, fmt.Sprintf(
			"maps to the same worker group name %q as tables[%d]: targets must differ beyond punctuation and case", group, j))}
	}
	seen.group[group] = i
	if msgs := validation.IsConfigMapKey(WorkerPodTemplateKey(target)); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(p, target, fmt.Sprintf(
			"cannot name the worker pod template %q in the coordinator's ConfigMap: %s", WorkerPodTemplateKey(target), strings.Join(msgs, "; ")))}
	}
	if msgs := validation.IsValidLabelValue(target); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(p, target, "is the urutau.io/table label of the table's worker pods, so it must be a label value: "+strings.Join(msgs, "; "))}
	}
	return nil
}

func duplicate(p *field.Path, v string, first int) *field.Error {
	e := field.Duplicate(p, v)
	e.Detail = fmt.Sprintf("also tables[%d]", first)
	return e
}

func validateWorkers(t Table, p *field.Path) field.ErrorList {
	w := t.Workers
	if w == nil {
		return nil
	}
	var errs field.ErrorList
	if w.Number < 0 {
		errs = append(errs, field.Invalid(p.Child("number"), w.Number, "must be >= 0"))
	}
	if w.Max < 0 {
		errs = append(errs, field.Invalid(p.Child("max"), w.Max, "must be >= 0"))
	}
	if w.Max > 0 && w.Max < t.WorkerCount() {
		errs = append(errs, field.Invalid(p.Child("max"), w.Max,
			fmt.Sprintf("is below workers.number (%d): autoscaling never drops below the configured count", t.WorkerCount())))
	}
	// Replica counts are int32 in the StatefulSet and the ScaledObject.
	if w.Number > math.MaxInt32 {
		errs = append(errs, field.Invalid(p.Child("number"), w.Number, "must fit in 32 bits (a StatefulSet's replica count)"))
	}
	if w.Max > math.MaxInt32 {
		errs = append(errs, field.Invalid(p.Child("max"), w.Max, "must fit in 32 bits (a ScaledObject's replica count)"))
	}
	// urutau's own webhook checks these as quantities (#575); they become the workers' requests.
	errs = append(errs, checkQuantity(p.Child("cpu"), w.CPU)...)
	return append(errs, checkQuantity(p.Child("memory"), w.Memory)...)
}

// validateSyncMode: a cursor column selects incremental, and only incremental carries one.
func validateSyncMode(t Table, p *field.Path) field.ErrorList {
	switch t.Mode {
	case "", "cdc":
		if t.Cursor != "" {
			return field.ErrorList{field.Forbidden(p.Child("cursor"), "only valid with mode: incremental")}
		}
	case "incremental":
		if t.Cursor == "" {
			return field.ErrorList{field.Required(p.Child("cursor"), "required with mode: incremental")}
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("mode"), t.Mode, []string{"cdc", "incremental"})}
	}
	return nil
}

func (in *Inline) validateWriteMode(t Table, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mode := in.EffectiveWriteMode(t)
	kafka := in.Source.Kind == KindKafka
	switch mode {
	case WriteModeUpsert:
		if len(t.PrimaryKey) == 0 {
			errs = append(errs, field.Required(p.Child("primaryKey"), "required when writeMode is upsert (the default)"))
		}
		for j, pk := range t.PrimaryKey {
			if strings.Contains(pk, ".") {
				errs = append(errs, field.Invalid(p.Child("primaryKey").Index(j), pk,
					"points into a nested field: primary keys must be top-level scalar columns (promote the field to a column if that is the intent)"))
			}
		}
		if kafka && !in.Source.PartitionedByPrimaryKey {
			errs = append(errs, field.Invalid(p.Child("primaryKey"), strings.Join(t.PrimaryKey, ","),
				"kafka upsert requires source.partitionedByPrimaryKey: the topics must be partitioned by the key, or the same key in different partitions applies stale versions silently"))
		}
		if in.Source.Format == "raw" {
			errs = append(errs, field.Invalid(p.Child("writeMode"), mode, "source.format is raw: raw landing is append-only, set writeMode: append"))
		}
	case WriteModeAppend, WriteModeAppendIdempotent:
		if t.Filter != nil && !t.FilterImmutable {
			errs = append(errs, field.Required(p.Child("filterImmutable"), "required when writeMode is append and a filter is set"))
		}
		switch t.OnDelete {
		case "", "record":
			if kafka {
				errs = append(errs, field.Invalid(p.Child("onDelete"), t.OnDelete, "kafka carries no before image on deletes: set onDelete: skip for append-only"))
			}
		case "skip":
		default:
			errs = append(errs, field.NotSupported(p.Child("onDelete"), t.OnDelete, []string{"skip", "record"}))
		}
		if mode == WriteModeAppendIdempotent {
			errs = append(errs, validateIdentityColumns(t, in.Source.Kind, p)...)
		}
	default:
		if t.WriteMode != "" { // an inherited bad default is reported once, at sink.defaults
			errs = append(errs, field.NotSupported(p.Child("writeMode"), mode, writeModes))
		}
	}
	return errs
}

// validateIdentityColumns checks an append-idempotent identity: transport metadata columns
// (stream/shard/sequence) including shard or sequence, on a kafka source.
func validateIdentityColumns(t Table, kind string, p *field.Path) field.ErrorList {
	if kind != KindKafka {
		return field.ErrorList{field.Invalid(p.Child("writeMode"), WriteModeAppendIdempotent, "requires a source with a monotonic per-message sequence (kafka)")}
	}
	ip := p.Child("identity")
	if len(t.Identity) == 0 {
		return field.ErrorList{field.Required(ip, "required when writeMode is append-idempotent")}
	}
	transport := map[string]MetadataKey{}
	for _, m := range t.Metadata {
		if m.From == "stream" || m.From == "shard" || m.From == "sequence" {
			transport[m.As] = m.From
		}
	}
	var errs field.ErrorList
	coordinate := false
	for j, name := range t.Identity {
		from, ok := transport[name]
		if !ok {
			errs = append(errs, field.Invalid(ip.Index(j), name, "is not a transport metadata column (stream/shard/sequence): the identity must be transport, never content"))
			continue
		}
		coordinate = coordinate || from == "shard" || from == "sequence"
	}
	if !coordinate {
		errs = append(errs, field.Invalid(ip, strings.Join(t.Identity, ","), "must include shard or sequence: the transport coordinate that uniquely identifies a message"))
	}
	return errs
}

func validateColumnFilter(t Table, p *field.Path) field.ErrorList {
	if len(t.ColumnFilter) == 0 {
		return nil
	}
	var errs field.ErrorList
	cp := p.Child("columnFilter")
	seen := map[string]bool{}
	for j, c := range t.ColumnFilter {
		switch {
		case c == "":
			errs = append(errs, field.Invalid(cp.Index(j), c, "empty column name"))
		case seen[c]:
			errs = append(errs, field.Duplicate(cp.Index(j), c))
		}
		seen[c] = true
	}
	for _, pk := range t.PrimaryKey {
		if !seen[pk] {
			errs = append(errs, field.Invalid(cp, strings.Join(t.ColumnFilter, ","),
				fmt.Sprintf("must include primary key column %q (the sink resolves the key and sort order by column name)", pk)))
		}
	}
	return errs
}
