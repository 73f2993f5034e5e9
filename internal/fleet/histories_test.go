package fleet_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/status"
	"github.com/urutau-io/fleet/internal/testenv"
)

// readerSampler watches, in the background, which members hold a reader of some pipelines: a
// coordinator pod (any phase, terminating included) or StatefulSet. envtest runs no StatefulSet
// controller, so the specs play it: they create and delete the pods. A violation is a sample
// where the rule the spec gives breaks.
type readerSampler struct {
	samples, violations atomic.Int64
	first               atomic.Pointer[string]
	stop                context.CancelFunc
	wg                  sync.WaitGroup
}

// readerAt is one sample: for each pipeline name, the members holding one of its readers.
type readerAt map[string][]string

// sampleReaders starts sampling pipelines (by name) in ns on every member; broken tells a
// violation.
func sampleReaders(ctx context.Context, ns string, pipelines []string, broken func(readerAt) bool) *readerSampler {
	s := &readerSampler{}
	sctx, cancel := context.WithCancel(ctx)
	s.stop = cancel
	s.wg.Go(func() {
		for sctx.Err() == nil {
			at, err := readersNow(sctx, ns, pipelines)
			if err == nil {
				s.samples.Add(1)
				if broken(at) {
					s.violations.Add(1)
					msg := fmt.Sprint(at)
					s.first.CompareAndSwap(nil, &msg)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	return s
}

func readersNow(ctx context.Context, ns string, pipelines []string) (readerAt, error) {
	at := readerAt{}
	for _, n := range []string{"a", "b", "c"} {
		m := members[n]
		for _, name := range pipelines {
			sts, err := coordinatorSTS(ctx, m, ns, name)
			if err != nil {
				return nil, err
			}
			pods := &corev1.PodList{}
			if err := m.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(coordinator.SelectorLabels(name))); err != nil {
				return nil, err
			}
			if sts != nil || len(pods.Items) > 0 {
				at[name] = append(at[name], n)
			}
		}
	}
	return at, nil
}

// done stops sampling and asserts no violation among enough samples. A history the hub settles
// quickly on a loaded machine is sampled on into its settled state until there are enough.
func (s *readerSampler) done(what string) {
	GinkgoHelper()
	Eventually(s.samples.Load).Should(BeNumerically(">", 10), "the sampler must keep sampling")
	s.stop()
	s.wg.Wait()
	first := ""
	if p := s.first.Load(); p != nil {
		first = *p
	}
	figure("%s: %d samples of every member's readers, %d violations %s", what, s.samples.Load(), s.violations.Load(), first)
	Expect(s.samples.Load()).To(BeNumerically(">", 10))
	Expect(s.violations.Load()).To(BeZero(), "first violation: %s", first)
}

// oneReader: at most one member holds a reader, of at most one pipeline.
func oneReader(at readerAt) bool {
	n := 0
	for _, ms := range at {
		n += len(ms)
	}
	return n > 1
}

// playPod plays the StatefulSet controller in member m: the coordinator pod of pipeline name.
func playPod(ctx context.Context, m *testenv.Cluster, ns, name string) *corev1.Pod {
	GinkgoHelper()
	pod := fakeCoordinatorPod(ctx, m, ns, name)
	Expect(m.Client.Create(ctx, pod)).To(Succeed())
	return pod
}

// slowPod plays the StatefulSet controller with a pod that shuts down slowly: a finalizer holds it
// once deleted, until releasePod.
func slowPod(ctx context.Context, m *testenv.Cluster, ns, name string) *corev1.Pod {
	GinkgoHelper()
	pod := fakeCoordinatorPod(ctx, m, ns, name)
	pod.Finalizers = []string{"example.com/slow-shutdown"}
	Expect(m.Client.Create(ctx, pod)).To(Succeed())
	return pod
}

// releasePod lets a slowPod go.
func releasePod(ctx context.Context, m *testenv.Cluster, pod *corev1.Pod) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(m.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		got.Finalizers = nil
		g.Expect(m.Client.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	// A pod bound to a node stays until its kubelet confirms it gone; these API servers have none.
	killPod(ctx, m, pod)
}

// killPod plays the garbage collector: the pod goes.
func killPod(ctx context.Context, m *testenv.Cluster, pod *corev1.Pod) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(m.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)))).To(Succeed())
}

func leaseCondition(g Gomega, ctx context.Context, p *urutauv1alpha1.CDCPipeline) *metav1.Condition {
	got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
	c := meta.FindStatusCondition(got.Status.Conditions, status.ConditionReaderLease)
	g.Expect(c).NotTo(BeNil())
	return c
}

// The histories of issue #13 that broke the one-reader rule, each as a named case.
var _ = Describe("One reader per source identity", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("moves back to a member still draining only once the member it left holds no reader", func(ctx SpecContext) {
		p := newPipeline(ns, "flap", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		podA := playPod(ctx, members["a"], ns, p.Name)
		// Something else holds one of the pipeline's objects in a (as KEDA's finalizer holds a
		// ScaledObject): a keeps draining after its reader is gone.
		holdWithFinalizer(ctx, members["a"], ns, coordinator.CoordinatorName(p.Name))
		sampler := sampleReaders(ctx, ns, []string{p.Name}, oneReader)

		By("moving to b: b starts once a's pod is gone, though a still drains")
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Eventually(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).To(BeNil())
		}).Should(Succeed())
		killPod(ctx, members["a"], podA)
		Eventually(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["b"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).NotTo(BeNil())
			e, err := leaseEntry(ctx, p.UID, "a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e).NotTo(BeNil(), "a still holds an object: it stays recorded")
			g.Expect(e.State).To(Equal(urutauv1alpha1.LeaseMemberDrained))
		}).Should(Succeed())
		podB := playPod(ctx, members["b"], ns, p.Name)

		By("moving back to a (a GitOps revert): a waits for b's reader to stop")
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"a"} })
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(clusterStatus(got, "a")).NotTo(BeNil())
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterPending))
			sts, err := coordinatorSTS(ctx, members["b"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).To(BeNil())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).To(BeNil(), "a started while b's pod still runs")
		}).Should(Succeed())
		killPod(ctx, members["b"], podB)
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		sampler.done("move back to a draining member")
	})

	It("holds a renamed pipeline (same source) until the old one's reader on an unreachable member is gone", func(ctx SpecContext) {
		old := newPipelineWithServerID(ns, "rename-old", serverIDs.Add(1)+1000, onClusters("c"))
		Expect(hubClient.Create(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["c"], old) }).Should(Succeed())
		podC := playPod(ctx, members["c"], ns, old.Name)
		stopAPIServer(members["c"])
		DeferCleanup(func() { startAPIServer(members["c"]) })
		Expect(hubClient.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(old), &urutauv1alpha1.CDCPipeline{}))).To(BeTrue())
		}).Should(Succeed())

		By("the new pipeline, same serverId, waits and says for what")
		renamed := renamedFrom(old, "rename-new", onClusters("b"))
		Expect(hubClient.Create(ctx, renamed)).To(Succeed())
		Eventually(func(g Gomega) {
			c := leaseCondition(g, ctx, renamed)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(status.ReasonWaitingForReaders))
			g.Expect(c.Message).To(ContainSubstring("rename-old on cluster c"))
		}).Should(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, renamed.UID) }, 3*time.Second).Should(Succeed())

		By("c returns: its tombstone empties it; once the old pod is gone the new pipeline starts")
		startAPIServer(members["c"])
		Eventually(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["c"], ns, old.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).To(BeNil())
		}, afterLateWrites).Should(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, renamed.UID) }, 2*time.Second).Should(Succeed())
		sampler := sampleReaders(ctx, ns, []string{old.Name, renamed.Name}, oneReader)
		killPod(ctx, members["c"], podC)
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["b"], renamed)
			g.Expect(leaseCondition(g, ctx, renamed).Status).To(Equal(metav1.ConditionTrue))
			e, err := leaseEntry(ctx, old.UID, "c")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e).To(BeNil(), "the old pipeline's tombstone is gone once c is empty")
		}).Should(Succeed())
		sampler.done("rename with the same source")
	})

	It("runs only one of two pipelines created at once with one source", func(ctx SpecContext) {
		id := serverIDs.Add(1) + 1000
		p := newPipelineWithServerID(ns, "race-1", id, onClusters("a"))
		q := newPipelineWithServerID(ns, "race-2", id, onClusters("b"))
		sampler := sampleReaders(ctx, ns, []string{p.Name, q.Name}, func(at readerAt) bool { return len(at) > 1 })
		var wg sync.WaitGroup
		for _, x := range []*urutauv1alpha1.CDCPipeline{p, q} {
			wg.Go(func() {
				defer GinkgoRecover()
				Expect(hubClient.Create(ctx, x)).To(Succeed())
			})
		}
		wg.Wait()
		var winner, loser *urutauv1alpha1.CDCPipeline
		Eventually(func(g Gomega) {
			pc, qc := leaseCondition(g, ctx, p), leaseCondition(g, ctx, q)
			g.Expect([]metav1.ConditionStatus{pc.Status, qc.Status}).To(ConsistOf(metav1.ConditionTrue, metav1.ConditionFalse))
			winner, loser = p, q
			if qc.Status == metav1.ConditionTrue {
				winner, loser = q, p
			}
			g.Expect(leaseCondition(g, ctx, loser).Reason).To(Equal(status.ReasonSourceInUse))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			for _, n := range []string{"a", "b"} {
				expectEmpty(g, ctx, members[n], ns, loser.UID)
			}
		}, 2*time.Second).Should(Succeed())

		By("the winner goes: the other starts once its reader is gone")
		Expect(hubClient.Delete(ctx, winner)).To(Succeed())
		Eventually(func(g Gomega) {
			m := "b"
			if loser == p {
				m = "a"
			}
			expectPlaced(g, ctx, members[m], loser)
		}).Should(Succeed())
		sampler.done("two creates racing with one source")
	})

	It("consumes confirm-cluster-gone: a stale confirmation never approves a later move", func(ctx SpecContext) {
		p := newPipeline(ns, "stale-confirm", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) {
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, urutauv1alpha1.AnnotationConfirmGone, "a")
		})
		Eventually(func(g Gomega) {
			g.Expect(getPipeline(g, ctx, client.ObjectKeyFromObject(p)).Annotations).NotTo(HaveKey(urutauv1alpha1.AnnotationConfirmGone))
			ev := &eventsList{}
			g.Expect(hubClient.List(ctx, &ev.EventList, client.InNamespace(ns))).To(Succeed())
			g.Expect(ev.reasons()).To(ContainElement(fleet.EventConfirmationIgnored))
		}).Should(Succeed())

		By("later, a stops answering and the pipeline moves: the move waits")
		stopAPIServer(members["a"])
		DeferCleanup(func() { startAPIServer(members["a"]) })
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, status.ConditionMoveBlocked)).To(BeTrue())
		}).Should(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, p.UID) }, 3*time.Second).Should(Succeed())
	})

	It("adds a member to a placement that keeps one, without waiting, even while a placed member does not answer", func(ctx SpecContext) {
		p := newPipeline(ns, "add-while-down", onClusters("a", "b"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectPlaced(g, ctx, members["b"], p)
		}).Should(Succeed())
		stopAPIServer(members["a"])
		DeferCleanup(func() { startAPIServer(members["a"]) })
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"a", "b", "c"} })
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["c"], p)
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterUnreachable))
			g.Expect(clusterStatus(got, "a").Message).NotTo(ContainSubstring("no longer placed"))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, status.ConditionMoveBlocked)).To(BeNil())
		}).Should(Succeed())
	})

	It("counts a terminating coordinator pod as a reader", func(ctx SpecContext) {
		p := newPipeline(ns, "terminating", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		// A pod that is terminating: deleted, held by a finalizer as a slow shutdown would hold it.
		pod := slowPod(ctx, members["a"], ns, p.Name)
		Expect(members["a"].Client.Delete(ctx, pod)).To(Succeed())
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, p.UID) }, 3*time.Second).Should(Succeed())
		releasePod(ctx, members["a"], pod)
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["b"], p) }).Should(Succeed())
	})

	It("empties a member that answers once the deleted pipeline's terminating pod goes, and lets the renamed one start", func(ctx SpecContext) {
		old := newPipeline(ns, "slow-old", onClusters("a"))
		Expect(hubClient.Create(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], old) }).Should(Succeed())
		pod := slowPod(ctx, members["a"], ns, old.Name)

		By("the deletion outlasts the grace: the CR goes, a's entry stays as a tombstone")
		Expect(hubClient.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(old), &urutauv1alpha1.CDCPipeline{}))).To(BeTrue())
		}).Should(Succeed())
		e, err := leaseEntry(ctx, old.UID, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(e).NotTo(BeNil(), "tombstone for a")
		renamed := renamedFrom(old, "slow-new", onClusters("b"))
		Expect(hubClient.Create(ctx, renamed)).To(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, renamed.UID) }, 2*time.Second).Should(Succeed())

		By("the pod goes; nothing else happens: the tombstone replay empties a by itself")
		releasePod(ctx, members["a"], pod)
		killPod(ctx, members["a"], pod)
		Eventually(func(g Gomega) {
			e, err := leaseEntry(ctx, old.UID, "a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e).To(BeNil(), "the tombstone of a member that answers and holds nothing")
			expectEmpty(g, ctx, members["a"], ns, old.UID)
			expectPlaced(g, ctx, members["b"], renamed)
		}).Should(Succeed())
	})
})

var _ = Describe("Workers count as readers", func() {
	It("starts on the new member only once the old coordinator's workers are gone too", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		p := newPipeline(ns, "workers", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		// A worker the coordinator started (the garbage collector removes it after its owner, the
		// coordinator pod, in a real cluster).
		worker := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: coordinator.WorkerGroupPrefix(p.Name, "raw.orders") + "-0", Labels: map[string]string{
				urutauv1alpha1.LabelApp: coordinator.AppWorker, urutauv1alpha1.LabelPipeline: p.Name, coordinator.LabelTable: "raw.orders",
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: image}}},
		}
		Expect(members["a"].Client.Create(ctx, worker)).To(Succeed())
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Eventually(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).To(BeNil())
		}).Should(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, p.UID) }, 3*time.Second).Should(Succeed())
		killPod(ctx, members["a"], worker)
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["b"], p) }).Should(Succeed())
	})
})

// holdWithFinalizer puts a foreign finalizer on the pipeline's ConfigMap in m, and removes it
// when the spec ends.
func holdWithFinalizer(ctx context.Context, m *testenv.Cluster, ns, name string) {
	GinkgoHelper()
	const finalizer = "example.com/hold"
	edit := func(ctx context.Context, add bool) {
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			err := m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)
			if !add && apierrors.IsNotFound(err) {
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if add {
				cm.Finalizers = append(cm.Finalizers, finalizer)
			} else {
				cm.Finalizers = nil
			}
			g.Expect(m.Client.Update(ctx, cm)).To(Succeed())
		}).Should(Succeed())
	}
	edit(ctx, true)
	DeferCleanup(func(ctx SpecContext) { edit(ctx, false) })
}
