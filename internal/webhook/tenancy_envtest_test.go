package webhook

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// tenancyTestLabel marks the namespaces of the tenancy specs: the suite's open policy leaves them
// out, so only the policies a spec creates govern them.
const tenancyTestLabel = "urutau.io/tenancy-test"

// suiteMembers is the inventory the suite's webhook sees.
var suiteMembers = []inventory.Member{
	{Name: "eu-1", Labels: map[string]string{"region": "eu"}},
	{Name: "us-1", Labels: map[string]string{"region": "us"}},
}

// staticInventory is a fixed member list (the webhook only lists members).
type staticInventory []inventory.Member

func (s staticInventory) Members(context.Context) ([]inventory.Member, error) { return s, nil }
func (staticInventory) EntryType() client.Object                              { return &corev1.Secret{} }
func (staticInventory) IsEntry(client.Object) bool                            { return false }

var _ = Describe("the tenancy boundary at admission", func() {
	tenantNamespace := func(ctx SpecContext, labels map[string]string) string {
		l := map[string]string{tenancyTestLabel: "true"}
		for k, v := range labels {
			l[k] = v
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-", Labels: l}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, ns)).To(Succeed()) })
		return ns.Name
	}
	expectForbidden := func(err error, field string, in ...string) {
		GinkgoHelper()
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422, got %v", err)
		Expect(causes(err)).To(ContainElement(field))
		for _, s := range in {
			Expect(err.Error()).To(ContainSubstring(s))
		}
	}

	It("refuses pipelines in system namespaces of the hub, whatever the policies", func(ctx SpecContext) {
		labelled := tenantNamespace(ctx, map[string]string{urutauv1alpha1.LabelSystemNamespace: "true"})
		for _, ns := range []string{"kube-system", "default", "kube-public", labelled} {
			if ns != labelled && ns != "default" {
				// kube-public exists in envtest; make sure of it for the record.
				Expect(k8sClient.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})).To(Succeed())
			}
			err := k8sClient.Create(ctx, fresh(ns, "intruder"))
			expectForbidden(err, "metadata.namespace", `hub namespace "`+ns+`"`)
		}
		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "urutau-system"}})).To(Succeed())
		expectForbidden(k8sClient.Create(ctx, fresh("urutau-system", "intruder")), "metadata.namespace", "the hub's own namespace")
	})

	It("refuses a placement no PlacementPolicy allows, and admits a pipeline placed nowhere", func(ctx SpecContext) {
		ns := tenantNamespace(ctx, nil)
		err := k8sClient.Create(ctx, fresh(ns, "closed", clusters("eu-1")))
		expectForbidden(err, "spec.placement", "no PlacementPolicy lets pipelines of hub namespace")
		err = k8sClient.Create(ctx, fresh(ns, "closed-selector", selector(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}), clusters()))
		expectForbidden(err, "spec.placement", "no PlacementPolicy")
		Expect(k8sClient.Create(ctx, fresh(ns, "nowhere", clusters()))).To(Succeed())
	})

	It("admits what a policy allows and names the policy when it refuses", func(ctx SpecContext) {
		ns := tenantNamespace(ctx, map[string]string{"team": "shop"})
		pol := &urutauv1alpha1.PlacementPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "team-shop-"},
			Spec: urutauv1alpha1.PlacementPolicySpec{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}, MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: tenancyTestLabel, Operator: metav1.LabelSelectorOpExists}}},
				ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
			},
		}
		Expect(k8sClient.Create(ctx, pol)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, pol)).To(Succeed()) })

		Expect(k8sClient.Create(ctx, fresh(ns, "on-eu", clusters("eu-1")))).To(Succeed())
		err := k8sClient.Create(ctx, fresh(ns, "on-us", clusters("eu-1", "us-1")))
		expectForbidden(err, "spec.placement.clusters[1]", `may not run on member "us-1"`, `"`+pol.Name+`" (clusterSelector "region=eu")`)

		By("a selector that also selects a member the policy does not allow: admitted with a warning")
		warnings.Take()
		Expect(warned.Create(ctx, fresh(ns, "by-selector", clusters(),
			selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu", "us"}}}})))).To(Succeed())
		Expect(warnings.Take()).To(ContainElement(And(ContainSubstring("spec.placement.clusterSelector selects members"), ContainSubstring("us-1"))))

		By("a member the inventory does not know yet: admitted with a warning")
		Expect(warned.Create(ctx, fresh(ns, "on-new", clusters("eu-1", "new-1")))).To(Succeed())
		Expect(warnings.Take()).To(ContainElement(ContainSubstring(`member "new-1" is not in the inventory yet`)))

		By("an update onto a member the policy does not allow is refused too")
		p := &urutauv1alpha1.CDCPipeline{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "on-eu"}, p)).To(Succeed())
		p.Spec.Placement.Clusters = []string{"us-1"}
		expectForbidden(k8sClient.Update(ctx, p), "spec.placement.clusters[0]", `"us-1"`)
	})
})

var _ = Describe("images and worker names at admission", func() {
	It("refuses an image the platform admin did not allow, naming the field and the policy", func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-", Labels: map[string]string{tenancyTestLabel: "true"}}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, ns)).To(Succeed()) })
		pol := &urutauv1alpha1.PlacementPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "images-"},
			Spec: urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{ns.Name}, Clusters: []string{"eu-1"},
				Images: &urutauv1alpha1.ImagePolicy{Allowed: []string{"registry.example.com/shop/*"}}},
		}
		Expect(k8sClient.Create(ctx, pol)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, pol)).To(Succeed()) })

		By("the hub's default, the hub-wide list and the policy's images are admitted")
		for name, image := range map[string]string{"default": "", "named-default": suiteDefaultImage, "hub-wide": "urutau:2", "policy": "registry.example.com/shop/app:1"} {
			Expect(k8sClient.Create(ctx, fresh(ns.Name, name, clusters("eu-1"), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Image = image }))).
				To(Succeed(), "%s (%q)", name, image)
		}

		By("any other image is refused at spec.image, naming the policy")
		err := k8sClient.Create(ctx, fresh(ns.Name, "miner", clusters("eu-1"), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Image = "evil.example/miner:latest" }))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.image"))
		Expect(err.Error()).To(And(ContainSubstring(`image "evil.example/miner:latest" is not allowed`), ContainSubstring(`PlacementPolicy "`+pol.Name+`" [registry.example.com/shop/*]`)))

		By("in an override, at its field; and on an update too")
		err = k8sClient.Create(ctx, fresh(ns.Name, "override", clusters("eu-1"),
			override(urutauv1alpha1.ClusterOverride{Clusters: []string{"eu-1"}, Image: "evil.example/miner:2"})))
		Expect(causes(err)).To(ConsistOf("spec.overrides[0].image"))
		p := &urutauv1alpha1.CDCPipeline{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "policy"}, p)).To(Succeed())
		p.Spec.Image = "evil.example/miner:3"
		err = k8sClient.Update(ctx, p)
		Expect(causes(err)).To(ConsistOf("spec.image"))
	})

	It("refuses an inline pipeline that is not the CR's name, and says why", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		err := k8sClient.Create(ctx, fresh(ns, "orders", pipelineNamed("payments")))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.definition.inline.pipeline"))
		Expect(err.Error()).To(And(ContainSubstring(`must equal metadata.name "orders"`), ContainSubstring("another team's workloads")))
		Expect(k8sClient.Create(ctx, fresh(ns, "orders"))).To(Succeed())
	})
})
