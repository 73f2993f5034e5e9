// Package kind is the multi-cluster end-to-end suite. Each spec is a function taking a SpecInput
// (the hub and member clients and how to restart a member), so the same specs run against the
// local fleet (`make test-e2e`, real control planes with kwok nodes, no Docker) and against kind
// clusters with the hub deployed from config/hub (`make test-e2e-kind`, needs Docker and images).
package kind

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fence"
)

// SpecInput is what every spec needs.
type SpecInput struct {
	Hub client.Client
	// Members by name; the specs use the first two (sorted as given in MemberNames).
	Members     map[string]client.Client
	MemberNames []string
	// Namespace exists in every member, with a Secret SourceSecret holding `uri`.
	Namespace    string
	SourceSecret string
	// RestartMember stops a member's API server and starts it again after the pause.
	RestartMember func(ctx context.Context, name string, pause time.Duration) error
	// Timeout bounds every wait.
	Timeout time.Duration
	// IgnoresSIGTERMImage is a coordinator image whose process ignores SIGTERM, so its pod ends
	// only when the kubelet kills it at the end of the grace period. Only real kubelets (kind)
	// give it: kwok has no process to signal.
	IgnoresSIGTERMImage string
	// HubDeployment is the hub's Deployment in the hub cluster (kind only; zero otherwise).
	HubDeployment client.ObjectKey
}

func (in SpecInput) a() string { return in.MemberNames[0] }
func (in SpecInput) b() string { return in.MemberNames[1] }

// pipeline is a minimal MySQL pipeline placed on the given members.
func pipeline(in SpecInput, name string, serverID int, clusters ...string) *urutauv1alpha1.CDCPipeline {
	inline := fmt.Sprintf(`{"pipeline":%q,"source":{"kind":"mysql","serverId":"%d"},"sink":{"type":"iceberg+rest","uri":"http://catalog.lake:8181/api/catalog","namespace":"raw","warehouse":"s3://lake/e2e"},"tables":[{"source":"shop.orders","target":"raw.orders","primaryKey":["id"]}]}`, name, serverID)
	return &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: in.Namespace},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: []byte(inline)}},
				Secrets:    urutauv1alpha1.Secrets{Source: in.SourceSecret},
			},
			Placement: urutauv1alpha1.Placement{Clusters: clusters},
		},
	}
}

func coordinatorKey(p *urutauv1alpha1.CDCPipeline) client.ObjectKey {
	return client.ObjectKey{Namespace: p.Namespace, Name: p.Name + "-coordinator"}
}

// expectRunning waits until the coordinator StatefulSet of p has a ready replica in the member
// and the hub reports that member Ready.
func expectRunning(ctx context.Context, in SpecInput, p *urutauv1alpha1.CDCPipeline, member string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		sts := &appsv1.StatefulSet{}
		g.Expect(in.Members[member].Get(ctx, coordinatorKey(p), sts)).To(Succeed())
		g.Expect(sts.Labels).To(HaveKeyWithValue(urutauv1alpha1.LabelHubPipelineUID, currentUID(ctx, g, in, p)))
		g.Expect(sts.Status.ReadyReplicas).To(BeNumerically(">=", 1), "coordinator not ready in %s", member)
		got := &urutauv1alpha1.CDCPipeline{}
		g.Expect(in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		g.Expect(clusterPhase(got, member)).To(Equal(urutauv1alpha1.ClusterReady))
	}).WithContext(ctx).WithTimeout(in.Timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// expectAbsent waits until the member holds no coordinator StatefulSet of p.
func expectAbsent(ctx context.Context, in SpecInput, p *urutauv1alpha1.CDCPipeline, member string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		err := in.Members[member].Get(ctx, coordinatorKey(p), &appsv1.StatefulSet{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "coordinator still in %s (err %v)", member, err)
	}).WithContext(ctx).WithTimeout(in.Timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
}

func currentUID(ctx context.Context, g Gomega, in SpecInput, p *urutauv1alpha1.CDCPipeline) string {
	got := &urutauv1alpha1.CDCPipeline{}
	g.Expect(in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
	return string(got.UID)
}

func clusterPhase(p *urutauv1alpha1.CDCPipeline, member string) urutauv1alpha1.ClusterPhase {
	for _, c := range p.Status.Clusters {
		if c.Name == member {
			return c.Phase
		}
	}
	return ""
}

func expectReady(ctx context.Context, in SpecInput, p *urutauv1alpha1.CDCPipeline) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &urutauv1alpha1.CDCPipeline{}
		g.Expect(in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, urutauv1alpha1.ConditionReady)).To(BeTrue(),
			"Ready is not True: %+v", got.Status.Conditions)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}).WithContext(ctx).WithTimeout(in.Timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
}

func deleteAndWait(ctx context.Context, in SpecInput, p *urutauv1alpha1.CDCPipeline) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(in.Hub.Delete(ctx, p))).To(Succeed())
	Eventually(func(g Gomega) {
		got := &urutauv1alpha1.CDCPipeline{}
		err := in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got)
		// Say what the hub says it waits for, should it never finish.
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "CDCPipeline %s not gone from the hub (get: %v); conditions %+v; clusters %+v",
			p.Name, err, got.Status.Conditions, got.Status.Clusters)
	}).WithContext(ctx).WithTimeout(in.Timeout).Should(Succeed())
}

// PlacedAndReadySpec: a pipeline placed on two members runs a coordinator in both, and the hub
// reports it Ready with every member Ready.
func PlacedAndReadySpec(ctx context.Context, inputGetter func() SpecInput) {
	in := inputGetter()
	p := pipeline(in, "e2e-ready", 7101, in.a(), in.b())
	By("submitting a pipeline placed on " + in.a() + " and " + in.b())
	Expect(in.Hub.Create(ctx, p)).To(Succeed())
	expectRunning(ctx, in, p, in.a())
	expectRunning(ctx, in, p, in.b())
	expectReady(ctx, in, p)
	got := &urutauv1alpha1.CDCPipeline{}
	Expect(in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
	Expect(got.Status.ReadyClusters).To(Equal("2/2"))
	Expect(got.Status.Inventory).To(ConsistOf(in.a(), in.b()))
	deleteAndWait(ctx, in, p)
}

// MoveSpec: moving a pipeline from A to B stops it on A before it starts on B.
func MoveSpec(ctx context.Context, inputGetter func() SpecInput) {
	in := inputGetter()
	p := pipeline(in, "e2e-move", 7102, in.a())
	Expect(in.Hub.Create(ctx, p)).To(Succeed())
	expectRunning(ctx, in, p, in.a())

	By("moving it to " + in.b())
	Expect(in.Hub.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
	p.Spec.Placement.Clusters = []string{in.b()}
	Expect(in.Hub.Update(ctx, p)).To(Succeed())

	By("never observing the coordinator in both members at once")
	deadline := time.Now().Add(in.Timeout)
	for {
		inA := in.Members[in.a()].Get(ctx, coordinatorKey(p), &appsv1.StatefulSet{}) == nil
		inB := in.Members[in.b()].Get(ctx, coordinatorKey(p), &appsv1.StatefulSet{}) == nil
		Expect(inA && inB).To(BeFalse(), "the coordinator is in %s and %s at the same time", in.a(), in.b())
		if !inA && inB {
			break
		}
		Expect(time.Now().Before(deadline)).To(BeTrue(), "move not done within %s (in %s: %v, in %s: %v)", in.Timeout, in.a(), inA, in.b(), inB)
		time.Sleep(100 * time.Millisecond)
	}
	expectRunning(ctx, in, p, in.b())
	expectAbsent(ctx, in, p, in.a())
	deleteAndWait(ctx, in, p)
}

// DeleteSpec: deleting the CR removes the workload from every member it ran on.
func DeleteSpec(ctx context.Context, inputGetter func() SpecInput) {
	in := inputGetter()
	p := pipeline(in, "e2e-delete", 7103, in.a(), in.b())
	Expect(in.Hub.Create(ctx, p)).To(Succeed())
	expectRunning(ctx, in, p, in.a())
	expectRunning(ctx, in, p, in.b())
	deleteAndWait(ctx, in, p)
	for _, m := range []string{in.a(), in.b()} {
		expectAbsent(ctx, in, p, m)
		for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Service{}, &corev1.ServiceAccount{}} {
			err := in.Members[m].Get(ctx, coordinatorKey(p), obj)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s left in %s", obj, coordinatorKey(p), m)
		}
	}
}

// TerminateAndClearSpec: a person sets status.terminated; the hub then writes nothing to the
// members (a spec change to the coordinator is not rolled out) until the person clears it.
func TerminateAndClearSpec(ctx context.Context, inputGetter func() SpecInput) {
	in := inputGetter()
	p := pipeline(in, "e2e-terminate", 7104, in.a())
	Expect(in.Hub.Create(ctx, p)).To(Succeed())
	expectRunning(ctx, in, p, in.a())
	sts := &appsv1.StatefulSet{}
	Expect(in.Members[in.a()].Get(ctx, coordinatorKey(p), sts)).To(Succeed())
	// What the hub wrote: the spec generation and the hub's managedFields entries. The member's
	// own controllers may still update status; that is not a hub write.
	hubWrites := func(s *appsv1.StatefulSet) []string {
		var out []string
		for _, mf := range s.ManagedFields {
			if strings.HasPrefix(mf.Manager, "urutau-operator@") {
				out = append(out, fmt.Sprintf("%s %s %s", mf.Manager, mf.Operation, mf.Time))
			}
		}
		return append(out, fmt.Sprint("generation ", s.Generation))
	}
	before := hubWrites(sts)

	By("terminating it through the status subresource, as a person would")
	Eventually(func() error {
		got := &urutauv1alpha1.CDCPipeline{}
		if err := in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		got.Status.Terminated = &urutauv1alpha1.Terminated{Reason: "ManualStop", Message: "stopped by e2e",
			At: time.Now().UTC().Format(time.RFC3339), ObservedGeneration: got.Generation}
		return in.Hub.Status().Update(ctx, got)
	}).WithContext(ctx).WithTimeout(in.Timeout).Should(Succeed())
	Eventually(func(g Gomega) {
		got := &urutauv1alpha1.CDCPipeline{}
		g.Expect(in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, urutauv1alpha1.ConditionStalled)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(in.Timeout).Should(Succeed())

	By("leaving the member untouched while terminated, even when the CR changes outside its spec")
	Eventually(func() error {
		got := &urutauv1alpha1.CDCPipeline{}
		if err := in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if got.Labels == nil {
			got.Labels = map[string]string{}
		}
		got.Labels["e2e/touched"] = "yes"
		return in.Hub.Update(ctx, got)
	}).WithContext(ctx).WithTimeout(in.Timeout).Should(Succeed())
	Consistently(func(g Gomega) {
		cur := &appsv1.StatefulSet{}
		g.Expect(in.Members[in.a()].Get(ctx, coordinatorKey(p), cur)).To(Succeed())
		g.Expect(hubWrites(cur)).To(Equal(before))
	}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	By("clearing it: the hub resumes")
	Eventually(func() error {
		got := &urutauv1alpha1.CDCPipeline{}
		if err := in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		got.Status.Terminated = nil
		return in.Hub.Status().Update(ctx, got)
	}).WithContext(ctx).WithTimeout(in.Timeout).Should(Succeed())
	expectReady(ctx, in, p)
	deleteAndWait(ctx, in, p)
}

// MemberRestartSpec: a member's API server goes away in the middle of a rollout; the other member
// is not held up, and the restarted member converges when it is back.
func MemberRestartSpec(ctx context.Context, inputGetter func() SpecInput) {
	in := inputGetter()
	p := pipeline(in, "e2e-restart", 7105, in.a(), in.b())
	restarted := make(chan error, 1)
	By("restarting " + in.b() + " while the pipeline is submitted")
	go func() {
		defer GinkgoRecover()
		restarted <- in.RestartMember(ctx, in.b(), 10*time.Second)
	}()
	Expect(in.Hub.Create(ctx, p)).To(Succeed())
	expectRunning(ctx, in, p, in.a())
	Expect(<-restarted).To(Succeed())
	expectRunning(ctx, in, p, in.b())
	expectReady(ctx, in, p)
	deleteAndWait(ctx, in, p)
}

// coordinatorPods lists the coordinator pods of p in a member, terminating ones included.
func coordinatorPods(ctx context.Context, g Gomega, c client.Client, p *urutauv1alpha1.CDCPipeline) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(c.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels(coordinator.SelectorLabels(p.Name)))).To(Succeed())
	return pods.Items
}

// MoveWaitsForTerminationSpec (real kubelets only): the coordinator on A ignores SIGTERM, so its
// pod stays Terminating until the kubelet kills it at the end of the grace period. Moving the
// pipeline to B must start nothing on B while that pod exists, and the hub must never report B
// Ready before B's pod is.
func MoveWaitsForTerminationSpec(ctx context.Context, inputGetter func() SpecInput) {
	in := inputGetter()
	p := pipeline(in, "e2e-grace", 7106, in.a())
	p.Spec.Image = in.IgnoresSIGTERMImage
	Expect(in.Hub.Create(ctx, p)).To(Succeed())
	// A failure below leaves no pipeline behind for the next run (its pods take the grace to go).
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(in.Hub.Delete(ctx, p))).To(Succeed())
	})
	expectRunning(ctx, in, p, in.a())

	By("moving it to " + in.b() + " while its pod in " + in.a() + " ignores SIGTERM")
	Expect(in.Hub.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
	p.Spec.Placement.Clusters = []string{in.b()}
	Expect(in.Hub.Update(ctx, p)).To(Succeed())

	By("starting nothing in " + in.b() + " until the pod in " + in.a() + " is gone")
	grace := time.Duration(coordinator.TerminationGracePeriodSeconds) * time.Second
	deadline := time.Now().Add(in.Timeout + grace)
	var deletedAt time.Time // when the old pod was deleted, as the API server recorded it
	var goneAt time.Time    // when the old pod was first seen gone
	for {
		g := NewWithT(GinkgoT())
		podsA := coordinatorPods(ctx, g, in.Members[in.a()], p)
		podsB := coordinatorPods(ctx, g, in.Members[in.b()], p)
		stsB := &appsv1.StatefulSet{}
		errB := in.Members[in.b()].Get(ctx, coordinatorKey(p), stsB)
		if len(podsA) > 0 {
			Expect(errB == nil || len(podsB) > 0).To(BeFalse(),
				"%s started (StatefulSet: %v, pods: %d) while the pod %s in %s still exists (deleting: %v)",
				in.b(), errB == nil, len(podsB), podsA[0].Name, in.a(), podsA[0].DeletionTimestamp != nil)
			// deletionTimestamp is when the grace period ends: the deletion plus its grace.
			if pod := podsA[0]; pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && deletedAt.IsZero() {
				deletedAt = pod.DeletionTimestamp.Add(-time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
			}
		} else if goneAt.IsZero() {
			goneAt = time.Now()
		}
		got := &urutauv1alpha1.CDCPipeline{}
		Expect(in.Hub.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		if clusterPhase(got, in.b()) == urutauv1alpha1.ClusterReady {
			Expect(errB).NotTo(HaveOccurred(), "the hub reports %s Ready with no coordinator there", in.b())
			Expect(stsB.Status.ReadyReplicas).To(BeNumerically(">=", 1), "the hub reports %s Ready before its pod is", in.b())
			break
		}
		Expect(time.Now().Before(deadline)).To(BeTrue(), "move not done within %s (pods in %s: %d, in %s: %d)",
			in.Timeout+grace, in.a(), len(podsA), in.b(), len(podsB))
		time.Sleep(200 * time.Millisecond)
	}
	Expect(deletedAt).NotTo(BeZero(), "the pod in %s was never seen terminating", in.a())
	Expect(goneAt).NotTo(BeZero(), "the pod in %s was never seen gone", in.a())
	// It ignored SIGTERM: only the kill at the end of the grace period ended it.
	Expect(goneAt.Sub(deletedAt)).To(BeNumerically(">=", grace-5*time.Second),
		"the pod in %s went %s after its deletion, before its %s grace period ran out", in.a(), goneAt.Sub(deletedAt), grace)
	expectRunning(ctx, in, p, in.b())
	expectAbsent(ctx, in, p, in.a())
	// Its pod in B ignores SIGTERM too: the deletion takes the grace period.
	in.Timeout += grace
	deleteAndWait(ctx, in, p)
}

// FencedSpec (real kubelets and a hub Deployment only): a fenced coordinator runs under the fence
// program the init container copied from the hub's image, and stops by itself when the hub stops
// renewing its fence Lease: the hub scaled to zero stands for a hub cut off from the member. The
// pod stays (the fence, its PID 1, keeps running) and turns not Ready once its reader, whose
// process serves the readiness probe, is gone. It runs again when the hub renews.
func FencedSpec(ctx context.Context, inputGetter func() SpecInput) {
	in := inputGetter()
	p := pipeline(in, "e2e-fenced", 7107, in.a())
	p.Spec.Placement.Fenced = true
	Expect(in.Hub.Create(ctx, p)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(in.Hub.Delete(ctx, p))).To(Succeed())
	})
	expectRunning(ctx, in, p, in.a())

	By("its pod runs the coordinator under the fence")
	member := in.Members[in.a()]
	pod := onlyPod(ctx, member, p)
	Expect(pod.Spec.InitContainers).To(ContainElement(HaveField("Name", coordinator.FenceInitContainer)))
	cmd := pod.Spec.Containers[0].Command
	Expect(cmd).NotTo(BeEmpty())
	Expect(cmd[0]).To(Equal(coordinator.FenceBinary))
	fc, err := fence.ParseCommandLine(cmd[1:], GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	restarts := pod.Status.ContainerStatuses[0].RestartCount

	By("stopping the hub: the fence Lease is no longer renewed")
	DeferCleanup(func(ctx SpecContext) { scaleHub(ctx, in, 1) })
	scaleHub(ctx, in, 0)
	lease := &coordinationv1.Lease{}
	leaseKey := client.ObjectKey{Namespace: fc.Namespace, Name: fc.Name}
	Expect(member.Get(ctx, leaseKey, lease)).To(Succeed())
	Expect(lease.Spec.RenewTime).NotTo(BeNil())
	lastRenewal := lease.Spec.RenewTime.Time

	// The fence stops its command within its bound of the last renewal it saw; the readiness
	// probe (every 10 s, 3 failures) then takes up to 30 s more. kind's nodes share this
	// machine's clock, so renewTime and time.Now compare.
	probe := 40 * time.Second
	Eventually(func(g Gomega) {
		got := onlyPod(ctx, member, p)
		g.Expect(isReady(got)).To(BeFalse(), "the coordinator is still Ready %s after the last renewal", time.Since(lastRenewal).Round(time.Second))
		g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(Equal(restarts), "the fence stops its command, not the container")
	}).WithContext(ctx).WithTimeout(fc.Config.Bound() + probe + 30*time.Second).WithPolling(time.Second).Should(Succeed())
	stopped := time.Since(lastRenewal)
	Expect(member.Get(ctx, leaseKey, lease)).To(Succeed())
	Expect(lease.Spec.RenewTime.Time).To(BeTemporally("==", lastRenewal), "the Lease was renewed while the hub was stopped")
	Expect(stopped).To(BeNumerically("<=", fc.Config.Bound()+probe+5*time.Second))
	fmt.Fprintf(GinkgoWriter, "FIGURE: fenced coordinator not Ready %s after the last renewal (fence bound %s, readiness probe up to 30s)\n",
		stopped.Round(time.Second), fc.Config.Bound())

	By("starting the hub again: renewals resume and the coordinator runs again, in the same container")
	scaleHub(ctx, in, 1)
	Eventually(func(g Gomega) {
		got := onlyPod(ctx, member, p)
		g.Expect(isReady(got)).To(BeTrue())
		g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(Equal(restarts))
	}).WithContext(ctx).WithTimeout(2 * in.Timeout).WithPolling(time.Second).Should(Succeed())
	expectReady(ctx, in, p)
	deleteAndWait(ctx, in, p)
}

// onlyPod is the one coordinator pod of p in member c.
func onlyPod(ctx context.Context, c client.Client, p *urutauv1alpha1.CDCPipeline) *corev1.Pod {
	GinkgoHelper()
	pods := coordinatorPods(ctx, Default, c, p)
	Expect(pods).To(HaveLen(1))
	Expect(pods[0].Status.ContainerStatuses).NotTo(BeEmpty())
	return &pods[0]
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// scaleHub sets the hub Deployment's replicas and waits until it runs that many.
func scaleHub(ctx context.Context, in SpecInput, replicas int32) {
	GinkgoHelper()
	d := &appsv1.Deployment{}
	Expect(in.Hub.Get(ctx, in.HubDeployment, d)).To(Succeed())
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = &replicas
	Expect(in.Hub.Patch(ctx, d, patch)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(in.Hub.Get(ctx, in.HubDeployment, d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.Replicas).To(Equal(replicas), "hub pods (terminating ones are not counted)")
		g.Expect(d.Status.AvailableReplicas).To(Equal(replicas))
		// A terminating hub pod may still write: scaled to zero means no pod at all.
		pods := &corev1.PodList{}
		g.Expect(in.Hub.List(ctx, pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels))).To(Succeed())
		if replicas == 0 {
			g.Expect(pods.Items).To(BeEmpty())
		}
	}).WithContext(ctx).WithTimeout(in.Timeout).WithPolling(time.Second).Should(Succeed())
}
