package integration

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartv2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/release"
)

const chartDir = "../../" + release.ChartDir

// chartCase is one set of chart values and the kustomizations it must equal.
type chartCase struct {
	name   string
	values map[string]any
	// kustomize lists the kustomizations whose objects together are what the chart renders.
	kustomize []string
}

// The chart's image tag is set to config/hub's (latest) so the objects compare whole.
var chartCases = []chartCase{{
	name:      "defaults: self-signed webhook certificate",
	values:    map[string]any{"image": map[string]any{"tag": "latest"}},
	kustomize: []string{"config/hub/self-signed"},
}, {
	name:      "cert-manager",
	values:    map[string]any{"image": map[string]any{"tag": "latest"}, "webhook": map[string]any{"certManager": map[string]any{"enabled": true}}},
	kustomize: []string{"config/hub/default"},
}, {
	name: "monitoring",
	values: map[string]any{"image": map[string]any{"tag": "latest"}, "metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}, "dashboard": map[string]any{"enabled": true}}},
	kustomize: []string{"config/hub/self-signed", "config/monitoring"},
}}

// TestChartEqualsKustomize renders the chart with Helm's Go packages and compares it, object by
// object, with the kustomize build of config/hub: the same objects with the same content, once
// Helm's own labels and the CRD's keep policy are set aside. A change to config/hub (RBAC, flags,
// the Deployment) that the chart does not follow fails here.
func TestChartEqualsKustomize(t *testing.T) {
	for _, tc := range chartCases {
		t.Run(tc.name, func(t *testing.T) {
			rendered, err := release.RenderChart(chartDir, "urutau-fleet", "urutau-system", tc.values)
			if err != nil {
				t.Fatal(err)
			}
			var built []*unstructured.Unstructured
			for _, k := range tc.kustomize {
				built = append(built, kustomizeBuild(t, "../../"+k)...)
			}
			compareObjects(t, byKey(t, rendered, normalizeChartObject), byKey(t, built, nil))
		})
	}
}

// compareObjects reports every object missing on one side and every difference. The chart
// creates no Namespace: Helm installs into one (--create-namespace).
func compareObjects(t *testing.T, chart, kustomize map[string]map[string]any) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(kustomize)) {
		if strings.HasPrefix(k, "Namespace/") {
			continue
		}
		got, ok := chart[k]
		if !ok {
			t.Errorf("the chart does not render %s", k)
			continue
		}
		if d := cmp.Diff(kustomize[k], got); d != "" {
			t.Errorf("%s differs between kustomize and the chart (-kustomize +chart):\n%s", k, d)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(chart)) {
		if _, ok := kustomize[k]; !ok {
			t.Errorf("the chart renders %s, which config/hub does not have", k)
		}
	}
}

// helmLabels are the labels the chart adds to what config/hub has.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
	"app.kubernetes.io/part-of", "app.kubernetes.io/version"}

// normalizeChartObject removes what only Helm adds.
func normalizeChartObject(o *unstructured.Unstructured) {
	labels := o.GetLabels()
	for _, l := range helmLabels {
		delete(labels, l)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(o.Object, "metadata", "labels")
	} else {
		o.SetLabels(labels)
	}
	annotations := o.GetAnnotations()
	delete(annotations, "helm.sh/resource-policy")
	if len(annotations) == 0 {
		unstructured.RemoveNestedField(o.Object, "metadata", "annotations")
	} else {
		o.SetAnnotations(annotations)
	}
}

// byKey indexes objects by kind/namespace/name, as JSON values, failing on duplicates.
func byKey(t *testing.T, objs []*unstructured.Unstructured, normalize func(*unstructured.Unstructured)) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		o = o.DeepCopy()
		if normalize != nil {
			normalize(o)
		}
		k := fmt.Sprintf("%s/%s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		if _, dup := out[k]; dup {
			t.Errorf("%s twice", k)
		}
		raw, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out[k] = m
	}
	return out
}

// TestChartApplies installs what the chart renders, with both certificate modes and a pinned
// digest, on a real API server, server-side as Helm 4 does, and checks that the hub's identity can
// do what it needs there.
func TestChartApplies(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	// The monitoring case adds only the Prometheus Operator's kinds, which no test API server has.
	for _, tc := range chartCases[:2] {
		t.Run(tc.name, func(t *testing.T) {
			c := startOne(t)
			values := maps.Clone(tc.values)
			values["image"] = map[string]any{"digest": digest}
			objs, err := release.RenderChart(chartDir, "fleet", "urutau-system", values)
			if err != nil {
				t.Fatal(err)
			}
			ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "urutau-system"}}}
			applyAll(t, c.Client, append([]*unstructured.Unstructured{ns}, objs...))
			checkHubImage(t, c.Client, "ghcr.io/urutau-io/urutau-fleet-hub@"+digest)
			checkHubIdentity(t, c, tc.kustomize[0] == "config/hub/self-signed")
		})
	}
}

// applyAll applies objects server-side, Namespaces and CRDs first; cert-manager's objects are
// skipped, and so are the Prometheus Operator's (neither is installed on test API servers;
// TestHubConfigApplies checks what ties cert-manager's to the rest).
func applyAll(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") || strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") {
			continue
		}
		if err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// checkHubImage: the hub Deployment stored on the API server runs image.
func checkHubImage(t *testing.T, c client.Client, image string) {
	t.Helper()
	dep := &unstructured.Unstructured{}
	dep.SetAPIVersion("apps/v1")
	dep.SetKind("Deployment")
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "urutau-system", Name: "urutau-fleet-hub"}, dep); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if got := containers[0].(map[string]any)["image"]; got != image {
		t.Errorf("the hub runs %v, want %s", got, image)
	}
}

// TestChartLint runs `helm lint`'s rules (Helm's own lint package) on the chart, with its
// defaults and with every feature on: no warning, no error.
func TestChartLint(t *testing.T) {
	for _, tc := range chartCases {
		linter := lint.RunAll(chartDir, tc.values, "urutau-system")
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: helm lint: %s", tc.name, m)
			}
		}
	}
}

// TestChartRefusesBadValues: values.schema.json turns a mistyped value into an error that names it,
// before anything is rendered.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"clusterProvider": "secrets"}, "clusterProvider"},
		{map[string]any{"replicaCount": 0}, "replicaCount"},
		{map[string]any{"image": map[string]any{"digest": "sha256:abc"}}, "digest"},
		{map[string]any{"extraArgs": []any{"member-timeout=5s"}}, "extraArgs"},
		{map[string]any{"webhook": map[string]any{"certmanager": map[string]any{"enabled": true}}}, "certmanager"},
	} {
		_, err := release.RenderChart(chartDir, "urutau-fleet", "urutau-system", tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %v: want an error naming %s, got %v", tc.values, tc.want, err)
		}
	}
}

// TestChartAsSubchart renders the chart as a dependency of a parent chart that sets global values,
// as an umbrella chart does: Helm hands the subchart the parent's `global`, which its
// values.schema.json must accept.
func TestChartAsSubchart(t *testing.T) {
	parent := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(parent, "Chart.yaml"), []byte(`apiVersion: v2
name: platform
version: 1.0.0
dependencies:
  - name: urutau-fleet
    version: ">=0.0.0-0"
`), 0o644))
	mustDo(t, os.CopyFS(filepath.Join(parent, "charts", "urutau-fleet"), os.DirFS(chartDir)))
	values := map[string]any{
		"global":       map[string]any{"imageRegistry": "registry.example", "storageClass": "fast"},
		"urutau-fleet": map[string]any{"replicaCount": 3},
	}
	objs, err := release.RenderChart(parent, "platform", "urutau-system", values)
	if err != nil {
		t.Fatalf("the chart as a subchart with global values: %v", err)
	}
	var replicas any
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			replicas, _, _ = unstructured.NestedFieldNoCopy(o.Object, "spec", "replicas")
		}
	}
	if fmt.Sprint(replicas) != "3" {
		t.Errorf("the parent's value for the subchart did not reach it: the hub Deployment has %v replicas, want 3", replicas)
	}
	values["urutau-fleet"] = map[string]any{"replicaCount": 0}
	if _, err := release.RenderChart(parent, "platform", "urutau-system", values); err == nil || !strings.Contains(err.Error(), "replicaCount") {
		t.Errorf("as a subchart, the schema still refuses replicaCount 0: got %v", err)
	}
}

// TestChartKubeVersion: Helm installs the chart on the Kubernetes versions docs/install.md
// supports, the one the tests run included, and refuses those older than the CRDs need.
func TestChartKubeVersion(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]bool{"v1.37.2": true, "v1.35.0": true, "v1.29.0": true, "v1.28.9": false, "v1.38.0-alpha.1": true} {
		if got := chartv2util.IsCompatibleRange(chrt.Metadata.KubeVersion, v); got != want {
			t.Errorf("kubeVersion %q on Kubernetes %s: installable %v, want %v", chrt.Metadata.KubeVersion, v, got, want)
		}
	}
}
