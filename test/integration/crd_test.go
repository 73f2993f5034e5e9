// Package integration holds tests that need a real API server but no controller: the CRD's own
// schema and CEL rules, and the renderer's output as a real API server validates it.
package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/testenv"
)

const fieldOwner = client.FieldOwner("integration-test")

// TestExamplesAcceptedUnchanged applies every example CDCPipeline and PlacementPolicy to a real API
// server and reads it back: nothing is rejected and nothing is pruned. The single-cluster example
// uses every field of the single-cluster CRD, so this is the "existing manifests apply unchanged"
// promise.
func TestExamplesAcceptedUnchanged(t *testing.T) {
	c := startOne(t)
	files, err := filepath.Glob("../../examples/*/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples not found (%v): %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			for _, want := range readObjects(t, f) {
				if want.GetKind() != "CDCPipeline" && want.GetKind() != "PlacementPolicy" {
					continue
				}
				ctx := t.Context()
				if want.GetNamespace() != "" {
					ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: want.GetNamespace()}}
					if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
						t.Fatal(err)
					}
				}
				if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
					t.Fatalf("rejected: %v", err)
				}
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(want.GroupVersionKind())
				if err := c.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(normalize(t, want.Object["spec"]), normalize(t, got.Object["spec"])); diff != "" {
					t.Fatalf("the API server changed or pruned the spec (-sent +stored):\n%s", diff)
				}
			}
		})
	}
}

// TestCRDRejects proves the static rules hold in the CRD itself, with no webhook running.
func TestCRDRejects(t *testing.T) {
	c := startOne(t)
	base := func() map[string]any {
		return map[string]any{
			"definition": map[string]any{"inline": map[string]any{
				"pipeline": "p", "source": map[string]any{"kind": "mysql", "serverId": "1"},
				"sink":   map[string]any{"type": "iceberg+rest", "namespace": "raw"},
				"tables": []any{map[string]any{"source": "s.t", "target": "raw.t", "primaryKey": []any{"id"}}},
			}},
		}
	}
	cases := []struct {
		name   string
		objNam string
		mutate func(spec map[string]any)
		// every fragment must appear in the API server's message
		want []string
	}{
		{"two definition sources", "", func(s map[string]any) {
			s["definition"].(map[string]any)["s3"] = "s3://bucket/pipeline.yaml"
		}, []string{"spec.definition", "exactly one of image, s3 or inline"}},
		{"no definition source", "", func(s map[string]any) {
			s["definition"] = map[string]any{}
		}, []string{"spec.definition", "exactly one of image, s3 or inline"}},
		{"coordinator cpu not a quantity", "", func(s map[string]any) {
			s["coordinator"] = map[string]any{"cpu": "2GB"}
		}, []string{"spec.coordinator.cpu", "must be a resource quantity"}},
		{"worker memory with a space", "", func(s map[string]any) {
			s["worker"] = map[string]any{"memory": "1 Gi"}
		}, []string{"spec.worker.memory", "must be a resource quantity"}},
		{"override quantity", "", func(s map[string]any) {
			s["overrides"] = []any{map[string]any{"clusters": []any{"a"}, "worker": map[string]any{"cpu": "lots"}}}
		}, []string{"spec.overrides[0].worker.cpu", "must be a resource quantity"}},
		{"override without clusters", "", func(s map[string]any) {
			s["overrides"] = []any{map[string]any{"clusters": []any{}, "image": "x"}}
		}, []string{"spec.overrides[0].clusters", "at least 1"}},
		{"log level", "", func(s map[string]any) {
			s["logLevel"] = "verbose"
		}, []string{"spec.logLevel", "Unsupported value"}},
		{"negative chunk size", "", func(s map[string]any) {
			s["coordinator"] = map[string]any{"snapshot": map[string]any{"chunkSize": -1}}
		}, []string{"spec.coordinator.snapshot.chunkSize", "greater than or equal to 0"}},
		{"tls without client secret", "", func(s map[string]any) {
			s["coordinator"] = map[string]any{"tls": map[string]any{"serverSecret": "s"}}
		}, []string{"spec.coordinator.tls.clientSecret", "Required"}},
		{"eventlog without bucket", "", func(s map[string]any) {
			s["coordinator"] = map[string]any{"eventlog": map[string]any{"endpoint": "http://minio"}}
		}, []string{"spec.coordinator.eventlog.bucket", "Required"}},
		{"quantity with a huge exponent (the parser would spin)", "", func(s map[string]any) {
			s["worker"] = map[string]any{"cpu": "1e-999999999"}
		}, []string{"spec.worker.cpu", "must be a resource quantity"}},
		{"empty cluster selector", "", func(s map[string]any) {
			s["placement"] = map[string]any{"clusterSelector": map[string]any{}}
		}, []string{"spec.placement", "clusterSelector must not be empty"}},
		{"cluster name not DNS-1123", "", func(s map[string]any) {
			s["placement"] = map[string]any{"clusters": []any{"EU_1"}}
		}, []string{"spec.placement.clusters[0]", "should match"}},
		{"name too long", strings.Repeat("n", 41), func(map[string]any) {},
			[]string{"metadata.name must be at most 40 characters"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := base()
			tc.mutate(spec)
			name := tc.objNam
			if name == "" {
				name = "bad"
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "urutau.io/v1alpha1", "kind": "CDCPipeline",
				"metadata": map[string]any{"name": name, "namespace": "default"},
				"spec":     spec,
			}}
			err := c.Client.Create(t.Context(), obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			for _, frag := range tc.want {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q does not mention %q", err.Error(), frag)
				}
			}
		})
	}

	// The boundary itself is accepted: 40 characters.
	ok := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "urutau.io/v1alpha1", "kind": "CDCPipeline",
		"metadata": map[string]any{"name": strings.Repeat("n", 40), "namespace": "default"},
		"spec":     base(),
	}}
	if err := c.Client.Create(t.Context(), ok); err != nil {
		t.Fatalf("a 40-character name must be accepted: %v", err)
	}
}

func startOne(t *testing.T) *testenv.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	clusters, err := testenv.Start(t.Context(), "crd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := clusters[0].Stop(); err != nil {
			t.Error(err)
		}
	})
	return clusters[0]
}

// readObjects reads every YAML document of a file.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(raw), "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetNamespace() == "" && u.GetKind() == "CDCPipeline" {
			u.SetNamespace(metav1.NamespaceDefault)
		}
		out = append(out, u)
	}
	return out
}

// normalize round-trips a value through JSON so numbers decode the same way on both sides.
func normalize(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
