// Package spec parses the part of a CDCPipeline's spec.definition.inline that the hub needs: the
// pipeline name, the source identity, the sink and the tables with their workers. It is the fleet's
// own small typed reading of the coordinator's pipeline format, not the coordinator's full schema:
// unknown fields are kept in the ConfigMap untouched and ignored here.
//
// Pure: no I/O. Errors name the field path under spec.definition.inline.
package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InlinePath is the field path every error of this package is rooted at.
var InlinePath = field.NewPath("spec", "definition", "inline")

// SourceKinds are the source drivers the coordinator registers.
var SourceKinds = []string{"kafka", "mysql", "postgres"}

// SinkTypes are the sinks the coordinator registers.
var SinkTypes = []string{"iceberg", "kafka"}

// DefaultWorkerTemplateTarget is the table name of the generic worker template rendered for a
// Postgres source that discovers its tables at run time.
const DefaultWorkerTemplateTarget = "_default"

// Inline is the typed view of spec.definition.inline.
type Inline struct {
	Pipeline string
	Source   Source
	Sink     Sink
	Tables   []Table
}

// Source is the replication source.
type Source struct {
	Kind string
	// ServerID is the MySQL replication server id, as written (a number or a string).
	ServerID    string
	SnapshotURI string
	Postgres    *Postgres
}

// Postgres holds the Postgres-only settings the hub reads.
type Postgres struct {
	// SSH is true when the source is reached through an SSH tunnel (a `ssh` block is present).
	SSH         bool
	Discover    bool
	Slot        string
	Publication string
}

// Sink is where the pipeline writes.
type Sink struct {
	Type               string
	Warehouse          string
	MaintenanceEnabled bool
}

// Table is one replicated table.
type Table struct {
	Target  string
	Workers *Workers
}

// Workers sizes a table's worker group.
type Workers struct {
	Number int
	// Max is the partition cap; > 0 turns KEDA autoscaling on for the table.
	Max    int
	CPU    string
	Memory string
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

// Tunnels reports whether the source is a Postgres reached through SSH.
func (s Source) Tunnels() bool {
	return s.Kind == "postgres" && s.Postgres != nil && s.Postgres.SSH
}

// Discovers reports whether the source is a Postgres that discovers its tables at run time.
func (s Source) Discovers() bool {
	return s.Kind == "postgres" && s.Postgres != nil && s.Postgres.Discover
}

// Parse reads spec.definition.inline from its JSON form. It checks shapes (types, required fields,
// known source kinds and sink types) and reports every problem, each with its field path; callers
// that want an error use errs.ToAggregate().
func Parse(raw []byte) (*Inline, field.ErrorList) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, field.ErrorList{field.Required(InlinePath, "the inline pipeline definition is empty")}
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, field.ErrorList{field.Invalid(InlinePath, "<not shown>", "not a JSON/YAML object: "+err.Error())}
	}
	// Decode stops after the first value; anything after it is not part of one object.
	if dec.More() {
		return nil, field.ErrorList{field.Invalid(InlinePath, "<not shown>", "not a JSON/YAML object: data after the object")}
	}
	if doc == nil {
		return nil, field.ErrorList{field.Required(InlinePath, "the inline pipeline definition is empty")}
	}
	r := reader{}
	in := &Inline{}
	in.Pipeline = r.requiredString(doc, InlinePath.Child("pipeline"))
	if src := r.object(doc, InlinePath.Child("source"), true); src != nil {
		in.Source = r.source(src, InlinePath.Child("source"))
	}
	if sink := r.object(doc, InlinePath.Child("sink"), true); sink != nil {
		in.Sink = r.sink(sink, InlinePath.Child("sink"))
	}
	in.Tables = r.tables(doc, InlinePath.Child("tables"))
	if len(r.errs) > 0 {
		return nil, r.errs
	}
	return in, nil
}

// reader collects errors while walking the decoded document.
type reader struct {
	errs field.ErrorList
}

func (r *reader) object(m map[string]any, p *field.Path, required bool) map[string]any {
	v, ok := m[key(p)]
	if !ok || v == nil {
		if required {
			r.errs = append(r.errs, field.Required(p, ""))
		}
		return nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		r.errs = append(r.errs, field.TypeInvalid(p, v, "must be an object"))
		return nil
	}
	return o
}

// key is the last element of a child path: the map key it names.
func key(p *field.Path) string {
	s := p.String()
	return s[strings.LastIndex(s, ".")+1:]
}

func (r *reader) string(m map[string]any, p *field.Path) string {
	v, ok := m[key(p)]
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.errs = append(r.errs, field.TypeInvalid(p, v, "must be a string"))
		return ""
	}
	return s
}

func (r *reader) requiredString(m map[string]any, p *field.Path) string {
	before := len(r.errs)
	s := r.string(m, p)
	if s == "" && len(r.errs) == before {
		r.errs = append(r.errs, field.Required(p, ""))
	}
	return s
}

func (r *reader) bool(m map[string]any, p *field.Path) bool {
	v, ok := m[key(p)]
	if !ok || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		r.errs = append(r.errs, field.TypeInvalid(p, v, "must be true or false"))
	}
	return b
}

func (r *reader) int(m map[string]any, p *field.Path) int {
	v, ok := m[key(p)]
	if !ok || v == nil {
		return 0
	}
	n, ok := v.(json.Number)
	if !ok {
		r.errs = append(r.errs, field.TypeInvalid(p, v, "must be a whole number"))
		return 0
	}
	i, err := strconv.Atoi(n.String())
	if err != nil {
		r.errs = append(r.errs, field.TypeInvalid(p, n.String(), "must be a whole number"))
		return 0
	}
	if i < 0 {
		r.errs = append(r.errs, field.Invalid(p, i, "must be 0 or more"))
		return 0
	}
	return i
}

// stringOrNumber reads a value that may be written either way, e.g. a MySQL serverId.
func (r *reader) stringOrNumber(m map[string]any, p *field.Path) string {
	v, ok := m[key(p)]
	if !ok || v == nil {
		return ""
	}
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	default:
		r.errs = append(r.errs, field.TypeInvalid(p, v, "must be a number or a string"))
		return ""
	}
}

func (r *reader) source(m map[string]any, p *field.Path) Source {
	s := Source{
		Kind:        r.requiredString(m, p.Child("kind")),
		ServerID:    r.stringOrNumber(m, p.Child("serverId")),
		SnapshotURI: r.string(m, p.Child("snapshotUri")),
	}
	if s.Kind != "" && !slices.Contains(SourceKinds, s.Kind) {
		r.errs = append(r.errs, field.NotSupported(p.Child("kind"), s.Kind, SourceKinds))
	}
	if pg := r.object(m, p.Child("postgres"), false); pg != nil {
		pp := p.Child("postgres")
		s.Postgres = &Postgres{
			Discover:    r.bool(pg, pp.Child("discover")),
			Slot:        r.string(pg, pp.Child("slot")),
			Publication: r.string(pg, pp.Child("publication")),
		}
		if ssh, ok := pg["ssh"]; ok && ssh != nil {
			if _, isObj := ssh.(map[string]any); !isObj {
				r.errs = append(r.errs, field.TypeInvalid(pp.Child("ssh"), ssh, "must be an object"))
			} else {
				s.Postgres.SSH = true
			}
		}
	}
	return s
}

func (r *reader) sink(m map[string]any, p *field.Path) Sink {
	s := Sink{
		Type:      r.requiredString(m, p.Child("type")),
		Warehouse: r.string(m, p.Child("warehouse")),
	}
	if s.Type != "" && !slices.Contains(SinkTypes, s.Type) {
		r.errs = append(r.errs, field.NotSupported(p.Child("type"), s.Type, SinkTypes))
	}
	if mt := r.object(m, p.Child("maintenance"), false); mt != nil {
		s.MaintenanceEnabled = r.bool(mt, p.Child("maintenance").Child("enabled"))
	}
	return s
}

func (r *reader) tables(m map[string]any, p *field.Path) []Table {
	v, ok := m["tables"]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		r.errs = append(r.errs, field.TypeInvalid(p, v, "must be a list of tables"))
		return nil
	}
	seen := map[string]int{}
	out := make([]Table, 0, len(list))
	for i, item := range list {
		ip := p.Index(i)
		tm, ok := item.(map[string]any)
		if !ok {
			r.errs = append(r.errs, field.TypeInvalid(ip, item, "must be an object with a target"))
			continue
		}
		t := Table{Target: r.requiredString(tm, ip.Child("target"))}
		if t.Target != "" {
			if j, dup := seen[t.Target]; dup {
				r.errs = append(r.errs, field.Duplicate(ip.Child("target"), fmt.Sprintf("%s (also tables[%d])", t.Target, j)))
			}
			seen[t.Target] = i
		}
		if w := r.object(tm, ip.Child("workers"), false); w != nil {
			wp := ip.Child("workers")
			t.Workers = &Workers{
				Number: r.int(w, wp.Child("number")),
				Max:    r.int(w, wp.Child("max")),
				CPU:    r.string(w, wp.Child("cpu")),
				Memory: r.string(w, wp.Child("memory")),
			}
		}
		out = append(out, t)
	}
	return out
}

// ReaderIdentity is what one reader of a replication source is known by: two coordinators with
// the same identity corrupt each other's stream.
type ReaderIdentity struct {
	// Kind is the source kind; Field the field of source the identity comes from; Value its
	// canonical value.
	Kind, Field, Value string
}

// Identity returns the pipeline's reader identity; ok is false when the source has none.
func (in *Inline) Identity() (ReaderIdentity, bool) {
	switch {
	case in.Source.Kind == "mysql" && in.Source.ServerID != "":
		return ReaderIdentity{Kind: "mysql", Field: "serverId", Value: canonicalNumber(in.Source.ServerID)}, true
	case in.Source.Kind == "postgres" && in.Source.Postgres != nil && in.Source.Postgres.Slot != "":
		return ReaderIdentity{Kind: "postgres", Field: "slotName", Value: in.Source.Postgres.Slot}, true
	}
	return ReaderIdentity{}, false
}

// canonicalNumber writes a whole number without leading zeros or sign, so "0042" and 42 are one
// identity; anything else is kept as written.
func canonicalNumber(s string) string {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return s
	}
	return strconv.FormatUint(n, 10)
}
