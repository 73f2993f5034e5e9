package spec

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Filter operators (urutau spec/filter.go).
var (
	comparisonOps = []string{"eq", "neq", "lt", "lte", "gt", "gte"}
	listOps       = []string{"in", "not_in"}
	nullOps       = []string{"is_null", "is_not_null"}
	allOps        = slices.Concat(comparisonOps, listOps, nullOps)
)

// validateFilter checks the closed grammar: every node carries exactly one of all, any, not or a
// predicate, and predicates use known operators with values of the right shape.
func validateFilter(f *Filter, p *field.Path) field.ErrorList {
	if f == nil {
		return nil
	}
	var errs field.ErrorList
	count := 0
	if len(f.All) > 0 {
		count++
		for i := range f.All {
			errs = append(errs, validateFilter(&f.All[i], p.Child("all").Index(i))...)
		}
	}
	if len(f.Any) > 0 {
		count++
		for i := range f.Any {
			errs = append(errs, validateFilter(&f.Any[i], p.Child("any").Index(i))...)
		}
	}
	if f.Not != nil {
		count++
		errs = append(errs, validateFilter(f.Not, p.Child("not"))...)
	}
	if f.Predicate != nil {
		count++
		wp := p.Child("where")
		if f.inline {
			wp = p
		}
		errs = append(errs, validatePredicate(f.Predicate, wp)...)
	}
	switch {
	case count == 0:
		errs = append(errs, field.Required(p, "filter node is empty: give one of all, any, not, where, or a predicate (col, op, value)"))
	case count > 1:
		errs = append(errs, field.Invalid(p, "<object>", "filter node carries more than one of all/any/not/where"))
	}
	return errs
}

func validatePredicate(pr *Predicate, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr.Column == "" {
		errs = append(errs, field.Required(p.Child("col"), ""))
	}
	op := p.Child("op")
	switch {
	case isOneOf(pr.Op, comparisonOps...):
		if pr.Value == nil {
			errs = append(errs, field.Required(p.Child("value"), fmt.Sprintf("op %q requires a value", pr.Op)))
		}
	case isOneOf(pr.Op, listOps...):
		vals, ok := pr.Value.([]any)
		if !ok {
			errs = append(errs, field.Invalid(p.Child("value"), summary(pr.Value), fmt.Sprintf("op %q requires a list value", pr.Op)))
		} else if len(vals) == 0 {
			errs = append(errs, field.Invalid(p.Child("value"), "[]", fmt.Sprintf("op %q requires at least one value", pr.Op)))
		}
	case isOneOf(pr.Op, nullOps...):
		if pr.Value != nil {
			errs = append(errs, field.Forbidden(p.Child("value"), fmt.Sprintf("op %q takes no value", pr.Op)))
		}
	case pr.Op == "":
		errs = append(errs, field.Required(op, "one of: "+strings.Join(allOps, ", ")))
	default:
		errs = append(errs, field.NotSupported(op, pr.Op, allOps))
	}
	return errs
}

// validateMetadata: keys from the closed catalog, explicit valid unique destination names, never
// part of the primary key.
func validateMetadata(t Table, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for j, m := range t.Metadata {
		mp := p.Child("metadata").Index(j)
		if !slices.Contains(MetadataCatalog, string(m.From)) {
			errs = append(errs, field.NotSupported(mp.Child("from"), string(m.From), MetadataCatalog))
		}
		switch {
		case m.As == "":
			errs = append(errs, field.Required(mp.Child("as"), "the destination column name"))
		case !identRe.MatchString(m.As):
			errs = append(errs, field.Invalid(mp.Child("as"), m.As, "is not a valid column name (letters, digits and _, not starting with a digit)"))
		case seen[m.As]:
			errs = append(errs, field.Duplicate(mp.Child("as"), m.As))
		case slices.Contains(t.PrimaryKey, m.As):
			errs = append(errs, field.Invalid(mp.Child("as"), m.As, "cannot be part of the primary key (the equality key comes from the source)"))
		}
		seen[m.As] = true
	}
	return errs
}

// validateCast: every value parses as a canonical cast target.
func validateCast(t Table, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(t.Cast) {
		if name == "" {
			errs = append(errs, field.Invalid(p, "", "empty column name"))
			continue
		}
		if err := parseCastTarget(t.Cast[name]); err != nil {
			errs = append(errs, field.Invalid(p.Key(name), t.Cast[name], err.Error()))
		}
	}
	return errs
}

// validateColumns: every declaration resolves; from/required only for kafka raw/avro; no payload
// column for avro.
func validateColumns(t Table, src Source, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(t.Columns) {
		d := t.Columns[name]
		if name == "" {
			errs = append(errs, field.Invalid(p, "", "empty column name"))
			continue
		}
		cp := p.Key(name)
		if err := d.Resolve(); err != nil {
			errs = append(errs, field.Invalid(cp, "<declaration>", err.Error()))
		}
		if (d.From != "" || d.Required) && (src.Kind != KindKafka || (src.Format != "raw" && src.Format != "avro")) {
			errs = append(errs, field.Forbidden(cp, "from/required are only valid for kafka raw/avro sources"))
		}
		if src.Format == "avro" && name == "payload" {
			errs = append(errs, field.Forbidden(cp, `"payload" is not valid for format avro: the pre-decode bytes are Confluent wire format, not an independently readable value`))
		}
	}
	return errs
}

func validatePartitionBy(t Table, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, expr := range t.PartitionBy {
		if err := checkPartitionExpr(expr); err != nil {
			errs = append(errs, field.Invalid(p.Index(j), expr, err.Error()))
		}
	}
	return errs
}

// validateBootstrap: a typo in the mode must not silently become a full snapshot.
func validateBootstrap(b *Bootstrap, p *field.Path) field.ErrorList {
	if b == nil {
		return nil
	}
	var errs field.ErrorList
	if !isOneOf(b.Mode, "", "snapshot", "adopt", "adopt-verify") {
		errs = append(errs, field.NotSupported(p.Child("mode"), b.Mode, []string{"snapshot", "adopt", "adopt-verify"}))
	}
	switch b.StartAt {
	case "", "current":
	case "explicit":
		if b.Position == "" {
			errs = append(errs, field.Required(p.Child("position"), `required when startAt is "explicit"`))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("startAt"), b.StartAt, []string{"current", "explicit"}))
	}
	if b.Position != "" && b.StartAt != "explicit" {
		errs = append(errs, field.Invalid(p.Child("startAt"), b.StartAt, `must be "explicit" when a position is set`))
	}
	return errs
}

var joinTypes = []string{"left", "left outer", "inner", "left semi", "left anti"}

// validateEnrich checks the broadcast reference joins.
func validateEnrich(list []Enrich, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, e := range list {
		ep := p.Index(i)
		switch {
		case e.Table == "":
			errs = append(errs, field.Required(ep.Child("table"), ""))
		case seen[e.Table]:
			errs = append(errs, field.Duplicate(ep.Child("table"), e.Table))
		}
		seen[e.Table] = true
		if e.Source.URI == "" {
			errs = append(errs, field.Required(ep.Child("source", "uri"), ""))
		}
		if e.Source.Query == "" {
			errs = append(errs, field.Required(ep.Child("source", "query"), ""))
		}
		if len(e.On) == 0 {
			errs = append(errs, field.Required(ep.Child("on"), "event column -> reference column"))
		}
		switch {
		case e.JoinType == "":
			errs = append(errs, field.Required(ep.Child("joinType"), "there is no universal miss policy: one of "+strings.Join(joinTypes, ", ")))
		case !isOneOf(e.JoinType, joinTypes...):
			errs = append(errs, field.NotSupported(ep.Child("joinType"), e.JoinType, joinTypes))
		}
		if !isOneOf(e.OnColdStart, "", "buffer", "pass", "drop") {
			errs = append(errs, field.NotSupported(ep.Child("onColdStart"), e.OnColdStart, []string{"buffer", "pass", "drop"}))
		}
		errs = append(errs, positiveDuration(ep.Child("refresh"), e.Refresh, "5m")...)
		if e.BufferLimits.MaxEvents < 0 {
			errs = append(errs, field.Invalid(ep.Child("bufferLimits", "maxEvents"), e.BufferLimits.MaxEvents, "must be positive"))
		}
		errs = append(errs, positiveDuration(ep.Child("bufferLimits", "maxWait"), e.BufferLimits.MaxWait, "30s")...)
		switch {
		case e.MaxRows < 0:
			errs = append(errs, field.Invalid(ep.Child("maxRows"), e.MaxRows, "must be positive"))
		case e.MaxRows > math.MaxInt32:
			errs = append(errs, field.Invalid(ep.Child("maxRows"), e.MaxRows, "exceeds the int32 row-index limit: the broadcast join indexes rows as int32"))
		}
		errs = append(errs, validateEnrichColumns(e, ep)...)
	}
	return errs
}

// validateEnrichColumns: select is required (except for semi/anti joins, which take none), and
// renames are prefixed with the reference table and name a selected column.
func validateEnrichColumns(e Enrich, ep *field.Path) field.ErrorList {
	var errs field.ErrorList
	sp, ap := ep.Child("select"), ep.Child("as")
	semiAnti := e.JoinType == "left semi" || e.JoinType == "left anti"
	switch {
	case semiAnti && len(e.Select) > 0:
		errs = append(errs, field.Forbidden(sp, e.JoinType+" emits no reference columns: remove select"))
	case semiAnti:
	case len(e.Select) == 0:
		errs = append(errs, field.Required(sp, `declare the reference columns the event receives ("*" injects all of them; prefer an explicit list)`))
	case len(e.Select) == 1 && e.Select[0] == "*":
	default:
		sel := map[string]bool{}
		for j, s := range e.Select {
			switch {
			case s == "*":
				errs = append(errs, field.Invalid(sp.Index(j), s, `"*" must be the only entry`))
				continue
			case s == "":
				errs = append(errs, field.Invalid(sp.Index(j), s, "empty column name"))
			case sel[s]:
				errs = append(errs, field.Duplicate(sp.Index(j), s))
			}
			sel[s] = true
		}
		prefix := e.Table + "."
		for _, ref := range sortedKeys(e.As) {
			if !strings.HasPrefix(ref, prefix) {
				errs = append(errs, field.Invalid(ap.Key(ref), e.As[ref], fmt.Sprintf("renames %q, which is not prefixed with %q", ref, prefix)))
			} else if col := strings.TrimPrefix(ref, prefix); !sel[col] {
				errs = append(errs, field.Invalid(ap.Key(ref), e.As[ref], fmt.Sprintf("renames %q, whose column %q is not in select", ref, col)))
			}
		}
	}
	dest := map[string]string{}
	for _, ref := range sortedKeys(e.As) {
		as := e.As[ref]
		if other, dup := dest[as]; dup {
			errs = append(errs, field.Invalid(ap.Key(ref), as, fmt.Sprintf("lands on the same column as %q", other)))
		}
		dest[as] = ref
	}
	return errs
}

// Warnings are urutau's advisory outcomes (Spec.Warnings): rules that do not reject the
// definition but that the user must see.
func (in *Inline) Warnings() []string {
	var warns []string
	if pg := in.Source.Postgres; pg != nil && len(pg.Schemas) > 0 && !pg.Discover {
		warns = append(warns, InlinePath.Child("source", "postgres", "schemas").String()+": ignored without source.postgres.discover")
	}
	for i, t := range in.Tables {
		if in.EffectiveWriteMode(t) != WriteModeUpsert {
			continue
		}
		for j, m := range t.Metadata {
			if m.From == "op" {
				warns = append(warns, fmt.Sprintf(`%s: in upsert mode a delete removes the row and op never lands as "delete"; use writeMode append to keep deletes`,
					InlinePath.Child("tables").Index(i).Child("metadata").Index(j)))
			}
		}
	}
	return warns
}
