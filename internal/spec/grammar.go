package spec

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The small textual grammars urutau checks at load (spec/validate.go, core/cast.go).

var (
	// identRe is a valid destination column name (metadata.as).
	identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// partitionExprRe is the closed grammar of partitionBy: day/month/year/hour/identity(col),
	// bucket(N, col), truncate(N, col).
	partitionExprRe = regexp.MustCompile(
		`^(?:(day|month|year|hour|identity)\((\w+)\)|(bucket|truncate)\((\d+),\s*(\w+)\))$`)
)

// castKinds are the plain canonical type names a cast (and a column declaration) may name.
var castKinds = map[string]bool{
	"bool": true, "int32": true, "int64": true, "uint64": true, "float32": true, "float64": true,
	"string": true, "binary": true, "date": true, "time": true, "timestamp": true,
	"timestamptz": true, "uuid": true, "json": true,
}

// parseCastTarget checks a cast value (urutau core.ParseCastTarget, core/cast.go): a canonical type
// name, decimal(p,s) with 0 <= s <= p and p > 0, string(hex|base64) or timestamptz(assume_utc);
// case and surrounding space are ignored.
func parseCastTarget(s string) error {
	t := strings.TrimSpace(strings.ToLower(s))
	if t == "" {
		return errors.New("empty cast target")
	}
	if base, args, ok := strings.Cut(t, "("); ok && strings.HasSuffix(args, ")") {
		args = strings.TrimSuffix(args, ")")
		switch {
		case base == "decimal":
			return checkDecimalArgs(args)
		case base == "string" && (args == "hex" || args == "base64"):
			return nil
		case base == "timestamptz" && args == "assume_utc":
			return nil
		}
		return fmt.Errorf("unknown cast target %q", s)
	}
	if castKinds[t] {
		return nil
	}
	return fmt.Errorf("unknown cast target %q (want bool, int32, int64, uint64, float32, float64, string, binary, date, time, timestamp, timestamptz, uuid, json, decimal(p,s), string(hex|base64) or timestamptz(assume_utc))", s)
}

func checkDecimalArgs(args string) error {
	p, s, ok := strings.Cut(args, ",")
	if !ok {
		return fmt.Errorf("decimal cast wants decimal(p,s), got %q", args)
	}
	precision, err := strconv.Atoi(strings.TrimSpace(p))
	if err != nil || precision <= 0 {
		return fmt.Errorf("decimal cast precision %q invalid", p)
	}
	scale, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || scale < 0 {
		return fmt.Errorf("decimal cast scale %q invalid", s)
	}
	if scale > precision {
		return fmt.Errorf("decimal cast scale %d exceeds precision %d", scale, precision)
	}
	return nil
}

// checkPartitionExpr checks one partitionBy expression; bucket and truncate sizes must be > 0.
func checkPartitionExpr(expr string) error {
	m := partitionExprRe.FindStringSubmatch(strings.TrimSpace(expr))
	if m == nil {
		return errors.New("want transform(col) with transform day, month, year, hour or identity, or bucket(N, col), or truncate(N, col)")
	}
	if m[3] != "" {
		if n, err := strconv.Atoi(m[4]); err != nil || n <= 0 {
			return errors.New("the bucket/truncate size must be > 0")
		}
	}
	return nil
}

// byteUnits are the binary suffixes a byte size may carry, longest first.
var byteUnits = []struct {
	suffix string
	mult   int64
}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}

// checkBytes checks a byte size: a whole number of bytes, or one with Ki, Mi, Gi or Ti, not
// negative and not overflowing 64 bits (urutau spec.ParseBytes).
func checkBytes(s string) error {
	num, mult := s, int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a valid byte size (e.g. 512Mi)", s)
	}
	if n > math.MaxInt64/mult {
		return fmt.Errorf("%q is too large (overflows int64 bytes)", s)
	}
	return nil
}

// hasEmptyPathComponent reports whether a dotted name has an empty level ("a..b", ".a", "a.").
func hasEmptyPathComponent(s string) bool {
	return slices.Contains(strings.Split(s, "."), "")
}
