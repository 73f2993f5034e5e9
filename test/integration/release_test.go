package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/urutau-io/fleet/internal/release"
)

// TestReleaseApplies runs what `make release VERSION=0.1.0` runs (hack/release) into a scratch
// dist/ and installs each install manifest as the README says, `kubectl apply --server-side -f
// FILE` with the real kubectl, the file as written, on a fresh API server (for
// install-cert-manager.yaml, one where cert-manager's kinds are served). The hub then comes up
// from what was applied: its container run with the Deployment's arguments and ServiceAccount
// (install_test.go plays the kubelet and, there, cert-manager) is ready, leads, and serves admission
// through its Service. It also checks that the files pin the images and that the packaged chart
// carries the version.
func TestReleaseApplies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hack/release and starts real API servers")
	}
	digest := "sha256:" + strings.Repeat("cd", 32)
	dist := releaseFiles(t, digest)
	bin := buildHub(t, t.TempDir())
	for _, v := range release.Variants {
		t.Run(v.File, func(t *testing.T) {
			path := filepath.Join(dist, v.File)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), ":latest") {
				t.Errorf("%s still names an image by :latest", v.File)
			}
			selfSigned := v.Overlay == "config/hub/self-signed"
			c, kubeconfig := startFresh(t)
			if !selfSigned {
				installCertManagerKinds(t, c.Client)
			}
			kubectl(t, kubeconfig, "apply", "--server-side", "-f", path)
			checkHubImage(t, c.Client, release.DefaultHubRepository+"@"+digest)
			checkHubIdentity(t, c, selfSigned)
			if !selfSigned {
				issueLikeCertManager(t, c.Client)
			}
			hub := runInstalledHub(t, c, bin)
			checkHubUp(t, c.Client, hub)
			if selfSigned {
				checkSelfSignedCertificate(t, c.Client, hub)
			}
		})
	}

	objs, err := release.RenderChart(filepath.Join(dist, "urutau-fleet-0.1.0.tgz"), "urutau-fleet", "urutau-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		if got := o.GetLabels()["app.kubernetes.io/version"]; got != "v0.1.0" {
			t.Errorf("the packaged chart's appVersion is %q, want v0.1.0", got)
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if got := containers[0].(map[string]any)["image"]; got != release.DefaultHubRepository+"@"+digest {
			t.Errorf("the packaged chart installs %v by default, want the pinned digest", got)
		}
	}
}

// TestMakeReleaseDigest runs `make release` with a digest record in the release directory: the
// record of another version fails the release, naming both versions, and writes nothing; the
// record `make release-image` writes for this version pins its digest.
func TestMakeReleaseDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make release")
	}
	dist := t.TempDir()
	record := filepath.Join(dist, release.DigestRecord)
	stale := "sha256:" + strings.Repeat("0a", 32)
	mustDo(t, os.WriteFile(record, []byte(release.DefaultHubRepository+":v0.1.0@"+stale+"\n"), 0o644))
	makeRelease := func() (string, error) {
		cmd := exec.CommandContext(t.Context(), "make", "release", "VERSION=0.2.0", "DIST="+dist)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := makeRelease()
	if err == nil || !strings.Contains(out, "records "+release.DefaultHubRepository+":v0.1.0, not "+release.DefaultHubRepository+":v0.2.0") {
		t.Errorf("make release VERSION=0.2.0 with the record of v0.1.0: err %v, want a failure naming both\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dist, "install.yaml")); err == nil {
		t.Error("make release wrote install.yaml although it failed")
	}

	fresh := "sha256:" + strings.Repeat("0b", 32)
	mustDo(t, os.WriteFile(record, []byte(release.DefaultHubRepository+":v0.2.0@"+fresh+"\n"), 0o644))
	if out, err := makeRelease(); err != nil {
		t.Fatalf("make release VERSION=0.2.0 with its own record: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
	mustDo(t, err)
	if !strings.Contains(string(raw), "image: "+release.DefaultHubRepository+"@"+fresh) {
		t.Errorf("install.yaml does not pin the recorded digest %s", fresh)
	}
}

// releaseFiles runs what `make release VERSION=0.1.0` runs (hack/release) into a scratch dist/,
// pinning the hub image to digest.
func releaseFiles(t *testing.T, digest string) string {
	t.Helper()
	dist := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", "run", "./hack/release", "--version", "0.1.0",
		"--hub-digest", digest, "--coordinator-image", "ghcr.io/urutau-io/urutau:v0.3.0", "--out", dist)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release: %v\n%s", err, out)
	}
	return dist
}
