package main

import (
	"slices"
	"testing"
)

// TestArgs: run as kubectl_complete-urutau (kubectl's completion of `kubectl urutau ...`), the
// plugin answers cobra's __complete; run as itself, it takes its arguments as they are.
func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		osArgs, want []string
	}{
		{[]string{"/usr/local/bin/kubectl-urutau", "members", "-o", "wide"}, []string{"members", "-o", "wide"}},
		{[]string{"kubectl-urutau"}, []string{}},
		{[]string{"/home/me/.krew/bin/kubectl_complete-urutau", "status", "-n", ""}, []string{"__complete", "status", "-n", ""}},
		{[]string{`C:\krew\bin\kubectl_complete-urutau.exe`, "st"}, []string{"__complete", "st"}},
		{[]string{"kubectl_complete-urutau"}, []string{"__complete"}},
	} {
		if got := args(tc.osArgs); !slices.Equal(got, tc.want) {
			t.Errorf("args(%q) = %q, want %q", tc.osArgs, got, tc.want)
		}
	}
}
