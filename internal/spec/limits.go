package spec

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds the hub enforces on what it parses, whatever admitted the CDCPipeline (the webhook may be
// off, and a CRD of an older release had no CEL rules): cheap to send, expensive to process
// otherwise. Parse applies them to the definition; the renderer and the webhook to the CR's own
// quantities.
const (
	// MaxInlineBytes bounds spec.definition.inline, which every render and every admission parses.
	MaxInlineBytes = 128 << 10
	// MaxQuantityLength and MaxQuantityExponent bound a resource quantity before
	// resource.ParseQuantity sees it: it rounds through a big decimal with as many digits as the
	// exponent says, so 1e-999999999 keeps a core busy for minutes and takes gigabytes.
	MaxQuantityLength   = 64
	MaxQuantityExponent = 64
)

// CheckQuantityBounds refuses a quantity too long, or with a decimal exponent beyond
// ±MaxQuantityExponent, before anything parses it.
func CheckQuantityBounds(p *field.Path, v string) *field.Error {
	if len(v) > MaxQuantityLength {
		e := field.TooLong(p, v, MaxQuantityLength)
		e.Detail += ": a resource quantity is written like 500m, 2, 512Mi or 1Gi"
		return e
	}
	if exponentBeyond(v, MaxQuantityExponent) {
		return field.Invalid(p, v, fmt.Sprintf("the exponent must be between -%d and %d: write the quantity like 500m, 2, 512Mi or 1Gi", MaxQuantityExponent, MaxQuantityExponent))
	}
	return nil
}

// exponentBeyond reports whether v carries a decimal exponent (1e3, 5E-2) beyond ±max. The number
// part of a quantity holds only digits, a sign and a dot, so the first e or E starts the suffix; E
// alone (exa) and Ei (exbi) are not exponents.
func exponentBeyond(v string, limit int) bool {
	i := strings.IndexAny(v, "eE")
	if i < 0 {
		return false
	}
	exp := strings.TrimLeft(v[i+1:], "+-")
	if exp == "" || strings.Trim(exp, "0123456789") != "" {
		return false // not an exponent: the parser judges it
	}
	exp = strings.TrimLeft(exp, "0")
	if len(exp) > len(strconv.Itoa(limit)) {
		return true
	}
	n, _ := strconv.Atoi(exp) // digits only, and short: cannot fail but for "", which is 0
	return n > limit
}

// CheckInlineSize refuses an inline definition larger than MaxInlineBytes.
func CheckInlineSize(p *field.Path, raw []byte) *field.Error {
	if len(raw) > MaxInlineBytes {
		return field.TooLong(p, fmt.Sprintf("<%d bytes>", len(raw)), MaxInlineBytes)
	}
	return nil
}

// checkQuantity checks an optional resource quantity: bounded, parsable, not negative.
func checkQuantity(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return nil
	}
	if e := CheckQuantityBounds(p, v); e != nil {
		return field.ErrorList{e}
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return field.ErrorList{field.Invalid(p, v, "is not a valid resource quantity: write it like 500m, 2, 512Mi or 1Gi (no spaces; Gi or G, not GB)")}
	}
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, v, "must not be negative")}
	}
	return nil
}
