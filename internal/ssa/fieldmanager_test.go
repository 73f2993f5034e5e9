package ssa

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFieldManagerFor(t *testing.T) {
	long := strings.Repeat("m", 200)
	tests := []struct {
		name, base, member string
		want               string
	}{
		{name: "short", base: "urutau-operator", member: "a", want: "urutau-operator@a"},
		{name: "custom base", base: "fleet", member: "eu-west-1", want: "fleet@eu-west-1"},
		{name: "exactly 128", base: "b", member: strings.Repeat("x", 126), want: "b@" + strings.Repeat("x", 126)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FieldManagerFor(tt.base, tt.member); got != tt.want {
				t.Fatalf("FieldManagerFor(%q, %q) = %q, want %q", tt.base, tt.member, got, tt.want)
			}
		})
	}

	t.Run("long is hashed, bounded and deterministic", func(t *testing.T) {
		a := FieldManagerFor("urutau-operator", long)
		if len(a) > 128 {
			t.Fatalf("len = %d, want <= 128", len(a))
		}
		if a != FieldManagerFor("urutau-operator", long) {
			t.Fatal("not deterministic")
		}
		if !strings.HasPrefix(a, "urutau-operator@mmm") {
			t.Fatalf("prefix lost: %q", a)
		}
		b := FieldManagerFor("urutau-operator", long+"n")
		if a == b {
			t.Fatal("two members share a field manager")
		}
	})

	t.Run("multi-byte member stays valid UTF-8", func(t *testing.T) {
		got := FieldManagerFor("urutau-operator", strings.Repeat("é", 100))
		if len(got) > 128 || !utf8.ValidString(got) {
			t.Fatalf("got %q (len %d, valid %v)", got, len(got), utf8.ValidString(got))
		}
	})
}
