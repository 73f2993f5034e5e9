package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/release"
)

// TestMoveInstallYAMLToHelmMarks follows docs/install.md, "Moving from install.yaml to Helm", up
// to `helm install`: after `kubectl apply --server-side -f install.yaml` and the doc's `kubectl
// label -f` and `kubectl annotate -f`, every object the same release's chart renders exists on the
// API server with the marks Helm requires to take an existing object over (the label
// app.kubernetes.io/managed-by=Helm and the annotations meta.helm.sh/release-name and
// release-namespace naming the release), so `helm install` adopts them all and creates none.
// Helm's install itself is not run here: its action package pulls dependencies go.mod does not
// carry.
func TestMoveInstallYAMLToHelmMarks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release files and starts a real API server")
	}
	dist := releaseFiles(t, "sha256:"+strings.Repeat("cd", 32))
	file := filepath.Join(dist, "install.yaml")
	c, kubeconfig := startFresh(t)
	kubectl(t, kubeconfig, "apply", "--server-side", "-f", file)
	kubectl(t, kubeconfig, "label", "-f", file, "app.kubernetes.io/managed-by=Helm", "--overwrite")
	kubectl(t, kubeconfig, "annotate", "-f", file, "meta.helm.sh/release-name=urutau-fleet", "meta.helm.sh/release-namespace="+hubNS, "--overwrite")

	rendered, err := release.RenderChart(filepath.Join(dist, "urutau-fleet-0.1.0.tgz"), "urutau-fleet", hubNS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rendered) < 10 {
		t.Fatalf("the chart renders %d objects", len(rendered))
	}
	for _, want := range rendered {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		key := client.ObjectKey{Namespace: want.GetNamespace(), Name: want.GetName()}
		if err := c.Client.Get(t.Context(), key, got); err != nil {
			t.Errorf("the chart renders %s %s, which install.yaml did not install: helm install would create it (%v)", want.GetKind(), key, err)
			continue
		}
		a := got.GetAnnotations()
		if got.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" || a["meta.helm.sh/release-name"] != "urutau-fleet" || a["meta.helm.sh/release-namespace"] != hubNS {
			t.Errorf("%s %s lacks Helm's marks after the doc's kubectl label and annotate: labels %v, annotations %v", got.GetKind(), key, got.GetLabels(), a)
		}
	}
}
