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
// dist/, applies both install manifests to real API servers, and checks that they pin the images
// and that the packaged chart carries the version.
func TestReleaseApplies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hack/release and starts real API servers")
	}
	dist := t.TempDir()
	digest := "sha256:" + strings.Repeat("cd", 32)
	cmd := exec.CommandContext(t.Context(), "go", "run", "./hack/release", "--version", "0.1.0",
		"--hub-digest", digest, "--coordinator-image", "ghcr.io/urutau-io/urutau:v0.3.0", "--out", dist)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release: %v\n%s", err, out)
	}
	for _, v := range release.Variants {
		t.Run(v.File, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dist, v.File))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), ":latest") {
				t.Errorf("%s still names an image by :latest", v.File)
			}
			objs := readObjects(t, filepath.Join(dist, v.File))
			c := startOne(t)
			applyAll(t, c.Client, objs)
			checkHubImage(t, c.Client, release.DefaultHubRepository+"@"+digest)
			checkHubIdentity(t, c, v.Overlay == "config/hub/self-signed")
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
