package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// expectDenied waits until member m of p shows a refusal of the tenancy boundary with reason.
func expectDenied(ctx context.Context, p *urutauv1alpha1.CDCPipeline, m, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
		c := clusterStatus(got, m)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Phase).To(Equal(urutauv1alpha1.ClusterDegraded))
		g.Expect(c.Message).To(ContainSubstring(reason))
	}).Should(Succeed())
}

// The tenancy boundary and the adoption rules at reconcile time (issue #15): the webhook is not in
// this suite, as it is not in front of a hub whose webhook is down.
var _ = Describe("The tenancy boundary and foreign objects, at reconcile", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("writes nothing into a member namespace not opened to the fleet, until it is", func(ctx SpecContext) {
		closed := ns + "-closed"
		Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: closed}})).To(Succeed())
		Expect(members["a"].Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: closed}})).To(Succeed())
		p := newPipeline(closed, "closed", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		expectDenied(ctx, p, "a", tenancy.ReasonMemberNamespaceOptOut)
		Eventually(func(g Gomega) {
			ev := &eventsList{}
			g.Expect(hubClient.List(ctx, &ev.EventList, client.InNamespace(closed))).To(Succeed())
			g.Expect(ev.reasons()).To(ContainElement(fleet.EventPlacementDenied))
		}).Should(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["a"], closed, p.UID) }, 2*time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			n := &corev1.Namespace{}
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKey{Name: closed}, n)).To(Succeed())
			n.Labels = openNamespace
			g.Expect(members["a"].Client.Update(ctx, n)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).WithTimeout(time.Minute).Should(Succeed())
	})

	It("refuses a pipeline in a system namespace, whatever the policies say", func(ctx SpecContext) {
		if err := members["b"].Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-public", Labels: openNamespace}}); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		p := newPipeline("kube-public", "sneaky-"+ns, onClusters("b"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, p))).To(Succeed()) })
		expectDenied(ctx, p, "b", tenancy.ReasonSystemNamespace)
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], "kube-public", p.UID) }, 2*time.Second).Should(Succeed())
	})

	It("refuses a Secret that is not opened to pipelines", func(ctx SpecContext) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dsn"}, Data: map[string][]byte{"uri": []byte("mysql://db")}}
		Expect(members["a"].Client.Create(ctx, s)).To(Succeed())
		p := newPipeline(ns, "closed-secret", onClusters("a"), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Secrets.Source = "dsn" })
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		expectDenied(ctx, p, "a", tenancy.ReasonSecretNotOptedIn)
		Consistently(func(g Gomega) {
			g.Expect(ownedObjects(g, ctx, members["a"], ns, p.UID)).NotTo(HaveKey("StatefulSet/" + coordinator.CoordinatorName(p.Name)))
		}, 2*time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			s.Labels = openSecret
			g.Expect(members["a"].Client.Update(ctx, s)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
	})

	It("holds a pipeline whose optional Secret is missing, and stops the coordinator when a Secret it mounts closes", func(ctx SpecContext) {
		p := newPipeline(ns, "optional-secret", onClusters("a"), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Secrets.KafkaTLS = "kafka-tls" })
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)
		By("missing: nothing would keep a Secret created later by someone else from being mounted")
		Eventually(func(g Gomega) {
			a := clusterStatus(getPipeline(g, ctx, key), "a")
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Phase).To(Equal(urutauv1alpha1.ClusterPending))
			g.Expect(a.Message).To(ContainSubstring("spec.secrets.kafkaTLS names Secret " + ns + "/kafka-tls, which does not exist"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(ownedObjects(g, ctx, members["a"], ns, p.UID)).NotTo(HaveKey("StatefulSet/" + coordinator.CoordinatorName(p.Name)))
		}, 2*time.Second).Should(Succeed())

		By("created open to the fleet: the coordinator starts")
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kafka-tls", Labels: openSecret}, Data: map[string][]byte{"ca.crt": []byte("x")}}
		Expect(members["a"].Client.Create(ctx, s)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		replicas := func(g Gomega) int32 {
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).NotTo(BeNil())
			return *sts.Spec.Replicas
		}
		Expect(replicas(Default)).To(BeEquivalentTo(1))

		By("closed while the coordinator mounts it: scaled to zero, and the status says why")
		Eventually(func(g Gomega) {
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			s.Labels = nil
			g.Expect(members["a"].Client.Update(ctx, s)).To(Succeed())
		}).Should(Succeed())
		stopped := "its coordinator is scaled to zero until then, and no pod with its labels is left"
		Eventually(func(g Gomega) {
			g.Expect(replicas(g)).To(BeEquivalentTo(0))
			a := clusterStatus(getPipeline(g, ctx, key), "a")
			g.Expect(a.Message).To(ContainSubstring(tenancy.ReasonSecretNotOptedIn))
			g.Expect(a.Message).To(HaveSuffix(stopped), "stopped once its controller saw the scale (seeScalesToZero) and no pod is left")
		}).Should(Succeed())
		denials := func(g Gomega) int32 {
			ev := &eventsList{}
			g.Expect(hubClient.List(ctx, &ev.EventList, client.InNamespace(ns))).To(Succeed())
			return ev.delivered(fleet.EventPlacementDenied, p.Name)
		}
		Eventually(denials).Should(BeNumerically(">=", 2), "one Warning while being scaled, one once stopped")
		seen := denials(Default)
		Consistently(func(g Gomega) {
			a := clusterStatus(getPipeline(g, ctx, key), "a")
			g.Expect(a.Message).To(HaveSuffix(stopped), "the passes after the one that scaled say it too")
			g.Expect(denials(g)).To(Equal(seen), "no new Warning while nothing changes")
		}, 3*time.Second).Should(Succeed())

		By("opened again: it runs again")
		Eventually(func(g Gomega) {
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			s.Labels = openSecret
			g.Expect(members["a"].Client.Update(ctx, s)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(replicas(g)).To(BeEquivalentTo(1)) }).Should(Succeed())
	})

	It("refuses a table whose worker group name is another team's StatefulSet", func(ctx SpecContext) {
		name := coordinator.WorkerGroupPrefix("aimed", "raw.orders")
		labels := map[string]string{"app": "payments"}
		foreign := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres"}}}}}}
		Expect(members["a"].Client.Create(ctx, foreign)).To(Succeed())
		p := newPipeline(ns, "aimed", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			a := clusterStatus(getPipeline(g, ctx, client.ObjectKeyFromObject(p)), "a")
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Phase).To(Equal(urutauv1alpha1.ClusterDegraded))
			g.Expect(a.Message).To(ContainSubstring(fmt.Sprintf("worker group name %q is taken by StatefulSet %s/%s", name, ns, name)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(ownedObjects(g, ctx, members["a"], ns, p.UID)).To(BeEmpty(), "no Role granting the other team's StatefulSet, nothing else either")
		}, 2*time.Second).Should(Succeed())
	})

	It("places nowhere without a policy, and leaves a running pipeline alone when its policy goes", func(ctx SpecContext) {
		p := newPipeline(ns, "revoked", onClusters("c"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		var sts client.Object
		Eventually(func(g Gomega) {
			sts = expectPlaced(g, ctx, members["c"], p)["StatefulSet/"+coordinator.CoordinatorName(p.Name)]
		}).Should(Succeed())
		open := &urutauv1alpha1.PlacementPolicy{}
		Expect(hubClient.Get(ctx, client.ObjectKey{Name: openPolicy}, open)).To(Succeed())
		Expect(hubClient.Delete(ctx, open)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(hubClient.Create(ctx, &urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: openPolicy}, Spec: open.Spec})).To(Succeed())
		})
		expectDenied(ctx, p, "c", tenancy.ReasonNoPlacementPolicy)
		fresh := newPipeline(ns, "no-policy", onClusters("c"))
		Expect(hubClient.Create(ctx, fresh)).To(Succeed())
		expectDenied(ctx, fresh, "c", tenancy.ReasonNoPlacementPolicy)
		Consistently(func(g Gomega) {
			expectEmpty(g, ctx, members["c"], ns, fresh.UID)
			objs := expectPlaced(g, ctx, members["c"], p)
			g.Expect(objs["StatefulSet/"+coordinator.CoordinatorName(p.Name)].GetUID()).To(Equal(sts.GetUID()), "a revoked policy tore the pipeline down")
		}, 3*time.Second).Should(Succeed())
	})

	It("runs a tenant's own image only where a policy allows it", func(ctx SpecContext) {
		const own = "registry.tenant.example/miner:1"
		p := newPipeline(ns, "own-image", onClusters("a", "b"), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Image = own })
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		expectDenied(ctx, p, "a", tenancy.ReasonImageNotAllowed)
		expectDenied(ctx, p, "b", tenancy.ReasonImageNotAllowed)
		Consistently(func(g Gomega) {
			expectEmpty(g, ctx, members["a"], ns, p.UID)
			expectEmpty(g, ctx, members["b"], ns, p.UID)
		}, 2*time.Second).Should(Succeed())

		By("a policy allows the tenant's registry on member a only")
		policy := &urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-images"}, Spec: urutauv1alpha1.PlacementPolicySpec{
			Namespaces: []string{ns}, Clusters: []string{"a"}, Images: &urutauv1alpha1.ImagePolicy{Allowed: []string{"registry.tenant.example/*"}}}}
		Expect(hubClient.Create(ctx, policy)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, policy))).To(Succeed()) })
		Eventually(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).NotTo(BeNil())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal(own))
		}).Should(Succeed())
		expectDenied(ctx, p, "b", tenancy.ReasonImageNotAllowed)
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, p.UID) }, 2*time.Second).Should(Succeed())
	})

	It("places nowhere a definition names workers after something else than the pipeline", func(ctx SpecContext) {
		p := newPipeline(ns, "aimer", onClusters("a"), func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Definition.Inline.Raw = []byte(strings.Replace(string(p.Spec.Definition.Inline.Raw), `"pipeline":"aimer"`, `"pipeline":"payments"`, 1))
		})
		Expect(string(p.Spec.Definition.Inline.Raw)).To(ContainSubstring(`"pipeline":"payments"`))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		expectDenied(ctx, p, "a", tenancy.ReasonWorkerNamesNotBound)
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["a"], ns, p.UID) }, 2*time.Second).Should(Succeed())
	})

	It("places nowhere Pod Security is weaker than baseline, until the namespace enforces it", func(ctx SpecContext) {
		weak := ns + "-weak"
		Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: weak}})).To(Succeed())
		Expect(members["a"].Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: weak,
			Labels: map[string]string{urutauv1alpha1.LabelFleetManaged: "true", tenancy.LabelPodSecurityEnforce: "privileged"}}})).To(Succeed())
		p := newPipeline(weak, "weak", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		expectDenied(ctx, p, "a", tenancy.ReasonWeakPodSecurity)
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["a"], weak, p.UID) }, 2*time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			n := &corev1.Namespace{}
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKey{Name: weak}, n)).To(Succeed())
			n.Labels[tenancy.LabelPodSecurityEnforce] = tenancy.PodSecurityRestricted
			g.Expect(members["a"].Client.Update(ctx, n)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).WithTimeout(time.Minute).Should(Succeed())
	})

	It("never writes over another team's object of the same name, unless it is handed over", func(ctx SpecContext) {
		name := "foreign"
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: coordinator.CoordinatorName(name), Labels: map[string]string{"team": "payments"}},
			// Headless like the coordinator's: a Service's clusterIP cannot change, so only a
			// headless one can be handed over.
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "payments"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		Expect(members["a"].Client.Create(ctx, svc, client.FieldOwner("payments-team"))).To(Succeed())
		p := newPipeline(ns, name, onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			c := clusterStatus(got, "a")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Phase).To(Equal(urutauv1alpha1.ClusterDegraded))
			g.Expect(c.Message).To(ContainSubstring("Service " + ns + "/" + coordinator.CoordinatorName(name)))
			g.Expect(c.Message).To(ContainSubstring("payments-team"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			got := &corev1.Service{}
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKeyFromObject(svc), got)).To(Succeed())
			g.Expect(got.Spec.Selector).To(Equal(map[string]string{"app": "payments"}), "the hub redirected another team's traffic")
			g.Expect(got.Labels).NotTo(HaveKey(urutauv1alpha1.LabelHubPipelineUID))
			g.Expect(ownedObjects(g, ctx, members["a"], ns, p.UID)).NotTo(HaveKey("StatefulSet/" + coordinator.CoordinatorName(name)))
		}, 3*time.Second).Should(Succeed())

		By("the team hands the Service over")
		Eventually(func(g Gomega) {
			got := &corev1.Service{}
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKeyFromObject(svc), got)).To(Succeed())
			metav1.SetMetaDataAnnotation(&got.ObjectMeta, urutauv1alpha1.AnnotationAdopt, ns+"/"+name)
			g.Expect(members["a"].Client.Update(ctx, got, client.FieldOwner("payments-team"))).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			got := &corev1.Service{}
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKeyFromObject(svc), got)).To(Succeed())
			g.Expect(got.Labels).To(HaveKeyWithValue(urutauv1alpha1.LabelHubPipelineUID, string(p.UID)))
			sts, err := coordinatorSTS(ctx, members["a"], ns, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).NotTo(BeNil())
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("takes over the single-cluster operator's objects of the same CR (migration)", func(ctx SpecContext) {
		name := "migrated"
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: coordinator.CoordinatorName(name),
			Labels: coordinator.SelectorLabels(name)}, Data: map[string]string{"pipeline.yaml": "old"}}
		Expect(members["b"].Client.Create(ctx, cm, client.FieldOwner("urutau-operator"))).To(Succeed())
		p := newPipeline(ns, name, onClusters("b"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["b"], p) }).Should(Succeed())
	})

	It("does not take over the objects a live single-cluster CR still owns", func(ctx SpecContext) {
		name := "still-owned"
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: coordinator.CoordinatorName(name),
			Labels:          coordinator.SelectorLabels(name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "urutau.io/v1alpha1", Kind: "CDCPipeline", Name: name, UID: "single-cluster-cr", Controller: new(true)}}},
			Data: map[string]string{"pipeline.yaml": "old"}}
		Expect(members["b"].Client.Create(ctx, cm, client.FieldOwner("urutau-operator"))).To(Succeed())
		p := newPipeline(ns, name, onClusters("b"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			b := clusterStatus(getPipeline(g, ctx, client.ObjectKeyFromObject(p)), "b")
			g.Expect(b).NotTo(BeNil())
			g.Expect(b.Phase).To(Equal(urutauv1alpha1.ClusterDegraded))
			g.Expect(b.Message).To(ContainSubstring(`still owned by the CDCPipeline "still-owned" of the member`))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			got := &corev1.ConfigMap{}
			g.Expect(members["b"].Client.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
			g.Expect(got.Data).To(HaveKeyWithValue("pipeline.yaml", "old"), "nothing written over the CR's object")
			sts, err := coordinatorSTS(ctx, members["b"], ns, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).To(BeNil(), "no coordinator beside the single-cluster one")
		}).Should(Succeed())
	})
})
