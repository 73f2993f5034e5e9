package fence

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		err  string // "" when valid
	}{
		{"valid", []string{"--lease", "ns/l", "--ttl", "20s", "--", "x"}, ""},
		{"no namespace", []string{"--lease", "l", "--ttl", "20s", "--", "x"}, "--lease"},
		{"a slash in the name", []string{"--lease", "ns/l/m", "--ttl", "20s", "--", "x"}, "--lease"},
		{"no ttl", []string{"--lease", "ns/l", "--", "x"}, "ttl"},
		{"negative grace", []string{"--lease", "ns/l", "--ttl", "20s", "--grace", "-1s", "--", "x"}, "grace"},
		{"no command", []string{"--lease", "ns/l", "--ttl", "20s"}, "no command"},
		{"an unknown flag", []string{"--lease", "ns/l", "--ttl", "20s", "--lose", "--", "x"}, "lose"},
		{"polls slower than the ttl", []string{"--lease", "ns/l", "--ttl", "2s", "--poll", "2s", "--", "x"}, "shorter than --ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			c, err := ParseCommandLine(tc.args, &stderr)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Poll != 2*time.Second || c.RequestTimeout != 5*time.Second || c.Config.Grace != 10*time.Second {
					t.Fatalf("defaults: poll %v, request timeout %v, grace %v", c.Poll, c.RequestTimeout, c.Config.Grace)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ParseCommandLine() = %v, want an error about %q", err, tc.err)
			}
		})
	}
}

func TestParseCommandLineFields(t *testing.T) {
	c, err := ParseCommandLine([]string{"--lease", "ns/l", "--ttl", "4s", "--grace", "2s", "--holder", "u1",
		"--kubeconfig", "/k", "--", "run", "--ttl", "9s"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	want := CommandLine{Namespace: "ns", Name: "l", Config: Config{TTL: 4 * time.Second, Grace: 2 * time.Second},
		Poll: 400 * time.Millisecond, RequestTimeout: time.Second, Holder: "u1", Kubeconfig: "/k"}
	cmd := c.Command
	c.Command = nil
	if !reflect.DeepEqual(c, want) || !slices.Equal(cmd, []string{"run", "--ttl", "9s"}) {
		t.Fatalf("ParseCommandLine() = %+v, want %+v and the command after --", c, want)
	}
}

func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		holder, identity string
		want             bool
	}{
		{"", "anyone", true},
		{"", "", true},
		{"u1", "u1", true},
		{"u1", "u2", false},
		{"u1", "", false},
	} {
		if got := (CommandLine{Holder: tc.holder}).Counts(tc.identity); got != tc.want {
			t.Errorf("--holder %q counts holderIdentity %q: %v, want %v", tc.holder, tc.identity, got, tc.want)
		}
	}
}
