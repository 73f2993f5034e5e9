package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InlinePath is the field path every error of this package is rooted at.
var InlinePath = field.NewPath("spec", "definition", "inline")

// Parse reads spec.definition.inline, as the API server stores it (JSON), the way the urutau
// coordinator loads pipeline.yaml, then checks it as the single-cluster operator's webhook does:
// the coordinator's own Validate without its credential rules (source.uri and sink.uri stay empty
// inline; they come from the Secrets), then the registered source kinds and sink types.
//
// Loading is urutau's spec.LoadYAML (spec/load.go): the document is decoded into the typed view
// with unknown fields disallowed and Go's JSON rules (a key matches its field case-insensitively, a
// number never fills a string). Parse reports each load problem with its field path where the
// coordinator would only say "json: unknown field". It applies urutau's one default: an empty
// sink.type is DefaultSinkType.
//
// It returns the typed view, or nil and every problem found, each under InlinePath; callers that
// want an error use errs.ToAggregate().
func Parse(raw []byte) (*Inline, field.ErrorList) {
	if e := CheckInlineSize(InlinePath, raw); e != nil {
		e.Detail += ": the definition is bounded so that admitting and rendering it stay cheap; move bulky settings out of it"
		return nil, field.ErrorList{e}
	}
	doc, errs := decodeDocument(raw)
	if len(errs) > 0 {
		return nil, errs
	}
	var c shapeChecker
	c.check(doc, reflect.TypeFor[Inline](), InlinePath, false)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	in, err := decodeStrict(doc)
	if err != nil {
		// The shape check mirrors the decoder, so this is a safety net, not a path users meet.
		return nil, field.ErrorList{field.Invalid(InlinePath, "<not shown>", "the coordinator cannot load it: "+err.Error())}
	}
	errs = in.validate()
	errs = append(errs, in.checkRegistry()...)
	if len(errs) > 0 {
		return nil, errs
	}
	return in, nil
}

// decodeDocument decodes one JSON object, keeping numbers as written.
func decodeDocument(raw []byte) (map[string]any, field.ErrorList) {
	empty := field.ErrorList{field.Required(InlinePath, "the inline pipeline definition is empty")}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, empty
	}
	var doc any
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
		return nil, empty
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.TypeInvalid(InlinePath, summary(doc), "must be an object (the pipeline definition)")}
	}
	return m, nil
}

// decodeStrict is the coordinator's decode: the document re-marshalled (sorted keys, as its YAML to
// JSON hop leaves them) and decoded with unknown fields disallowed.
func decodeStrict(doc map[string]any) (*Inline, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	in := &Inline{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		return nil, err
	}
	return in, nil
}

// shapeChecker walks a decoded document alongside the Go type it decodes into, with the decoder's
// rules, and records every mismatch under its path.
type shapeChecker struct {
	errs field.ErrorList
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	filterType      = reflect.TypeFor[Filter]()
)

// check checks v against t. lenient ignores unknown keys, as urutau's Filter decoder does.
func (c *shapeChecker) check(v any, t reflect.Type, p *field.Path, lenient bool) {
	switch {
	case t.Kind() == reflect.Pointer:
		if v != nil { // null sets a pointer to nil
			c.check(v, t.Elem(), p, lenient)
		}
	case t == filterType:
		c.checkFilter(v, p)
	case reflect.PointerTo(t).Implements(unmarshalerType):
		// The type decodes itself, null included: ask it.
		b, err := json.Marshal(v)
		if err == nil {
			err = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(b)
		}
		if err != nil {
			c.errs = append(c.errs, field.Invalid(p, summary(v), err.Error()))
		}
	case v == nil:
		// null leaves any other field at its zero value.
	default:
		c.checkValue(v, t, p, lenient)
	}
}

func (c *shapeChecker) checkValue(v any, t reflect.Type, p *field.Path, lenient bool) {
	switch t.Kind() {
	case reflect.Struct:
		c.checkStruct(v, t, p, lenient)
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			c.typeError(v, p, "must be a list")
			return
		}
		for i, e := range list {
			c.check(e, t.Elem(), p.Index(i), lenient)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			c.typeError(v, p, "must be an object (a map of names to values)")
			return
		}
		for _, k := range sortedKeys(m) {
			c.check(m[k], t.Elem(), p.Key(k), lenient)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			c.typeError(v, p, "must be a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			c.typeError(v, p, "must be true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.checkInteger(v, t, p)
	case reflect.Interface:
		// Any JSON value (a filter value).
	default:
		c.errs = append(c.errs, field.InternalError(p, fmt.Errorf("no shape rule for %s", t)))
	}
}

func (c *shapeChecker) checkStruct(v any, t reflect.Type, p *field.Path, lenient bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.typeError(v, p, "must be an object")
		return
	}
	fields := jsonFields(t)
	for _, k := range sortedKeys(m) {
		f, ok := matchField(fields, k)
		if !ok {
			if !lenient {
				c.errs = append(c.errs, unknownField(p, k, fields))
			}
			continue
		}
		c.check(m[k], f.typ, p.Child(f.name), lenient)
	}
}

// checkFilter follows urutau's Filter.UnmarshalJSON: an object with a "col" key is a predicate,
// any other object a node; both decode leniently.
func (c *shapeChecker) checkFilter(v any, p *field.Path) {
	if v == nil {
		return // an empty node, which Validate reports
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.typeError(v, p, "must be an object: a filter node (all, any, not or where) or a predicate (col, op, value)")
		return
	}
	if _, isPredicate := m["col"]; isPredicate {
		c.checkStruct(m, reflect.TypeFor[Predicate](), p, true)
		return
	}
	c.checkStruct(m, filterType, p, true)
}

func (c *shapeChecker) checkInteger(v any, t reflect.Type, p *field.Path) {
	n, ok := v.(json.Number)
	if !ok {
		c.typeError(v, p, "must be a whole number")
		return
	}
	var err error
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		_, err = strconv.ParseUint(n.String(), 10, t.Bits())
	} else {
		_, err = strconv.ParseInt(n.String(), 10, t.Bits())
	}
	if err != nil {
		what := "a whole number"
		if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
			what = "a whole number, 0 or more,"
		}
		c.errs = append(c.errs, field.TypeInvalid(p, n.String(), fmt.Sprintf("must be %s that fits in %d bits (no fraction, no exponent)", what, t.Bits())))
	}
}

func (c *shapeChecker) typeError(v any, p *field.Path, detail string) {
	if _, isNumber := v.(json.Number); isNumber && strings.HasPrefix(detail, "must be a string") {
		detail += ": quote it (in YAML, serverId: \"1101\" rather than serverId: 1101)"
	}
	c.errs = append(c.errs, field.TypeInvalid(p, summary(v), detail))
}

// unknownField is the error for a key the coordinator would refuse.
func unknownField(p *field.Path, key string, fields []jsonField) *field.Error {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	slices.Sort(names)
	detail := "unknown field: the coordinator loads the definition strictly and refuses it"
	if hint, ok := renamedHint(p.Child(key).String()); ok {
		detail += "; " + hint
	}
	if key == "true" || key == "false" {
		// kubectl reads YAML 1.1, where a bare on, off, yes or no is a boolean.
		detail += `; a bare on/off/yes/no key is a boolean in YAML 1.1 (kubectl): quote it, e.g. "on":`
	}
	return field.Forbidden(p.Child(key), fmt.Sprintf("%s (fields here: %s)", detail, strings.Join(names, ", ")))
}

// renamed points users of the fleet's earlier reading of the definition, and of fields urutau
// has since removed, at what replaces them.
var renamed = map[string]string{
	InlinePath.Child("source", "postgres", "slot").String():        "the replication slot is source.slotName",
	InlinePath.Child("source", "postgres", "publication").String(): "urutau has no publication setting",
	InlinePath.Child("source", "groupId").String(): "urutau removed it (spec/spec.go @0b3b110): the kafka source assigns partitions itself and joins no consumer group; " +
		"its position is kept in the sink",
	InlinePath.Child("source", "bootstrapServers").String(): "urutau removed it (spec/spec.go @0b3b110): the kafka brokers are source.uri, " +
		"or the uri of the spec.secrets.source Secret",
}

// renamedHint finds the hint of a path ignoring case, as the decoder matches keys.
func renamedHint(path string) (string, bool) {
	for k, hint := range renamed {
		if strings.EqualFold(k, path) {
			return hint, true
		}
	}
	return "", false
}

// jsonField is one field as encoding/json sees it.
type jsonField struct {
	name string
	typ  reflect.Type
}

// fieldCache holds jsonFields by type: the webhook parses every pipeline of the hub on a CREATE.
var fieldCache sync.Map // reflect.Type -> []jsonField

// jsonFields lists the exported fields of a struct under their JSON names.
func jsonFields(t reflect.Type) []jsonField {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]jsonField)
	}
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, typ: f.Type})
	}
	fieldCache.Store(t, out)
	return out
}

// matchField finds key's field as encoding/json does: the exact name first, then ignoring case.
func matchField(fields []jsonField, key string) (jsonField, bool) {
	for _, f := range fields {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return jsonField{}, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// summary is a value short enough for an error message.
func summary(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return "<object>"
	case []any:
		return "<list>"
	case json.Number:
		return t.String()
	case string:
		if len(t) > 80 {
			return t[:80] + "..."
		}
		return t
	default:
		return v
	}
}
