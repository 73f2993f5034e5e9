package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryHubRoleIsInTheChart: the roles config/hub ships are all parts; without one, chartgen
// names it.
func TestEveryHubRoleIsInTheChart(t *testing.T) {
	if err := checkRolesCovered("../..", parts); err != nil {
		t.Fatal(err)
	}
	without := slices.DeleteFunc(slices.Clone(parts), func(p part) bool { return p.define == "webhookCABundleRules" })
	err := checkRolesCovered("../..", without)
	if err == nil || !strings.Contains(err.Error(), "config/hub/self-signed/rbac.yaml: ClusterRole/webhook-ca-bundle is not in the chart") {
		t.Errorf("a role left out: got %v", err)
	}
}

func TestCheckRolesCovered(t *testing.T) {
	const file = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: a
---
apiVersion: v1
kind: Secret
metadata:
  name: s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: b
`
	root := t.TempDir()
	dir := filepath.Join(root, "config", "hub", "rbac")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "roles.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	const rel = "config/hub/rbac/roles.yaml"
	for _, tc := range []struct {
		name  string
		parts []part
		want  []string // substrings of the error; none: no error
	}{
		{"both covered", []part{{file: rel, kind: "Role", name: "a"}, {file: rel, kind: "ClusterRole", name: "b"}}, nil},
		{"one missing", []part{{file: rel, kind: "Role", name: "a"}}, []string{rel + ": ClusterRole/b is not in the chart"}},
		{"kind matters", []part{{file: rel, kind: "ClusterRole", name: "a"}, {file: rel, kind: "ClusterRole", name: "b"}}, []string{"Role/a"}},
		{"none", nil, []string{"Role/a", "ClusterRole/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkRolesCovered(root, tc.parts)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error naming %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}
