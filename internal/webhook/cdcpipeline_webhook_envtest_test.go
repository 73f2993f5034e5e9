package webhook

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// serverIDs hands every spec its own MySQL serverId: the uniqueness check spans the whole hub.
var serverIDs atomic.Int64

func init() { serverIDs.Store(1000) }

// fresh is a valid pipeline in namespace ns with a serverId no other spec uses.
func fresh(ns, name string, muts ...mut) *urutauv1alpha1.CDCPipeline {
	id := serverIDs.Add(1)
	all := append([]mut{named(ns, name), edit(func(d doc) {
		source(d)["serverId"] = strconv.FormatInt(id, 10)
		d["pipeline"] = name // the hub requires the pipeline to be named after the CR
	})}, muts...)
	p := pipeline(all...)
	p.TypeMeta = metav1.TypeMeta{}
	return p
}

// pipelineNamed sets the inline definition's pipeline, which the hub requires to be the CR's name.
func pipelineNamed(name string) mut {
	return edit(func(d doc) { d["pipeline"] = name })
}

// newNamespace creates a namespace for one spec.
func newNamespace(ctx SpecContext) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "wh-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// causes are the field paths of a 422 answer.
func causes(err error) []string {
	var out []string
	if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			out = append(out, c.Field)
		}
	}
	return out
}

// kubectl runs the suite's kubectl against the envtest API server and returns stdout, stderr.
func kubectl(args ...string) (string, string, error) {
	user, err := testEnv.ControlPlane.AddUser(envtest.User{Name: "kubectl", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", "", err
	}
	k, err := user.Kubectl()
	if err != nil {
		return "", "", err
	}
	stdout, stderr, err := k.Run(args...)
	o, _ := io.ReadAll(stdout)
	e, _ := io.ReadAll(stderr)
	return string(o), string(e), err
}

// manifest writes p as YAML into a temporary file for kubectl -f.
func manifest(p *urutauv1alpha1.CDCPipeline) string {
	p = p.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{APIVersion: urutauv1alpha1.GroupVersion.String(), Kind: "CDCPipeline"}
	b, err := yaml.Marshal(p)
	Expect(err).NotTo(HaveOccurred())
	f := filepath.Join(GinkgoT().TempDir(), p.Name+".yaml")
	Expect(os.WriteFile(f, b, 0o600)).To(Succeed())
	return f
}

const webhookDenied = `admission webhook "vcdcpipeline.urutau.io" denied the request`

var _ = Describe("CDCPipeline admission against a real API server", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("is registered with failurePolicy Fail for CREATE and UPDATE, and not for status", func(ctx SpecContext) {
		var list admissionregistrationv1.ValidatingWebhookConfigurationList
		Expect(k8sClient.List(ctx, &list)).To(Succeed())
		var hooks []admissionregistrationv1.ValidatingWebhook
		for _, c := range list.Items {
			hooks = append(hooks, c.Webhooks...)
		}
		Expect(hooks).To(HaveLen(1))
		h := hooks[0]
		Expect(h.Name).To(Equal("vcdcpipeline.urutau.io"))
		Expect(*h.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
		Expect(*h.SideEffects).To(Equal(admissionregistrationv1.SideEffectClassNone))
		Expect(h.Rules).To(HaveLen(1))
		Expect(h.Rules[0].Operations).To(ConsistOf(admissionregistrationv1.Create, admissionregistrationv1.Update))
		Expect(h.Rules[0].Resources).To(Equal([]string{"cdcpipelines"}))
		Expect(*h.ClientConfig.URL).To(HaveSuffix(Path))
	})

	It("admits a good pipeline", func(ctx SpecContext) {
		p := fresh(ns, "good")
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Expect(p.ResourceVersion).NotTo(BeEmpty())
	})

	It("rejects bad pipelines with the field path in a 422", func(ctx SpecContext) {
		for _, tc := range []struct {
			obj  *urutauv1alpha1.CDCPipeline
			path string
			// byCRD: the CRD's own schema rejects it before the webhook is called.
			byCRD bool
		}{
			{fresh(ns, "unknown-kind", edit(func(d doc) { source(d)["kind"] = "oracle" })), "spec.definition.inline.source.kind", false},
			{fresh(ns, "image-def", func(p *urutauv1alpha1.CDCPipeline) {
				p.Spec.Definition = urutauv1alpha1.Definition{Image: "planner:1"}
			}), "spec.definition.image", false},
			{fresh(ns, "table-quantity", edit(func(d doc) { workers(d, 0)["cpu"] = "2GB" })), "spec.definition.inline.tables[0].workers.cpu", false},
			{fresh(ns, "bad-member", clusters("East_1")), "spec.placement.clusters[0]", true},
			{fresh(ns, "bad-override", override(urutauv1alpha1.ClusterOverride{Clusters: []string{"west"}})), "spec.overrides[0].clusters[0]", false},
			{fresh(ns, "empty-selector", selector(&metav1.LabelSelector{})), "spec.placement", true},
		} {
			err := k8sClient.Create(ctx, tc.obj)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", tc.obj.Name, err)
			if tc.byCRD {
				Expect(err.Error()).NotTo(ContainSubstring(webhookDenied))
			} else {
				Expect(err.Error()).To(ContainSubstring(webhookDenied))
			}
			Expect(causes(err)).To(ContainElement(tc.path), "%s: %v", tc.obj.Name, err)
			Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(tc.obj), &urutauv1alpha1.CDCPipeline{}))).To(BeTrue())
		}
	})

	It("goes through kubectl end to end: the rejection names the field, warnings are printed", func(ctx SpecContext) {
		bad := fresh(ns, "kubectl-bad", edit(func(d doc) { workers(d, 0)["memory"] = "1 Gi" }))
		_, stderr, err := kubectl("create", "-f", manifest(bad))
		Expect(err).To(HaveOccurred())
		// kubectl prints a 422 as its causes, each with its field path.
		Expect(stderr).To(ContainSubstring(`The CDCPipeline "kubectl-bad" is invalid`))
		Expect(stderr).To(ContainSubstring(`spec.definition.inline.tables[0].workers.memory: Invalid value: "1 Gi"`))

		good := fresh(ns, "kubectl-good", clusters("east", "west"))
		stdout, stderr, err := kubectl("apply", "--server-side", "-f", manifest(good))
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(ContainSubstring("kubectl-good"))
		Expect(stderr).To(ContainSubstring("Warning: spec.placement can select more than one member cluster"))
	})

	It("returns admission warnings to API clients", func(ctx SpecContext) {
		warnings.Take()
		p := fresh(ns, "two-members", clusters("east", "west"),
			selector(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}),
			override(urutauv1alpha1.ClusterOverride{Clusters: []string{"eu-9"}, LogLevel: "debug"}))
		Expect(warned.Create(ctx, p)).To(Succeed())
		w := warnings.Take()
		Expect(w).To(ContainElement(ContainSubstring("members that read one database run one at a time")))
		Expect(w).To(ContainElement(ContainSubstring(`cluster "eu-9" is not in spec.placement.clusters`)))
	})

	It("keeps source identities unique across namespaces, naming the other pipeline only in the same namespace", func(ctx SpecContext) {
		first := fresh(ns, "first")
		Expect(k8sClient.Create(ctx, first)).To(Succeed())

		id, _ := identityOf(first)
		same := pipeline(named(ns, "again"), pipelineNamed("again"), edit(func(d doc) { source(d)["serverId"] = id.Value }))
		same.TypeMeta = metav1.TypeMeta{}
		err := k8sClient.Create(ctx, same)
		Expect(causes(err)).To(Equal([]string{"spec.definition.inline.source.serverId"}))
		Expect(err.Error()).To(ContainSubstring(ns + "/first"))

		other := newNamespace(ctx)
		dup := pipeline(named(other, "second"), pipelineNamed("second"), edit(func(d doc) { source(d)["serverId"] = id.Value }))
		dup.TypeMeta = metav1.TypeMeta{}
		err = k8sClient.Create(ctx, dup)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causes(err)).To(Equal([]string{"spec.definition.inline.source.serverId"}))
		Expect(err.Error()).To(ContainSubstring("another namespace of the hub"))
		Expect(err.Error()).NotTo(ContainSubstring("first"), "another tenant's pipeline is named")

		pgA := pipeline(named(ns, "pg-a"), inline(postgresInline()), pipelineNamed("pg-a"), edit(func(d doc) { source(d)["slotName"] = "slot_" + ns[3:] }))
		pgA.TypeMeta = metav1.TypeMeta{}
		Expect(k8sClient.Create(ctx, pgA)).To(Succeed())
		pgB := pipeline(named(other, "pg-b"), inline(postgresInline()), pipelineNamed("pg-b"), edit(func(d doc) { source(d)["slotName"] = "slot_" + ns[3:] }))
		pgB.TypeMeta = metav1.TypeMeta{}
		err = k8sClient.Create(ctx, pgB)
		Expect(causes(err)).To(Equal([]string{"spec.definition.inline.source.slotName"}))
		Expect(err.Error()).To(ContainSubstring("another namespace of the hub"))
		Expect(err.Error()).NotTo(ContainSubstring("pg-a"))

		// Once the first pipeline is being deleted, its identity is free again.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(first), first)).To(Succeed())
		first.Finalizers = []string{urutauv1alpha1.Finalizer}
		Expect(k8sClient.Update(ctx, first)).To(Succeed())
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Expect(k8sClient.Create(ctx, dup)).To(Succeed())

		// Removing the finalizer of the pipeline being deleted is never blocked, although its
		// serverId is now held by another pipeline.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(first), first)).To(Succeed())
		first.Finalizers = nil
		Expect(k8sClient.Update(ctx, first)).To(Succeed())
	})

	It("rejects an update that changes the serverId and leaves the stored object unchanged", func(ctx SpecContext) {
		p := fresh(ns, "immutable")
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		var before urutauv1alpha1.CDCPipeline
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &before)).To(Succeed())

		changed := before.DeepCopy()
		edit(func(d doc) { source(d)["serverId"] = strconv.FormatInt(serverIDs.Add(1), 10) })(changed)
		err := k8sClient.Update(ctx, changed)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causes(err)).To(Equal([]string{"spec.definition.inline.source.serverId"}))
		Expect(err.Error()).To(ContainSubstring("create a new CDCPipeline"))

		// The same through a merge patch, as kubectl edit/patch sends it.
		patch := client.RawPatch("application/merge-patch+json",
			[]byte(`{"spec":{"definition":{"inline":{"pipeline":"renamed"}}}}`))
		err = k8sClient.Patch(ctx, before.DeepCopy(), patch)
		Expect(causes(err)).To(Equal([]string{"spec.definition.inline.pipeline"}))

		var after urutauv1alpha1.CDCPipeline
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
		Expect(after.Generation).To(Equal(before.Generation))
		Expect(apiequality.Semantic.DeepEqual(after.Spec, before.Spec)).To(BeTrue())

		// A mutable change goes through.
		after.Spec.Placement.Clusters = []string{"west"}
		after.Spec.Image = "urutau:2"
		Expect(k8sClient.Update(ctx, &after)).To(Succeed())
		Expect(after.Generation).To(Equal(before.Generation + 1))
	})

	It("lets a person clear status.terminated through the status subresource", func(ctx SpecContext) {
		p := fresh(ns, "terminated")
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		p.Status.Terminated = &urutauv1alpha1.Terminated{
			Reason: urutauv1alpha1.ReasonInvalidSpec, At: time.Now().UTC().Format(time.RFC3339), Message: "test",
		}
		Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())

		_, stderr, err := kubectl("patch", "cdcpipeline", p.Name, "-n", ns, "--subresource=status",
			"--type=merge", "-p", `{"status":{"terminated":null}}`)
		Expect(err).NotTo(HaveOccurred(), stderr)

		var got urutauv1alpha1.CDCPipeline
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &got)).To(Succeed())
		Expect(got.Status.Terminated).To(BeNil())
	})
})

// The CRD's own rules, with no webhook installed: what must hold when the webhook is down or
// disabled. Ordered: it removes the ValidatingWebhookConfiguration and puts it back.
var _ = Describe("the CRD's own rules with the webhook absent", Ordered, func() {
	var (
		ns     string
		saved  []admissionregistrationv1.ValidatingWebhookConfiguration
		legacy *urutauv1alpha1.CDCPipeline
	)

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		var list admissionregistrationv1.ValidatingWebhookConfigurationList
		Expect(k8sClient.List(ctx, &list)).To(Succeed())
		saved = list.Items
		for i := range list.Items {
			Expect(k8sClient.Delete(ctx, &list.Items[i])).To(Succeed())
		}
		// The API server notices the removal asynchronously: wait until a pipeline only the
		// webhook would reject (an unknown source kind) is admitted.
		legacy = fresh(ns, "legacy", edit(func(d doc) { source(d)["kind"] = "oracle" }))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Create(ctx, legacy.DeepCopy())).To(Succeed())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})

	reinstall := func(ctx SpecContext) {
		for _, c := range saved {
			c := c.DeepCopy()
			c.ResourceVersion, c.UID, c.CreationTimestamp, c.ManagedFields = "", "", metav1.Time{}, nil
			Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, c))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			err := k8sClient.Create(ctx, fresh(ns, "probe", edit(func(d doc) { source(d)["kind"] = "oracle" })))
			g.Expect(err).To(MatchError(ContainSubstring(webhookDenied)))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}
	AfterAll(func(ctx SpecContext) { reinstall(ctx) })

	It("rejects a quantity such as 2GB", func(ctx SpecContext) {
		err := k8sClient.Create(ctx, fresh(ns, "quantity", func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Coordinator.CPU = "2GB" }))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).NotTo(ContainSubstring(webhookDenied))
		Expect(causes(err)).To(ContainElement("spec.coordinator.cpu"))
		Expect(err.Error()).To(ContainSubstring("must be a resource quantity"))
	})

	It("rejects two definition sources", func(ctx SpecContext) {
		err := k8sClient.Create(ctx, fresh(ns, "two-sources", func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Definition.Image = "planner:1" }))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causes(err)).To(ContainElement("spec.definition"))
		Expect(err.Error()).To(ContainSubstring("exactly one of image, s3 or inline must be set"))
	})

	It("rejects a name longer than 40 characters", func(ctx SpecContext) {
		err := k8sClient.Create(ctx, fresh(ns, strings.Repeat("n", 41)))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("metadata.name must be at most 40 characters"))
	})

	It("rejects a negative chunk size", func(ctx SpecContext) {
		err := k8sClient.Create(ctx, fresh(ns, "chunks", func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Coordinator.Snapshot.ChunkSize = -1 }))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(causes(err)).To(ContainElement("spec.coordinator.snapshot.chunkSize"))
	})

	It("after the webhook is back, admits metadata-only updates of an object it would reject, not spec changes", func(ctx SpecContext) {
		reinstall(ctx)
		var got urutauv1alpha1.CDCPipeline
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(legacy), &got)).To(Succeed())
		got.Finalizers = []string{urutauv1alpha1.Finalizer}
		Expect(k8sClient.Update(ctx, &got)).To(Succeed())

		got.Spec.Image = "urutau:2"
		err := k8sClient.Update(ctx, &got)
		Expect(causes(err)).To(Equal([]string{"spec.definition.inline.source.kind"}))

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(legacy), &got)).To(Succeed())
		Expect(k8sClient.Delete(ctx, &got)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(legacy), &got)).To(Succeed())
		got.Finalizers = nil
		Expect(k8sClient.Update(ctx, &got)).To(Succeed())
	})
})
