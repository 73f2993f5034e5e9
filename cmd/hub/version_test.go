package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/urutau-io/fleet/internal/version"
)

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"--coordinator-image=x", "--version"}} {
		var out bytes.Buffer
		if err := run(args, &out); err != nil {
			t.Fatalf("run %q: %v", args, err)
		}
		if want := "hub " + version.Get().String() + "\n"; out.String() != want {
			t.Errorf("run %q printed %q, want %q", args, out.String(), want)
		}
	}
}

// TestVersionStamped builds the hub as the Dockerfile and `make release` do and checks that the
// stamped version is what --version prints.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hub binary")
	}
	bin := filepath.Join(t.TempDir(), "hub")
	pkg := "github.com/urutau-io/fleet/internal/version"
	ldflags := "-X " + pkg + ".version=v9.8.7 -X " + pkg + ".revision=0123abc -X " + pkg + ".buildDate=2026-12-01T00:00:00Z"
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(t.Context(), bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("hub --version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "hub v9.8.7 (revision 0123abc, built 2026-12-01T00:00:00Z, go") {
		t.Errorf("hub --version printed %q", out)
	}
}

// TestBuildInfoServed: the gauge is in the registry the manager serves on /metrics.
func TestBuildInfoServed(t *testing.T) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != version.BuildInfoMetric {
			continue
		}
		labels := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if info := version.Get(); labels["version"] != info.Version || labels["revision"] != info.Revision || labels["goversion"] != info.GoVersion {
			t.Errorf("labels %v, want the build %+v", labels, info)
		}
		if v := f.GetMetric()[0].GetGauge().GetValue(); v != 1 {
			t.Errorf("value %v, want 1", v)
		}
		return
	}
	t.Errorf("%s is not in controller-runtime's registry", version.BuildInfoMetric)
}
