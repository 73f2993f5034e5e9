package ssa

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxFieldManagerLen is the API server's limit on a field manager name.
const maxFieldManagerLen = 128

// fieldManagerHashLen is how many hex characters of the SHA-256 replace a tail that does not fit.
const fieldManagerHashLen = 16

// FieldManagerFor is the field manager of every Server-Side Apply into member: base + "@" +
// member, e.g. "urutau-operator@eu-west-1". When that is longer than 128 bytes, the tail is
// replaced by "-" and the first 16 hex characters of the SHA-256 of the whole name, keeping it
// deterministic and unique per member.
//
// This name is load-bearing: managedFields in every member record it, so changing the scheme
// orphans the fields the hub owns. Never change it once released.
func FieldManagerFor(base, member string) string {
	name := base + "@" + member
	if len(name) <= maxFieldManagerLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:fieldManagerHashLen]
	// Cut at a byte boundary: a field manager is any string, so a cut rune is harmless but we
	// still keep the prefix valid UTF-8 for readable managedFields.
	prefix := name[:maxFieldManagerLen-len(suffix)]
	for len(prefix) > 0 && !validUTF8Tail(prefix) {
		prefix = prefix[:len(prefix)-1]
	}
	return prefix + suffix
}

// validUTF8Tail reports whether s does not end inside a multi-byte rune.
func validUTF8Tail(s string) bool {
	// Walk back over continuation bytes to the rune start and check the rune is complete.
	i := len(s) - 1
	n := 0
	for i >= 0 && s[i]&0xC0 == 0x80 {
		i--
		n++
	}
	if i < 0 {
		return n == 0
	}
	c := s[i]
	switch {
	case c < 0x80:
		return n == 0
	case c&0xE0 == 0xC0:
		return n == 1
	case c&0xF0 == 0xE0:
		return n == 2
	case c&0xF8 == 0xF0:
		return n == 3
	}
	return false
}
