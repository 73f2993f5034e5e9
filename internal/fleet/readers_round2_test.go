package fleet_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/status"
	"github.com/urutau-io/fleet/internal/testenv"
)

// The histories users make, not only the ones the generator made: a placement widened onto a
// member that reads the same database, hand scales, restored objects, pods made by hand or left
// by a StatefulSet deleted with --cascade=orphan. Each is one reader per source under a history
// the hub never drove itself.
var _ = Describe("One reader per source: what people do", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	// sourceSecret writes, in member m, the pipeline's source Secret naming database uri.
	sourceSecret := func(ctx context.Context, m *testenv.Cluster, uri string) {
		GinkgoHelper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src", Labels: openSecret}, Data: map[string][]byte{"uri": []byte(uri)}}
		err := m.Client.Create(ctx, s)
		if apierrors.IsAlreadyExists(err) {
			err = m.Client.Update(ctx, s)
		}
		Expect(err).NotTo(HaveOccurred())
	}
	withSource := func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Secrets.Source = "src" }

	It("[a] -> [a,b] with one database: b waits while a runs, and starts once a left and its pod is gone", func(ctx SpecContext) {
		sourceSecret(ctx, members["a"], "mysql://cdc:pw-a@db.shared.example:3306/shop")
		sourceSecret(ctx, members["b"], "cdc:pw-b@tcp(DB.shared.example)/shop")
		p := newPipeline(ns, "widen", onClusters("a"), withSource)
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		pod := fakeCoordinatorPod(ctx, members["a"], ns, p.Name)
		Expect(members["a"].Client.Create(ctx, pod)).To(Succeed())
		sampler := sampleReaders(ctx, ns, []string{p.Name}, oneReader)

		By("widening to [a,b]: b reads the same database, so it waits")
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"a", "b"} })
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, key)
			b := clusterStatus(got, "b")
			g.Expect(b).NotTo(BeNil())
			g.Expect(b.Phase).To(Equal(urutauv1alpha1.ClusterPending))
			g.Expect(b.Message).To(ContainSubstring(`reads the same database as cluster "a"`))
			g.Expect(b.Message).NotTo(ContainSubstring("pw-"), "no credential in status")
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, status.ConditionSharedSource)).To(BeTrue())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, urutauv1alpha1.ConditionStalled)).To(BeTrue())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			expectEmpty(g, ctx, members["b"], ns, p.UID)
			expectPlaced(g, ctx, members["a"], p)
		}).Should(Succeed())

		By("narrowing to [b]: a is emptied first, its pod deleted, and b starts once it is gone")
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Eventually(func(g Gomega) {
			got := &corev1.Pod{}
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
			g.Expect(got.DeletionTimestamp).NotTo(BeNil(), "the hub deletes the pod its StatefulSet left")
		}).Should(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, p.UID) }).Should(Succeed())
		killPod(ctx, members["a"], pod)
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["b"], p)
			expectEmpty(g, ctx, members["a"], ns, p.UID)
			g.Expect(meta.FindStatusCondition(getPipeline(g, ctx, key).Status.Conditions, status.ConditionSharedSource)).To(BeNil())
		}).Should(Succeed())
		sampler.done("[a] -> [a,b] -> [b] on one database")
	})

	It("runs side by side where each member reads its own database, and stops the later one when a Secret is repointed", func(ctx SpecContext) {
		sourceSecret(ctx, members["a"], "mysql://cdc:pw@db-eu.example:3306/shop")
		sourceSecret(ctx, members["b"], "mysql://cdc:pw@db-us.example:3306/shop")
		p := newPipeline(ns, "regional", onClusters("a"), withSource)
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"a", "b"} })
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectPlaced(g, ctx, members["b"], p)
		}).Should(Succeed())

		By("b's Secret now names a's database: b, which started later, is stopped")
		sourceSecret(ctx, members["b"], "mysql://other:pw@db-eu.example/shop")
		Eventually(func(g Gomega) {
			expectEmpty(g, ctx, members["b"], ns, p.UID)
			expectPlaced(g, ctx, members["a"], p)
			b := clusterStatus(getPipeline(g, ctx, key), "b")
			g.Expect(b).NotTo(BeNil())
			g.Expect(b.Message).To(ContainSubstring(`reads the same database as cluster "a"`))
		}).Should(Succeed())
	})

	It("reverts a hand scale of the coordinator, up or down", func(ctx SpecContext) {
		p := newPipeline(ns, "scaled", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		for _, n := range []int32{2, 0} {
			By(fmt.Sprintf("kubectl scale --replicas=%d", n))
			scaleCoordinator(ctx, members["a"], ns, p.Name, n)
			// The hub sees the scale through its watch of member a. A spec that restarted a's
			// API server just before (the order is random) leaves that watch in client-go's
			// backoff for up to 30 s after it came back, and the scale is seen when it resumes.
			Eventually(func(g Gomega) {
				sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(sts.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)), "the hub owns replicas: one reader")
			}).WithTimeout(90 * time.Second).Should(Succeed())
		}
	})

	It("removes a live pipeline's objects restored on a member it left", func(ctx SpecContext) {
		p := newPipeline(ns, "restored", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)
		var export *appsv1.StatefulSet
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			export = sts
		}).Should(Succeed())
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["b"], p)
			expectEmpty(g, ctx, members["a"], ns, p.UID)
		}).Should(Succeed())

		By("a restore brings the coordinator StatefulSet back in a, labels and all")
		restored := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: export.Name, Labels: export.Labels, Annotations: export.Annotations}, Spec: export.Spec}
		Expect(members["a"].Client.Create(ctx, restored)).To(Succeed())
		Eventually(func(g Gomega) {
			expectEmpty(g, ctx, members["a"], ns, p.UID)
			expectPlaced(g, ctx, members["b"], p)
		}).Should(Succeed())
	})

	It("deletes a pod made by hand with the coordinator's labels on a member the pipeline left, and completes the move", func(ctx SpecContext) {
		p := newPipeline(ns, "handmade", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		// Not bound to a node: once deleted it is gone (no kubelet to wait for here).
		hand := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand", Labels: coordinator.SelectorLabels(p.Name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
		Expect(members["a"].Client.Create(ctx, hand)).To(Succeed())
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["b"], p)
			err := members["a"].Client.Get(ctx, client.ObjectKeyFromObject(hand), &corev1.Pod{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the pod made by hand is gone: %v", err)
		}).Should(Succeed())
	})

	It("deletes a second coordinator pod made by hand beside the running one, and leaves the StatefulSet's own", func(ctx SpecContext) {
		p := newPipeline(ns, "beside", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		own := fakeCoordinatorPod(ctx, members["a"], ns, p.Name)
		Expect(members["a"].Client.Create(ctx, own)).To(Succeed())
		hand := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second-reader", Labels: coordinator.SelectorLabels(p.Name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
		Expect(members["a"].Client.Create(ctx, hand)).To(Succeed())
		Eventually(func(g Gomega) {
			err := members["a"].Client.Get(ctx, client.ObjectKeyFromObject(hand), &corev1.Pod{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the second reader is gone: %v", err)
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			got := &corev1.Pod{}
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKeyFromObject(own), got)).To(Succeed())
			g.Expect(got.DeletionTimestamp).To(BeNil(), "the StatefulSet's own pod stays")
		}).Should(Succeed())
	})
})

// scaleCoordinator scales the coordinator StatefulSet through its scale subresource, as
// `kubectl scale` does.
func scaleCoordinator(ctx context.Context, m *testenv.Cluster, ns, pipeline string, replicas int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		sts, err := coordinatorSTS(ctx, m, ns, pipeline)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sts).NotTo(BeNil())
		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
		g.Expect(m.Client.SubResource("scale").Update(ctx, sts, client.WithSubResourceBody(scale), client.FieldOwner("kubectl"))).To(Succeed())
	}).Should(Succeed())
}
