package gitops

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/testenv"
)

// exampleRoot is the worked GitOps repository layout.
const exampleRoot = "examples/gitops"

// overlay is what one kustomization directory of examples/gitops must build to.
type overlay struct {
	dir  string
	name string
	want func(t *testing.T, p *urutauv1alpha1.CDCPipeline, in inline)
	// warnings are fragments the admission webhook must warn with (and no other warning).
	warnings []string
}

// inline is the part of spec.definition.inline the overlays change.
type inline struct {
	Pipeline string `json:"pipeline"`
	Source   struct {
		ServerID json.Number `json:"serverId"`
	} `json:"source"`
	Sink struct {
		Warehouse string `json:"warehouse"`
	} `json:"sink"`
	Tables []struct {
		Target string `json:"target"`
	} `json:"tables"`
}

var overlays = []overlay{
	{
		dir: "base", name: "orders",
		want: func(t *testing.T, p *urutauv1alpha1.CDCPipeline, in inline) {
			expect(t, "placement (runs nowhere)", p.Spec.Placement, urutauv1alpha1.Placement{})
			expect(t, "serverId", in.Source.ServerID.String(), "5100")
			expect(t, "overrides", len(p.Spec.Overrides), 0)
		},
	},
	{
		dir: "clusters/eu-1", name: "orders-eu-1",
		want: func(t *testing.T, p *urutauv1alpha1.CDCPipeline, in inline) {
			expect(t, "placement", p.Spec.Placement, urutauv1alpha1.Placement{Clusters: []string{"eu-1"}})
			expect(t, "serverId", in.Source.ServerID.String(), "5101")
			expect(t, "warehouse", in.Sink.Warehouse, "s3://lake-eu/orders")
			expect(t, "coordinator cpu/memory", []string{p.Spec.Coordinator.CPU, p.Spec.Coordinator.Memory}, []string{"1", "2Gi"})
			expect(t, "image (from base)", p.Spec.Image, "ghcr.io/urutau-io/urutau:v1.8.0")
			expect(t, "logLevel (from base)", p.Spec.LogLevel, "info")
		},
	},
	{
		dir: "clusters/us-1", name: "orders-us-1",
		want: func(t *testing.T, p *urutauv1alpha1.CDCPipeline, in inline) {
			expect(t, "placement", p.Spec.Placement, urutauv1alpha1.Placement{Clusters: []string{"us-1"}})
			expect(t, "serverId", in.Source.ServerID.String(), "5102")
			expect(t, "warehouse", in.Sink.Warehouse, "s3://lake-us/orders")
			expect(t, "image", p.Spec.Image, "ghcr.io/urutau-io/urutau:v1.9.0-rc.1")
			expect(t, "logLevel", p.Spec.LogLevel, "debug")
			expect(t, "coordinator cpu/memory (from base)", []string{p.Spec.Coordinator.CPU, p.Spec.Coordinator.Memory}, []string{"500m", "1Gi"})
		},
	},
	{
		dir: "by-label", name: "orders-apac",
		want: func(t *testing.T, p *urutauv1alpha1.CDCPipeline, in inline) {
			expect(t, "placement", p.Spec.Placement, urutauv1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"region": "apac"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"sandbox"}},
				},
			}})
			expect(t, "serverId", in.Source.ServerID.String(), "5110")
			expect(t, "warehouse", in.Sink.Warehouse, "s3://lake-apac/orders")
			expect(t, "overrides", p.Spec.Overrides, []urutauv1alpha1.ClusterOverride{{
				Clusters:    []string{"apac-2"},
				Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "2", Memory: "4Gi"},
				Worker:      &urutauv1alpha1.ResourceOverride{CPU: "1", Memory: "2Gi"},
			}})
		},
		warnings: []string{
			`spec.placement can select more than one member cluster`,
			`spec.overrides[0].clusters[0]: cluster "apac-2" is not in spec.placement.clusters`,
		},
	},
}

func expect[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// builtOverlay is one overlay's build output.
type builtOverlay struct {
	overlay
	obj   *unstructured.Unstructured
	typed *urutauv1alpha1.CDCPipeline
}

// buildOverlays builds every kustomization of examples/gitops and checks each result: one
// CDCPipeline in namespace cdc with the expected name, placement and overrides, the rest of the
// spec as in base. Every kustomization directory must be listed in overlays.
func buildOverlays(t *testing.T) []builtOverlay {
	t.Helper()
	root := filepath.Join(RepoRoot(), exampleRoot)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "kustomization.yaml" {
			rel, rerr := filepath.Rel(root, filepath.Dir(path))
			found = append(found, filepath.ToSlash(rel))
			return rerr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, o := range overlays {
		listed = append(listed, o.dir)
	}
	slices.Sort(found)
	slices.Sort(listed)
	if !slices.Equal(found, listed) {
		t.Fatalf("kustomizations under %s: %v; the test expects %v", exampleRoot, found, listed)
	}

	base := readBasePipeline(t)
	var out []builtOverlay
	for _, o := range overlays {
		objs, err := build(filepath.Join(root, o.dir))
		if err != nil {
			t.Fatalf("%s: %v", o.dir, err)
		}
		if len(objs) != 1 || objs[0].GetKind() != "CDCPipeline" || objs[0].GetAPIVersion() != "urutau.io/v1alpha1" {
			t.Fatalf("%s: want exactly one urutau.io/v1alpha1 CDCPipeline, got %d objects", o.dir, len(objs))
		}
		u := objs[0]
		if u.GetName() != o.name || u.GetNamespace() != "cdc" {
			t.Errorf("%s: built %s/%s, want cdc/%s", o.dir, u.GetNamespace(), u.GetName(), o.name)
		}
		p := &urutauv1alpha1.CDCPipeline{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, p, true); err != nil {
			t.Fatalf("%s: the built object does not fit the API types: %v", o.dir, err)
		}
		var in inline
		if p.Spec.Definition.Inline == nil {
			t.Fatalf("%s: no spec.definition.inline", o.dir)
		}
		if err := json.Unmarshal(p.Spec.Definition.Inline.Raw, &in); err != nil {
			t.Fatalf("%s: %v", o.dir, err)
		}
		t.Run("build/"+o.dir, func(t *testing.T) {
			o.want(t, p, in)
			// Each overlay names its pipeline after its CDCPipeline, as the hub requires.
			expect(t, "pipeline", in.Pipeline, p.Name)
			// What no overlay changes stays as in base.
			expect(t, "tables", in.Tables, base.Tables)
			expect(t, "secrets", p.Spec.Secrets, urutauv1alpha1.Secrets{Source: "orders-mysql", Catalog: "lake-catalog"})
		})
		out = append(out, builtOverlay{overlay: o, obj: u, typed: p})
	}
	return out
}

func readBasePipeline(t *testing.T) inline {
	t.Helper()
	u, err := ReadObject(filepath.Join(RepoRoot(), exampleRoot, "base", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(u.Object["spec"].(map[string]any)["definition"].(map[string]any)["inline"])
	if err != nil {
		t.Fatal(err)
	}
	var in inline
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Tables) == 0 {
		t.Fatal("the base pipeline has no tables")
	}
	return in
}

// TestOverlaysBuild builds every overlay with the kustomize Go API and checks placement and
// overrides. It needs no API server.
func TestOverlaysBuild(t *testing.T) {
	buildOverlays(t)
}

// TestGitOpsManifests checks the Flux and Argo CD manifests of the example: they point at
// directories that exist, the Flux health checks are the same everywhere, and the Argo CD
// customization kustomization carries health.lua byte for byte into argocd-cm.
func TestGitOpsManifests(t *testing.T) {
	ks, err := ReadFluxKustomizations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != len(overlays)-1 {
		t.Errorf("want one Flux Kustomization per overlay except base, got %d", len(ks))
	}
	names := map[string]bool{}
	for _, k := range ks {
		names[k.Metadata.Name] = true
	}
	for _, k := range ks {
		t.Run("flux/"+k.Metadata.Name, func(t *testing.T) {
			expect(t, "apiVersion", k.APIVersion, "kustomize.toolkit.fluxcd.io/v1")
			if _, err := os.Stat(filepath.Join(RepoRoot(), k.Spec.Path, "kustomization.yaml")); err != nil {
				t.Errorf("spec.path %q: %v", k.Spec.Path, err)
			}
			if !k.Spec.Wait || !k.Spec.Prune || k.Spec.Timeout == "" || k.Spec.SourceRef.Name == "" {
				t.Errorf("want wait, prune, a timeout and a sourceRef: %+v", k.Spec)
			}
			for _, d := range k.Spec.DependsOn {
				if !names[d.Name] {
					t.Errorf("dependsOn %q: no such Kustomization", d.Name)
				}
			}
			expect(t, "healthCheckExprs", k.Spec.HealthCheckExprs, ks[0].Spec.HealthCheckExprs)
			if _, err := NewFluxEvaluator(k.Spec.HealthCheckExprs[0]); err != nil {
				t.Error(err)
			}
		})
	}

	apps, err := filepath.Glob(filepath.Join(RepoRoot(), exampleRoot, "argocd", "*.yaml"))
	if err != nil || len(apps) == 0 {
		t.Fatalf("no Argo CD manifests: %v", err)
	}
	for _, f := range apps {
		objs, err := func() ([]*unstructured.Unstructured, error) {
			raw, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			return DecodeObjects(raw)
		}()
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			t.Run("argocd/"+u.GetKind()+"/"+u.GetName(), func(t *testing.T) {
				expect(t, "apiVersion", u.GetAPIVersion(), "argoproj.io/v1alpha1")
				var path []string
				switch u.GetKind() {
				case "Application":
					p, _, _ := unstructured.NestedString(u.Object, "spec", "source", "path")
					path = []string{p}
				case "ApplicationSet":
					gens, _, _ := unstructured.NestedSlice(u.Object, "spec", "generators")
					for _, g := range gens {
						dirs, _, _ := unstructured.NestedSlice(g.(map[string]any), "git", "directories")
						for _, d := range dirs {
							path = append(path, d.(map[string]any)["path"].(string))
						}
					}
				default:
					t.Fatalf("unexpected kind %s", u.GetKind())
				}
				if len(path) == 0 {
					t.Fatal("no source path")
				}
				for _, p := range path {
					matches, _ := filepath.Glob(filepath.Join(RepoRoot(), p, "kustomization.yaml"))
					if len(matches) == 0 {
						t.Errorf("path %q holds no kustomization", p)
					}
				}
			})
		}
	}

	t.Run("argocd-cm", func(t *testing.T) {
		objs, err := build(filepath.Join(RepoRoot(), "config", "argocd"))
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 1 || objs[0].GetKind() != "ConfigMap" || objs[0].GetName() != "argocd-cm" || objs[0].GetNamespace() != "argocd" {
			t.Fatalf("want the ConfigMap argocd/argocd-cm, got %v", objs)
		}
		got, _, _ := unstructured.NestedString(objs[0].Object, "data", "resource.customizations.health.urutau.io_CDCPipeline")
		script, err := healthScript()
		if err != nil {
			t.Fatal(err)
		}
		if got != script {
			t.Error("argocd-cm does not carry health.lua unchanged")
		}
	})
}

// requireAssets fails (never skips, except with -short) when the control plane is missing.
func requireAssets(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane (KUBEBUILDER_ASSETS): skipped with -short")
	}
	if os.Getenv(testenv.AssetsEnv) == "" {
		t.Fatalf("%s is not set: run with KUBEBUILDER_ASSETS=$(hack/control-plane.sh print-dir), or -short to skip", testenv.AssetsEnv)
	}
}
