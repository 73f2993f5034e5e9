package coordinator

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// upstreamDir holds urutau's pipelines and sample CR (internal/spec/testdata/urutau/README.md;
// provenance.yaml there names the revisions).
var upstreamDir = filepath.Join("..", "spec", "testdata", "urutau")

// upstreamPipelines reads urutau's pipeline definitions kept in internal/spec's testdata: the
// shapes and every example, by path without .yaml.
func upstreamPipelines(t testing.TB) map[string]string {
	t.Helper()
	top, err1 := filepath.Glob(filepath.Join(upstreamDir, "*.yaml"))
	examples, err2 := filepath.Glob(filepath.Join(upstreamDir, "examples", "*.yaml"))
	if err1 != nil || err2 != nil || len(top) == 0 || len(examples) == 0 {
		t.Fatalf("no upstream pipelines: %v %v", err1, err2)
	}
	out := map[string]string{}
	for _, f := range append(top, examples...) {
		if filepath.Base(f) == "provenance.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(upstreamDir, f)
		out[strings.TrimSuffix(filepath.ToSlash(rel), ".yaml")] = string(b)
	}
	return out
}

// TestUpstreamPipelinesRender: every pipeline of urutau's examples and shapes renders unchanged,
// its pipeline.yaml loads back to the same definition, and the names the coordinator will give the
// worker StatefulSets are the ones the Role and the ScaledObjects name.
func TestUpstreamPipelinesRender(t *testing.T) {
	pipelines := upstreamPipelines(t)
	if len(pipelines) < 15 {
		t.Errorf("%d upstream pipelines, want the 7 shapes and the 8 examples", len(pipelines))
	}
	for name, y := range pipelines {
		t.Run(name, func(t *testing.T) {
			p := pipeline(t, "upstream", y, func(s *urutauv1alpha1.CDCPipelineSpec) {
				s.Secrets = urutauv1alpha1.Secrets{Source: "src", Catalog: "cat"}
			})
			in, errs := spec.Parse(p.Spec.Definition.Inline.Raw)
			if len(errs) > 0 {
				t.Fatalf("Parse: %v", errs)
			}
			w, err := Render(p, Settings{DefaultImage: testImage, KEDAPrometheusAddress: "http://prometheus:9090"})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			back, err := yaml.YAMLToJSON([]byte(w.ConfigMap.Data[PipelineFileKey]))
			if err != nil {
				t.Fatal(err)
			}
			if again, errs := spec.Parse(back); len(errs) > 0 || !reflect.DeepEqual(in, again) {
				t.Errorf("pipeline.yaml does not load back to the definition: %v", errs)
			}
			checkWorkerNames(t, in, w)
		})
	}
}

// checkWorkerNames: the Role's worker resourceNames and the ScaledObjects name exactly the worker
// groups urutau derives from the tables.
func checkWorkerNames(t *testing.T, in *spec.Inline, w *Workload) {
	t.Helper()
	var groups, scaled []string
	for _, tb := range in.Tables {
		g := spec.WorkerGroupPrefix(in.Pipeline, tb.Target)
		groups = append(groups, g)
		if tb.MaxWorkers() > 0 {
			scaled = append(scaled, g)
		}
		if _, ok := w.ConfigMap.Data[spec.WorkerPodTemplateKey(tb.Target)]; !ok {
			t.Errorf("no worker pod template for %q", tb.Target)
		}
	}
	slices.Sort(groups)
	var named []string
	for _, r := range w.Role.Rules {
		if slices.Contains(r.Resources, "statefulsets") && len(r.ResourceNames) > 0 {
			named = r.ResourceNames
		}
	}
	if !in.Source.Discovers() && !slices.Equal(named, groups) {
		t.Errorf("Role names the worker StatefulSets %v, want %v", named, groups)
	}
	var got []string
	for _, so := range w.ScaledObjects {
		if so.Spec.ScaleTargetRef.Name != so.Name {
			t.Errorf("ScaledObject %s scales %s", so.Name, so.Spec.ScaleTargetRef.Name)
		}
		got = append(got, so.Name)
	}
	slices.Sort(scaled)
	if !slices.Equal(got, scaled) {
		t.Errorf("ScaledObjects %v, want %v", got, scaled)
	}
}

// TestUpstreamSampleCRRenders: urutau's sample CDCPipeline (config/samples) renders as written.
// Its worker cpu_overhead and memory_overhead, and its supervision keys, are spellings the newest
// urutau CRD (api/v1alpha1/types.go @1e5656b) no longer has: the API server prunes them, here as
// under the single-cluster operator, so the workers' limits equal their requests.
func TestUpstreamSampleCRRenders(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(upstreamDir, "samples", "cdcpipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p urutauv1alpha1.CDCPipeline
	if err := yaml.Unmarshal(b, &p); err != nil { // not strict: the API server prunes unknown fields
		t.Fatal(err)
	}
	p.Namespace = testNamespace
	if want := (urutauv1alpha1.WorkerSpec{CPU: "500m", Memory: "1Gi"}); p.Spec.Worker != want {
		t.Errorf("spec.worker = %+v, want %+v", p.Spec.Worker, want)
	}
	w, err := Render(&p, Settings{DefaultImage: testImage, KEDAPrometheusAddress: "http://prometheus:9090"})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if len(w.ScaledObjects) != 1 || w.ScaledObjects[0].Name != "shop-mysql-raw-orders" {
		t.Errorf("ScaledObjects %v, want shop-mysql-raw-orders (workers.max 6)", w.ScaledObjects)
	}
	var tmpl corev1.PodTemplateSpec
	if err := yaml.Unmarshal([]byte(w.ConfigMap.Data[spec.WorkerPodTemplateKey("raw.orders")]), &tmpl); err != nil {
		t.Fatal(err)
	}
	res := tmpl.Spec.Containers[0].Resources
	if !res.Limits.Cpu().Equal(resource.MustParse("500m")) || !res.Limits.Memory().Equal(resource.MustParse("1Gi")) {
		t.Errorf("worker limits %v, want the requests: the snake-case overheads are pruned", res.Limits)
	}
	in, errs := spec.Parse(p.Spec.Definition.Inline.Raw)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	checkWorkerNames(t, in, w)
}

// FuzzParseRenders holds spec.Parse to its promise: it is the one check between admission and
// rendering, so any definition it accepts renders without error (a pipeline admitted and then
// terminated with invalid_spec is the failure this guards against). Seeds: urutau's pipelines and
// the names that once slipped through. Run it with
//
//	go test ./internal/coordinator -run '^$' -fuzz FuzzParseRenders -fuzztime 2m
func FuzzParseRenders(f *testing.F) {
	for _, y := range upstreamPipelines(f) {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j)
	}
	for _, tables := range []string{
		`[{"source":"a","target":"raw.orders","primaryKey":["id"]},{"source":"b","target":"raw-orders","primaryKey":["id"]}]`,
		`[{"source":"a","target":"raw/orders","primaryKey":["id"]}]`,
		`[{"source":"a","target":"raw.` + strings.Repeat("o", 70) + `","primaryKey":["id"]}]`,
		`[{"source":"a","target":"raw.orders","primaryKey":["id"],"workers":{"number":2147483648,"cpu":"1e-999999999"}}]`,
		`[{"source":"a","target":"raw.orders","primaryKey":["id"],"workers":{"max":3,"memory":"-1Gi"}}]`,
	} {
		f.Add([]byte(`{"pipeline":"shop","source":{"kind":"mysql"},"sink":{"type":"clickhouse","namespace":"raw"},"tables":` + tables + `}`))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, errs := spec.Parse(raw); len(errs) > 0 {
			return
		}
		p := pipeline(t, "fuzz", "{}", func(s *urutauv1alpha1.CDCPipelineSpec) {
			s.Definition.Inline = &runtime.RawExtension{Raw: raw}
		})
		if _, err := Render(p, Settings{DefaultImage: testImage, KEDAPrometheusAddress: "http://prometheus:9090"}); err != nil {
			t.Fatalf("Parse accepted %s, Render refused it: %v", raw, err)
		}
	})
}
