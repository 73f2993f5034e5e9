package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The three types below decode themselves, as their urutau counterparts do, so that what fails to
// load here fails to load in the coordinator and nothing else does.

// Filter is a node of the closed predicate grammar: exactly one of all (AND), any (OR), not, or a
// predicate (urutau spec/filter.go). A predicate may sit on the node itself ({col, op, value}) or
// under where.
type Filter struct {
	All       []Filter   `json:"all,omitempty"`
	Any       []Filter   `json:"any,omitempty"`
	Not       *Filter    `json:"not,omitempty"`
	Predicate *Predicate `json:"where,omitempty"`

	// inline is true when the predicate was written on the node, so errors name the node and not
	// a where key the user never wrote.
	inline bool
}

// UnmarshalJSON is urutau's: a node with a "col" key is a predicate; anything else decodes as the
// node's own fields. Like urutau's, it decodes with json.Unmarshal, so unknown keys inside a
// filter are ignored, not rejected: the coordinator accepts them.
func (f *Filter) UnmarshalJSON(b []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if _, ok := probe["col"]; ok {
		var p Predicate
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		*f = Filter{Predicate: &p, inline: true}
		return nil
	}
	type node Filter // without the method, so it does not recurse
	var n node
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*f = Filter(n)
	return nil
}

// Predicate compares one column.
type Predicate struct {
	Column string `json:"col"`
	Op     string `json:"op"`
	Value  any    `json:"value,omitempty"`
}

// MetadataKey is one entry of urutau's closed catalog of pipeline metadata (core/meta.go).
type MetadataKey string

// MetadataCatalog is the closed catalog, in urutau's order.
var MetadataCatalog = []string{
	"op", "commit_ts", "ingest_ts", "position", "source_table", "phase",
	"stream", "shard", "sequence", "msg_ts", "msg_key", "headers",
}

// UnmarshalJSON rejects a key outside the catalog at load time, as urutau's does.
func (k *MetadataKey) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if !slices.Contains(MetadataCatalog, s) {
		return fmt.Errorf("unknown metadata key %q (the catalog is closed: %s)", s, strings.Join(MetadataCatalog, ", "))
	}
	*k = MetadataKey(s)
	return nil
}

// ColumnDecl declares one column of a source that cannot be introspected: a scalar type string,
// or an object with exactly one of type, struct, list, map, plus optional from and required
// (urutau spec/columndecl.go).
type ColumnDecl struct {
	Scalar   string
	Struct   map[string]ColumnDecl
	List     *ColumnDecl
	Map      *MapDecl
	From     string
	Required bool
}

// MapDecl is the body of a map declaration.
type MapDecl struct {
	Key   ColumnDecl `json:"key"`
	Value ColumnDecl `json:"value"`
}

type columnBody struct {
	Struct   map[string]ColumnDecl `json:"struct,omitempty"`
	List     *ColumnDecl           `json:"list,omitempty"`
	Map      *MapDecl              `json:"map,omitempty"`
	Type     string                `json:"type,omitempty"`
	From     string                `json:"from,omitempty"`
	Required bool                  `json:"required,omitempty"`
}

// UnmarshalJSON is urutau's: a JSON string is a scalar; otherwise an object decoded strictly
// with exactly one shape.
func (d *ColumnDecl) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*d = ColumnDecl{Scalar: s}
		return nil
	}
	var body columnBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return fmt.Errorf("neither a scalar type string nor a type/struct/list/map declaration: %w", err)
	}
	set := 0
	for _, isSet := range []bool{body.Struct != nil, body.List != nil, body.Map != nil, body.Type != ""} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("exactly one of type, struct, list, map is required, got %d", set)
	}
	*d = ColumnDecl{Scalar: body.Type, Struct: body.Struct, List: body.List, Map: body.Map, From: body.From, Required: body.Required}
	return nil
}

// Resolve checks the declaration's grammar, recursively: every scalar must be a canonical type
// (the cast grammar).
func (d ColumnDecl) Resolve() error {
	switch {
	case d.Struct != nil:
		names := make([]string, 0, len(d.Struct))
		for name := range d.Struct {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if err := d.Struct[name].Resolve(); err != nil {
				return fmt.Errorf("struct field %q: %w", name, err)
			}
		}
		return nil
	case d.List != nil:
		if err := d.List.Resolve(); err != nil {
			return fmt.Errorf("list element: %w", err)
		}
		return nil
	case d.Map != nil:
		if err := d.Map.Key.Resolve(); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
		if err := d.Map.Value.Resolve(); err != nil {
			return fmt.Errorf("map value: %w", err)
		}
		return nil
	default:
		return parseCastTarget(d.Scalar)
	}
}
