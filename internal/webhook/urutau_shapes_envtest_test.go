package webhook

import (
	"os"
	"path/filepath"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/spec"
)

// urutauShapesDir holds urutau's own pipeline shapes (internal/spec/testdata/urutau/README.md).
var urutauShapesDir = filepath.Join("..", "spec", "testdata", "urutau")

// renders checks that the hub renders the stored pipeline, and that the definition it writes into
// pipeline.yaml is one the coordinator loads.
func renders(g Gomega, p *urutauv1alpha1.CDCPipeline) *coordinator.Workload {
	w, err := coordinator.Render(p, coordinator.Settings{DefaultImage: "urutau:dev", KEDAPrometheusAddress: "http://prometheus:9090"})
	g.Expect(err).NotTo(HaveOccurred(), p.Name)
	j, err := yaml.YAMLToJSON([]byte(w.ConfigMap.Data[coordinator.PipelineFileKey]))
	g.Expect(err).NotTo(HaveOccurred())
	_, errs := spec.Parse(j)
	g.Expect(errs).To(BeEmpty(), "pipeline.yaml of %s", p.Name)
	g.Expect(w.StatefulSet.Spec.Template.Annotations).To(HaveKeyWithValue(urutauv1alpha1.AnnotationSpecHash, w.SpecHash))
	return w
}

// secretsFor names the Secrets a shape needs, as its user would: the source Secret unless the
// definition connects by itself (source.uri, or the postgres block), the catalog Secret unless it
// carries sink.uri.
func secretsFor(name string, inline []byte) urutauv1alpha1.Secrets {
	in, errs := spec.Parse(inline)
	Expect(errs).To(BeEmpty(), name)
	var s urutauv1alpha1.Secrets
	if in.Source.URI == "" && in.Source.Postgres == nil {
		s.Source = name + "-source"
	}
	if in.Sink.URI == "" {
		s.Catalog = name + "-catalog"
	}
	if in.Source.Tunnels() {
		s.SSH = name + "-ssh"
	}
	return s
}

// admitAndRender creates the pipeline of the definition in file f on the hub, checks that the
// stored definition parses and renders, and deletes it again (several of urutau's MySQL pipelines
// replicate as server id 1101: one at a time).
func admitAndRender(ctx SpecContext, ns, f string) *spec.Inline {
	y, err := os.ReadFile(f)
	Expect(err).NotTo(HaveOccurred())
	j, err := yaml.YAMLToJSON(y)
	Expect(err).NotTo(HaveOccurred())
	// The fleet requires the CR to be named after its pipeline (docs/upgrading.md).
	shape, errs := spec.Parse(j)
	Expect(errs).To(BeEmpty(), f)
	name := shape.Pipeline
	p := &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: j}},
				Secrets:    secretsFor(name, j),
			},
			Placement: urutauv1alpha1.Placement{Clusters: []string{"east"}},
		},
	}
	Expect(k8sClient.Create(ctx, p)).To(Succeed(), "%s was refused", name)

	var stored urutauv1alpha1.CDCPipeline
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &stored)).To(Succeed())
	in, errs := spec.Parse(stored.Spec.Definition.Inline.Raw)
	Expect(errs).To(BeEmpty())
	renders(Default, &stored)
	Expect(k8sClient.Delete(ctx, &stored)).To(Succeed())
	return in
}

// What a user migrating from the single-cluster operator applies: urutau's sample CR and the
// pipeline shapes of urutau's own tests and docs, one for each source kind, discovery and each
// registered sink. Admitted by the webhook on a real API server, and rendered from what the API
// server stored. (Placed on members: internal/fleet's suite runs the same dialect.)
var _ = Describe("urutau's own pipelines", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("admits and renders every shape: MySQL, Postgres with slotName, discovery, each registered sink", func(ctx SpecContext) {
		files, err := filepath.Glob(filepath.Join(urutauShapesDir, "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "provenance.yaml" })
		Expect(files).To(HaveLen(7))
		sinks := map[string]bool{}
		for _, f := range files {
			in := admitAndRender(ctx, ns, f)
			sinks[in.Sink.Type] = true
		}
		Expect(sinks).To(HaveLen(len(spec.SinkTypes)), "every registered sink has a shape")
	})

	It("admits and renders every pipeline of urutau's examples/ as written", func(ctx SpecContext) {
		files, err := filepath.Glob(filepath.Join(urutauShapesDir, "examples", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(8))
		for _, f := range files {
			admitAndRender(ctx, ns, f)
		}
	})

	It("admits urutau's sample CDCPipeline as it is written, pruning the fields its CRD no longer has", func(ctx SpecContext) {
		y, err := os.ReadFile(filepath.Join(urutauShapesDir, "samples", "cdcpipeline.yaml"))
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(y, &u.Object)).To(Succeed())
		u.SetNamespace(ns)
		warnings.Take()
		// As written: the API client sends every field, the stale ones included.
		Expect(warned.Create(ctx, u)).To(Succeed())
		Expect(warnings.Take()).To(ContainElement(ContainSubstring("cpu_overhead")))

		var stored urutauv1alpha1.CDCPipeline
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop-mysql"}, &stored)).To(Succeed())
		Expect(stored.Spec.Worker).To(Equal(urutauv1alpha1.WorkerSpec{CPU: "500m", Memory: "1Gi"}))
		w := renders(Default, &stored)
		Expect(w.ScaledObjects).To(HaveLen(1), "workers.max 6 turns KEDA on for raw.orders")
		Expect(k8sClient.Delete(ctx, &stored)).To(Succeed())
	})

	It("refuses the fleet's former dialect with the field to fix", func(ctx SpecContext) {
		for _, tc := range []struct {
			name, path string
			change     func(d doc)
		}{
			{"number-server-id", "spec.definition.inline.source.serverId", func(d doc) { source(d)["serverId"] = 1101 }},
			{"iceberg-sink", "spec.definition.inline.sink.type", func(d doc) { sink(d)["type"] = "iceberg" }},
			{"postgres-slot", "spec.definition.inline.source.postgres.slot", func(d doc) {
				d["source"] = doc{"kind": "postgres", "slotName": "s", "postgres": doc{"host": "h", "database": "d", "slot": "s"}}
			}},
		} {
			err := k8sClient.Create(ctx, fresh(ns, tc.name, edit(tc.change)))
			Expect(err).To(MatchError(ContainSubstring(webhookDenied)), tc.name)
			Expect(causes(err)).To(ContainElement(tc.path), "%s: %v", tc.name, err)
		}
	})
})
