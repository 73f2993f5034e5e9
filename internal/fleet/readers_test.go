package fleet_test

import (
	"context"
	"fmt"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/testenv"
	"github.com/urutau-io/fleet/test/gitops"
)

// kedaInline has one autoscaled table (max 4) and one without max.
const kedaInline = `
pipeline: clicks
source:
  kind: mysql
  serverId: "2001"
sink:
  type: iceberg+rest
  namespace: raw
  warehouse: s3://lake/clicks
tables:
- source: web.clicks
  target: raw.clicks
  primaryKey: [id]
  workers: {number: 1, max: 4}
- source: web.sessions
  target: raw.sessions
  primaryKey: [id]
`

// What the readers of status conclude, on the real objects the hub writes: kstatus (kpt, Flux
// without health expressions), the Argo CD health script and the example Flux health expressions.
var _ = Describe("Status readers and KEDA per member", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	readers := func(g Gomega, ctx context.Context, key types.NamespacedName) (status.Status, string, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(urutauv1alpha1.GroupVersion.WithKind("CDCPipeline"))
		g.Expect(hubClient.Get(ctx, key, u)).To(Succeed())
		k, _, err := testenv.KStatus(u)
		g.Expect(err).NotTo(HaveOccurred())
		argo, err := gitops.ArgoHealth(u)
		g.Expect(err).NotTo(HaveOccurred())
		flux, err := gitops.FluxHealth(u)
		g.Expect(err).NotTo(HaveOccurred())
		return k, argo.Status, string(flux)
	}
	expectReaders := func(ctx context.Context, key types.NamespacedName, k status.Status, argo string, flux status.Status) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			gotK, gotArgo, gotFlux := readers(g, ctx, key)
			g.Expect([]string{string(gotK), gotArgo, gotFlux}).To(Equal([]string{string(k), argo, string(flux)}),
				"kstatus, Argo CD, Flux")
		}).Should(Succeed())
		figure("readers: kstatus %s, Argo CD %s, Flux %s", k, argo, flux)
	}

	It("reads InProgress during a rollout, Current when every member is ready, Failed when terminated", func(ctx SpecContext) {
		p := newPipeline(ns, "readers", onClusters("a", "b"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)

		By("submitted: applied but no coordinator ready yet")
		expectReaders(ctx, key, status.InProgressStatus, "Progressing", status.InProgressStatus)

		By("ready on one member only")
		markReady(ctx, members["a"], ns, p.Name)
		Consistently(func(g Gomega) {
			k, _, _ := readers(g, ctx, key)
			g.Expect(k).To(Equal(status.InProgressStatus))
		}).Should(Succeed())

		By("ready on both")
		markReady(ctx, members["b"], ns, p.Name)
		expectReaders(ctx, key, status.CurrentStatus, "Healthy", status.CurrentStatus)

		By("a spec change: in progress until the new template runs ready everywhere")
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Image = "ghcr.io/urutau-io/coordinator:next" })
		Eventually(func(g Gomega) {
			cur := getPipeline(g, ctx, key)
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation), "the hub applied the new generation")
		}).Should(Succeed())
		// The members' StatefulSets report the old pods until their controller (played here)
		// rolls the new template: never Current meanwhile.
		Consistently(func(g Gomega) {
			k, argo, _ := readers(g, ctx, key)
			g.Expect(k).To(Equal(status.InProgressStatus))
			g.Expect(argo).To(Equal("Progressing"))
		}).Should(Succeed())
		markReady(ctx, members["a"], ns, p.Name)
		markReady(ctx, members["b"], ns, p.Name)
		expectReaders(ctx, key, status.CurrentStatus, "Healthy", status.CurrentStatus)

		By("terminated by a person")
		Eventually(func(g Gomega) {
			cur := getPipeline(g, ctx, key)
			cur.Status.Terminated = &urutauv1alpha1.Terminated{Reason: "ManualStop", Message: "stopped for maintenance"}
			g.Expect(hubClient.Status().Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		expectReaders(ctx, key, status.FailedStatus, "Degraded", status.FailedStatus)
	})

	It("renders ScaledObjects with each member's Prometheus address, none without one, and skips a member without KEDA", func(ctx SpecContext) {
		annotate := func(ctx context.Context, member, address string) {
			Eventually(func(g Gomega) {
				s := &corev1.Secret{}
				g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: member}, s)).To(Succeed())
				if address == "" {
					delete(s.Annotations, fleet.AnnotationKEDAPrometheusAddress)
				} else {
					if s.Annotations == nil {
						s.Annotations = map[string]string{}
					}
					s.Annotations[fleet.AnnotationKEDAPrometheusAddress] = address
				}
				g.Expect(hubClient.Update(ctx, s)).To(Succeed())
			}).Should(Succeed())
		}
		// a and c get an address from their inventory entry; b has none and the hub flag is empty.
		annotate(ctx, "a", "http://prometheus-a.monitoring:9090")
		annotate(ctx, "c", "http://prometheus-c.monitoring:9090")
		DeferCleanup(func(ctx SpecContext) {
			annotate(ctx, "a", "")
			annotate(ctx, "c", "")
		})
		// c has no KEDA: its CRD goes for the rest of the suite (no other spec needs it there).
		Expect(members["c"].DeleteKEDACRD(ctx)).To(Succeed())

		raw, err := yaml.YAMLToJSON([]byte(kedaInline))
		Expect(err).NotTo(HaveOccurred())
		p := newPipeline(ns, "clicks", onClusters("a", "b", "c"), func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Definition.Inline = &runtime.RawExtension{Raw: raw}
		})
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)
		name := coordinator.WorkerGroupPrefix("clicks", "raw.clicks")

		Eventually(func(g Gomega) {
			list := &kedav1alpha1.ScaledObjectList{}
			g.Expect(members["a"].Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1), "one ScaledObject in a: only raw.clicks has a max")
			so := list.Items[0]
			g.Expect(so.Name).To(Equal(name))
			g.Expect(so.Labels).To(HaveKeyWithValue(urutauv1alpha1.LabelHubPipelineUID, string(getPipeline(g, ctx, key).UID)))
			g.Expect(so.Spec.MaxReplicaCount).To(HaveValue(BeEquivalentTo(4)))
			g.Expect(so.Spec.Triggers).To(HaveLen(1))
			g.Expect(so.Spec.Triggers[0].Metadata).To(HaveKeyWithValue("serverAddress", "http://prometheus-a.monitoring:9090"))
			var managers []string
			for _, mf := range so.ManagedFields {
				managers = append(managers, mf.Manager)
			}
			g.Expect(managers).To(ConsistOf(ssa.FieldManagerFor(fleet.DefaultFieldManager, "a")))

			list = &kedav1alpha1.ScaledObjectList{}
			g.Expect(members["b"].Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), "b has no Prometheus address: KEDA is off there")
			_, err := coordinatorSTS(ctx, members["b"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())

			sts, err := coordinatorSTS(ctx, members["c"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).NotTo(BeNil(), "c runs the coordinator without KEDA")
			cs := clusterStatus(getPipeline(g, ctx, key), "c")
			g.Expect(cs).NotTo(BeNil())
			g.Expect(cs.Message).To(ContainSubstring("ScaledObject CRD is not installed"))
		}).Should(Succeed())

		By("pruning: the table loses its max, its ScaledObject goes")
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) {
			raw, err := yaml.YAMLToJSON([]byte(strings.Replace(kedaInline, "max: 4", "max: 0", 1)))
			Expect(err).NotTo(HaveOccurred())
			p.Spec.Definition.Inline = &runtime.RawExtension{Raw: raw}
		})
		Eventually(func(g Gomega) {
			list := &kedav1alpha1.ScaledObjectList{}
			g.Expect(members["a"].Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), fmt.Sprintf("ScaledObjects left in a: %d", len(list.Items)))
		}).Should(Succeed())
	})
})
