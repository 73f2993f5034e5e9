package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/urutau-io/fleet/internal/release"
)

// krewVersion is the krew the release is tested with, built from the Go module proxy.
const krewVersion = "v0.4.3"

var platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

// TestKrewInstallsTheRelease makes the plugin's release files as `make release-plugin` does, then
// has krew's own manifest check accept urutau.yaml and krew install each platform's archive
// offline (--archive), as it would after downloading it. The host's archive holds the plugin
// built with the release's version stamped; the others hold a stand-in (building every platform
// takes minutes): krew unpacks them the same way. kubectl then runs the plugin krew installed.
// Last, checksums.txt covers the release files and sha256sum accepts it.
func TestKrewInstallsTheRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin and krew")
	}
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl: %v (run with KUBEBUILDER_ASSETS set, as make test does)", err)
	}
	krew, validate := krewBinaries(t)
	dist := t.TempDir()
	host := runtime.GOOS + "/" + runtime.GOARCH
	for _, s := range platforms {
		p, _ := release.ParsePlatform(s)
		bin := filepath.Join(dist, p.BuiltBinary())
		if s == host {
			goCmd(t, "", "build", "-ldflags", "-X github.com/urutau-io/fleet/internal/version.version=v0.1.0", "-o", bin, "github.com/urutau-io/fleet/cmd/kubectl-urutau")
			continue
		}
		if err := os.WriteFile(bin, []byte("stand-in for "+s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	license := filepath.Join(t.TempDir(), "LICENSE")
	if err := os.WriteFile(license, []byte("the license"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := pluginOptions{version: "0.1.0", out: dist, downloadURL: release.DefaultDownloadURL, license: license}
	for _, s := range platforms {
		p, _ := release.ParsePlatform(s)
		o.platforms = append(o.platforms, p)
	}
	if err := packagePlugin(o); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dist, release.KrewManifestFile)
	execute(t, nil, validate, "-manifest", manifest, "-skip-install")

	for _, p := range o.platforms {
		root := t.TempDir()
		env := []string{"KREW_ROOT=" + root, "KREW_OS=" + p.OS, "KREW_ARCH=" + p.Arch}
		execute(t, env, krew, "install", "--manifest="+manifest, "--archive="+filepath.Join(dist, p.Archive("0.1.0")))
		installed := filepath.Join(root, "bin", p.Binary())
		if _, err := os.Stat(installed); err != nil {
			t.Errorf("%s: krew installed no %s: %v", p, p.Binary(), err)
		}
		if _, err := os.Stat(filepath.Join(root, "store", release.PluginName, "v0.1.0", "LICENSE")); err != nil {
			t.Errorf("%s: the license is not installed: %v", p, err)
		}
		if p.String() != host {
			continue
		}
		if out := execute(t, nil, installed, "version", "--client"); !strings.HasPrefix(out, "Client Version: v0.1.0 ") {
			t.Errorf("the installed plugin says %q, want its stamped version v0.1.0", out)
		}
		path := []string{"PATH=" + filepath.Join(root, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")}
		if out := execute(t, path, kubectl, "urutau", "version", "--client", "-o", "yaml"); !strings.Contains(out, "version: v0.1.0") {
			t.Errorf("kubectl urutau version --client -o yaml:\n%s", out)
		}
	}

	checkChecksums(t, dist)
}

// checkChecksums writes the other release files as `make release` does, then checksums.txt.
func checkChecksums(t *testing.T, dist string) {
	o := release.Options{Version: "0.1.0", HubRepository: release.DefaultHubRepository, CoordinatorImage: "ghcr.io/urutau-io/urutau:v0.3.0"}
	if err := run("../..", dist, o); err != nil {
		t.Fatal(err)
	}
	for _, hub := range []string{"hub-linux-amd64", "hub-darwin-arm64", "hub-image.digest"} {
		if err := os.WriteFile(filepath.Join(dist, hub), []byte(hub), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := runChecksums([]string{"--version", "0.1.0", "--out", dist}); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dist, release.ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		names = append(names, l[strings.Index(l, "  ")+2:])
	}
	want := []string{"hub-darwin-arm64", "hub-linux-amd64", "install-cert-manager.yaml", "install.yaml",
		"kubectl-urutau_v0.1.0_darwin_amd64.tar.gz", "kubectl-urutau_v0.1.0_darwin_arm64.tar.gz", "kubectl-urutau_v0.1.0_linux_amd64.tar.gz",
		"kubectl-urutau_v0.1.0_linux_arm64.tar.gz", "kubectl-urutau_v0.1.0_windows_amd64.zip", "urutau-fleet-0.1.0.tgz", "urutau.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("checksums.txt lists\n%v\nwant\n%v", names, want)
	}
	cmd := exec.Command("sha256sum", "--strict", "-c", release.ChecksumsFile)
	cmd.Dir = dist
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c %s: %v\n%s", release.ChecksumsFile, err, out)
	}
	if err := os.Remove(filepath.Join(dist, "urutau.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := runChecksums([]string{"--version", "0.1.0", "--out", dist}); err == nil || !strings.Contains(err.Error(), "urutau.yaml") {
		t.Errorf("checksums without urutau.yaml: %v, want an error naming it", err)
	}
}

// krewBinaries builds krew and its manifest check once per version into the user's cache, as
// hack/control-plane.sh keeps the control plane.
func krewBinaries(t *testing.T) (krew, validate string) {
	t.Helper()
	cache := os.Getenv("URUTAU_CACHE_DIR")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(dir, "urutau-fleet")
	}
	bin := filepath.Join(cache, "tools", "krew-"+krewVersion)
	krew, validate = filepath.Join(bin, "krew"), filepath.Join(bin, "validate-krew-manifest")
	if _, err := os.Stat(validate); err == nil {
		return krew, validate
	}
	// go install pkg@version builds krew with its own go.mod, outside this module.
	goCmd(t, bin, "install", "sigs.k8s.io/krew/cmd/krew@"+krewVersion, "sigs.k8s.io/krew/cmd/validate-krew-manifest@"+krewVersion)
	return krew, validate
}

func goCmd(t *testing.T, gobin string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	// The build cache's settings (no CGO_ENABLED=0 here): the plugin links from packages the
	// other tests compiled.
	cmd.Env = os.Environ()
	if gobin != "" {
		cmd.Dir = t.TempDir()
		cmd.Env = append(cmd.Env, "GOBIN="+gobin, "GOFLAGS=", "GOWORK=off")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// execute runs a program with env added, and returns its standard output.
func execute(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}
