// Package controlplane tests hack/control-plane.sh, which gives `make test` its real API servers:
// which source each binary comes from (KUBEBUILDER_ASSETS, prebuilt, built from the Go module
// proxy), in that order, and that a warm run goes nowhere. The binaries here are stand-ins that
// only report their versions; setup-envtest is a stand-in command, and Kubernetes' release
// binaries are served from a file:// URL.
package controlplane

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const script = "../control-plane.sh"

// versions are what each binary prints, as the pinned versions expect (etcd from setup-envtest
// has envtest's own version).
var versions = map[string]string{
	"kube-apiserver": "Kubernetes v1.37.2", "kube-controller-manager": "Kubernetes v1.37.2",
	"kube-scheduler": "Kubernetes v1.37.2", "kubectl": "Client Version: v1.37.2",
	"etcd": "etcd Version: 3.7.3", "kwok": "kwok version v0.8.0", "kwokctl": "kwokctl version v0.8.0",
}

// fake writes a stand-in binary that prints out.
func fake(t *testing.T, dir, name, out string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

type env struct {
	t                 *testing.T
	cache, bin, calls string
	vars              []string
}

// newEnv is an empty cache, a setup-envtest stand-in that records its calls and hands out
// stand-ins of the envtest binaries, and a release URL with nothing behind it.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, cache: t.TempDir()}
	e.bin = filepath.Join(e.cache, "control-plane", "k8s-v1.37.2-etcd-v3.7.3-kwok-v0.8.0", "bin")
	e.calls = filepath.Join(e.cache, "setup-envtest.calls")
	envtest := filepath.Join(e.cache, "envtest-dist")
	for _, n := range []string{"kube-apiserver", "kubectl"} {
		fake(t, envtest, n, versions[n])
	}
	fake(t, envtest, "etcd", "etcd Version: 3.6.4")
	stub := filepath.Join(e.cache, "setup-envtest")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\necho \"$*\" >>"+e.calls+"\necho "+envtest+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = []string{"URUTAU_CACHE_DIR=" + e.cache, "SETUP_ENVTEST=" + stub, "K8S_RELEASE_URL=file://" + filepath.Join(e.cache, "nothing"),
		// A build from the proxy fails at once: no proxy, an empty module cache.
		"GOPROXY=off", "GOMODCACHE=" + filepath.Join(e.cache, "gomodcache"), "GOFLAGS=-modcacherw"}
	return e
}

// release serves Kubernetes' release binaries (stand-ins) and their sha256 from a directory;
// corrupt serves a wrong sha256 for name.
func (e *env) release(corrupt string) {
	dir := filepath.Join(e.cache, "release")
	platform := filepath.Join(dir, "v1.37.2", "bin", goEnv(e.t, "GOOS"), goEnv(e.t, "GOARCH"))
	for _, n := range []string{"kube-controller-manager", "kube-scheduler"} {
		fake(e.t, platform, n, versions[n])
		raw, err := os.ReadFile(filepath.Join(platform, n))
		if err != nil {
			e.t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if n == corrupt {
			sum[0]++
		}
		if err := os.WriteFile(filepath.Join(platform, n+".sha256"), []byte(hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	e.vars = append(e.vars, "K8S_RELEASE_URL=file://"+dir)
}

// run runs the script with the env's variables and extra ones; it returns its output and error.
func (e *env) run(extra ...string) (string, error) {
	cmd := exec.CommandContext(e.t.Context(), "bash", script)
	cmd.Env = append(append(withoutAssets(os.Environ()), e.vars...), extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sources reads SOURCES of dir: binary -> where it came from.
func sources(t *testing.T, dir string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "SOURCES"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		name, from, _ := strings.Cut(l, ": ")
		out[name] = from
	}
	return out
}

func (e *env) setupEnvtestCalls() int {
	raw, err := os.ReadFile(e.calls)
	if err != nil {
		return 0
	}
	return strings.Count(string(raw), "\n")
}

func TestWarmCacheGoesNowhere(t *testing.T) {
	e := newEnv(t)
	for n, v := range versions {
		fake(t, e.bin, n, v)
	}
	if out, err := e.run(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for n, from := range sources(t, e.bin) {
		if from != "up to date" {
			t.Errorf("%s: %q, want up to date", n, from)
		}
	}
	if n := e.setupEnvtestCalls(); n != 0 {
		t.Errorf("setup-envtest ran %d times on a warm cache", n)
	}
}

// TestPrebuiltFirst: what is missing comes prebuilt when it can be had; the next run finds it
// current (etcd too, whose version is envtest's) and fetches nothing.
func TestPrebuiltFirst(t *testing.T) {
	e := newEnv(t)
	e.release("")
	fake(t, e.bin, "kwok", versions["kwok"])
	fake(t, e.bin, "kwokctl", versions["kwokctl"])
	if out, err := e.run(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := sources(t, e.bin)
	for n, want := range map[string]string{"kube-apiserver": "prebuilt, setup-envtest", "etcd": "prebuilt, setup-envtest", "kubectl": "prebuilt, setup-envtest",
		"kube-controller-manager": "prebuilt, file://", "kube-scheduler": "prebuilt, file://", "kwok": "up to date", "kwokctl": "up to date"} {
		if !strings.HasPrefix(got[n], want) {
			t.Errorf("%s: %q, want %q", n, got[n], want)
		}
	}
	if out, err := e.run(); err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	for n, from := range sources(t, e.bin) {
		if from != "up to date" {
			t.Errorf("second run, %s: %q, want up to date", n, from)
		}
	}
	if n := e.setupEnvtestCalls(); n != 1 {
		t.Errorf("setup-envtest ran %d times, want once", n)
	}
}

// TestBuildWhenNothingPrebuilt: a release binary whose sha256 does not match is refused, and so is
// prebuilt with CONTROL_PLANE_PREBUILT=false; either way the script falls back to building from
// the Go module proxy (which fails here at once: no proxy).
func TestBuildWhenNothingPrebuilt(t *testing.T) {
	for _, tc := range []struct {
		name, corrupt string
		extra         []string
		want          []string
	}{
		{"a corrupt download", "kube-scheduler", nil, []string{"does not match its sha256", "building from the Go module proxy: kube-controller-manager kube-scheduler"}},
		{"prebuilt off", "", []string{"CONTROL_PLANE_PREBUILT=false"}, []string{"building from the Go module proxy: kube-apiserver etcd kubectl kube-controller-manager kube-scheduler"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.release(tc.corrupt)
			for _, n := range []string{"kwok", "kwokctl"} {
				fake(t, e.bin, n, versions[n])
			}
			out, err := e.run(tc.extra...)
			t.Logf("%s", out)
			if err == nil {
				t.Fatalf("the build from a proxy that is off succeeded:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q:\n%s", w, out)
				}
			}
			if _, err := os.Stat(filepath.Join(e.bin, "kube-scheduler")); err == nil && tc.corrupt != "" {
				t.Error("the corrupt kube-scheduler was installed")
			}
		})
	}
}

// TestKubebuilderAssetsHonoured: binaries in KUBEBUILDER_ASSETS are used as they are, in a
// directory of their own (print-dir names it) that the cache completes with what envtest does
// not ship; setup-envtest is not run.
func TestKubebuilderAssetsHonoured(t *testing.T) {
	e := newEnv(t)
	mine := filepath.Join(t.TempDir(), "envtest")
	for _, n := range []string{"kube-apiserver", "etcd", "kubectl"} {
		fake(t, mine, n, "mine "+n)
	}
	for _, n := range []string{"kube-controller-manager", "kube-scheduler", "kwok", "kwokctl"} {
		fake(t, e.bin, n, versions[n])
	}
	out, err := e.run("KUBEBUILDER_ASSETS=" + mine)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), "bash", script, "print-dir")
	cmd.Env = append(append(withoutAssets(os.Environ()), e.vars...), "KUBEBUILDER_ASSETS="+mine)
	dirOut, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSpace(string(dirOut))
	if !strings.HasPrefix(dir, filepath.Join(e.cache, "control-plane", "assets-")) {
		t.Fatalf("print-dir with KUBEBUILDER_ASSETS set: %s, want a directory of its own in the cache", dir)
	}
	got := sources(t, dir)
	for _, n := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if got[n] != "from KUBEBUILDER_ASSETS="+mine {
			t.Errorf("%s: %q, want from KUBEBUILDER_ASSETS", n, got[n])
		}
		if target, _ := os.Readlink(filepath.Join(dir, n)); target != filepath.Join(mine, n) {
			t.Errorf("%s links to %q, want %s", n, target, filepath.Join(mine, n))
		}
	}
	if target, _ := os.Readlink(filepath.Join(dir, "kwok")); target != filepath.Join(e.bin, "kwok") {
		t.Errorf("kwok links to %q, want the cache's", target)
	}
	if n := e.setupEnvtestCalls(); n != 0 {
		t.Errorf("setup-envtest ran %d times although KUBEBUILDER_ASSETS has the envtest binaries", n)
	}
	// make test passes that directory down as KUBEBUILDER_ASSETS: it stays the one used.
	cmd = exec.CommandContext(t.Context(), "bash", script, "print-dir")
	cmd.Env = append(append(withoutAssets(os.Environ()), e.vars...), "KUBEBUILDER_ASSETS="+dir)
	if again, err := cmd.Output(); err != nil || strings.TrimSpace(string(again)) != dir {
		t.Errorf("print-dir with KUBEBUILDER_ASSETS=%s: %q, %v", dir, again, err)
	}
}

func withoutAssets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "KUBEBUILDER_ASSETS=") && !strings.HasPrefix(kv, "URUTAU_CACHE_DIR=") {
			out = append(out, kv)
		}
	}
	return out
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", name).Output()
	if err != nil {
		t.Fatal(fmt.Errorf("go env %s: %w", name, err))
	}
	return strings.TrimSpace(string(out))
}
