package fleet_test

import (
	"context"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/failover"
	"github.com/urutau-io/fleet/internal/fence"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/status"
	"github.com/urutau-io/fleet/internal/testenv"
)

// Fenced placements and failover. envtest runs no kubelet: a "reader" on a member is its
// coordinator StatefulSet or pod, as the other specs count it; and the reader on a member whose
// API server is killed runs until a fence reading that API server would have killed it: the
// spec runs the fence's own decision (internal/fence) against the member (simFence), with a
// reader that ignores SIGTERM. cmd/fence's tests show, with real processes, that the fence
// program carries that decision out within its bound.
var _ = Describe("Fenced placements and failover", Label("failover"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		// A spec before this one may have stopped and restarted a: until the hub has seen it
		// answer again, a failover placement rightly starts on b.
		Eventually(func(g Gomega) { expectAnswering(g, ctx, "a", "b") }).Should(Succeed())
	})

	It("fails over from a killed member after the threshold and the fence's bound, with no person acting, and never back by itself", func(ctx SpecContext) {
		p := newPipeline(ns, "fo", failoverOn(10*time.Second, "a", "b"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)

		By("placing it on the first candidate, fenced, and renewing its fence Lease there")
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectFenced(g, ctx, members["a"], p)
			g.Expect(failoverMember(g, ctx, key)).To(Equal("a"))
		}).Should(Succeed())
		expectRenewed(ctx, members["a"], p)
		markReady(ctx, members["a"], ns, p.Name)
		Eventually(func(g Gomega) {
			expectReady(g, getPipeline(g, ctx, key))
		}).Should(Succeed())
		expectEmpty(Default, ctx, members["b"], ns, p.UID)

		By("killing a: its reader runs until a fence reading a's API server would have killed it")
		fenceA := simulateFence(ctx, members["a"], p)
		Eventually(fenceA.started).Should(BeTrue(), "a's fence saw renewals and started its reader")
		sampler := sampleStarts(ctx, members["b"], ns, p.Name)
		killed := time.Now()
		stopAPIServer(members["a"])
		DeferCleanup(func() { startAPIServer(members["a"]) })

		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, key)
			g.Expect(got.Status.Failover).NotTo(BeNil())
			g.Expect(got.Status.Failover.Member).To(Equal("b"))
			g.Expect(got.Status.Failover.Last).NotTo(BeNil())
			g.Expect(got.Status.Failover.Last.Reason).To(Equal(urutauv1alpha1.FailoverMemberLost))
		}, 2*time.Minute).Should(Succeed())
		decided := time.Now()
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["b"], p) }, 2*time.Minute).Should(Succeed())
		started := sampler.waitFirst()
		fenceBound := fenceTTL + fenceGrace
		dead := fenceA.killedAt()
		Expect(dead).NotTo(BeZero(), "a's fence never stopped its reader")
		Expect(started.After(dead)).To(BeTrue(), "b's reader appeared %s before a's fence killed a's", dead.Sub(started))
		figure("failover: a's fence killed its reader %s after the kill; b's reader appeared %s after that",
			dead.Sub(killed).Round(100*time.Millisecond), started.Sub(dead).Round(100*time.Millisecond))
		figure("failover: member a killed -> move decided in %s, coordinator created on b in %s (threshold 10s, fence bound %s + margin %s)",
			decided.Sub(killed).Round(100*time.Millisecond), started.Sub(killed).Round(100*time.Millisecond), fenceBound, fenceMargin)

		By("b ready: the move is complete, with its reader gap, an event and no condition left")
		markReady(ctx, members["b"], ns, p.Name)
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, key)
			l := got.Status.Failover.Last
			g.Expect(l.ReadyAt).NotTo(BeNil())
			g.Expect(l.ReaderGapSeconds).To(BeNumerically(">", 0))
			g.Expect(got.Status.Failover.Failovers).To(BeEquivalentTo(1))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, failover.ConditionFailingOver)).To(BeNil())
			expectReady(g, got)
			e, err := leaseEntry(ctx, p.UID, "a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.State).To(Equal(urutauv1alpha1.LeaseMemberGone))
			g.Expect(e.Reason).To(ContainSubstring("fenced"))
			ev := &eventsList{}
			g.Expect(hubClient.List(ctx, &ev.EventList, client.InNamespace(ns))).To(Succeed())
			g.Expect(ev.reasons()).To(ContainElements(failover.EventStarted, failover.EventCompleted, fleet.EventFenceDrained))
			figure("failover: reader gap recorded in status %ds", l.ReaderGapSeconds)
		}).Should(Succeed())
		Expect(getPipeline(Default, ctx, key).Annotations).NotTo(HaveKey(urutauv1alpha1.AnnotationConfirmGone))

		By("a back: it is emptied, and the pipeline stays on b")
		startAPIServer(members["a"])
		Eventually(func(g Gomega) {
			expectEmpty(g, ctx, members["a"], ns, p.UID)
			lease := &coordinationv1.Lease{}
			g.Expect(members["a"].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: coordinator.FenceLeaseName(p.Name)}, lease)).NotTo(Succeed(), "the fence Lease goes with the rest")
		}, time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(failoverMember(g, ctx, key)).To(Equal("b"))
			expectPlaced(g, ctx, members["b"], p)
		}, 3*time.Second).Should(Succeed())

		By("asked to move back: b stops before a starts, as in any move")
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) {
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, urutauv1alpha1.AnnotationFailoverTo, "a")
		})
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, key)
			g.Expect(got.Status.Failover.Member).To(Equal("a"))
			g.Expect(got.Status.Failover.Last.Reason).To(Equal(urutauv1alpha1.FailoverRequested))
			g.Expect(got.Annotations).NotTo(HaveKey(urutauv1alpha1.AnnotationFailoverTo))
			expectPlaced(g, ctx, members["a"], p)
			expectEmpty(g, ctx, members["b"], ns, p.UID)
		}, time.Minute).Should(Succeed())
	})

	It("completes a hand move away from an unreachable fenced member by itself, without confirm-cluster-gone", func(ctx SpecContext) {
		p := newPipeline(ns, "fenced-move", onClusters("a"), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Fenced = true })
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectFenced(g, ctx, members["a"], p)
		}).Should(Succeed())
		fenceA := simulateFence(ctx, members["a"], p)
		Eventually(fenceA.started).Should(BeTrue(), "a's fence saw renewals and started its reader")
		sampler := sampleStarts(ctx, members["b"], ns, p.Name)
		killed := time.Now()
		stopAPIServer(members["a"])
		DeferCleanup(func() { startAPIServer(members["a"]) })

		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		By("waiting, not stalled: the move completes by itself once the fence's bound has passed")
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, key)
			a := clusterStatus(got, "a")
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Message).To(ContainSubstring("completes at about"))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, urutauv1alpha1.ConditionStalled)).To(BeNil())
		}).Should(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["b"], p) }, time.Minute).Should(Succeed())
		started := sampler.waitFirst()
		Expect(fenceA.killedAt()).NotTo(BeZero(), "a's fence never stopped its reader")
		Expect(started.After(fenceA.killedAt())).To(BeTrue(), "b's reader appeared before a's fence killed a's")
		figure("fenced hand move: member a killed -> coordinator created on b in %s (fence bound %s + margin %s)",
			started.Sub(killed).Round(100*time.Millisecond), fenceTTL+fenceGrace, fenceMargin)
	})

	It("keeps an unfenced move blocked on an unreachable member, as before", func(ctx SpecContext) {
		p := newPipeline(ns, "unfenced-move", onClusters("a"))
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		key := client.ObjectKeyFromObject(p)
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		lease := &coordinationv1.Lease{}
		Expect(members["a"].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: coordinator.FenceLeaseName(p.Name)}, lease)).NotTo(Succeed(), "no fence Lease for an unfenced placement")
		stopAPIServer(members["a"])
		DeferCleanup(func() { startAPIServer(members["a"]) })
		updatePipeline(ctx, key, func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, p.UID) }, 3*(fenceTTL+fenceGrace+fenceMargin)).Should(Succeed())
		Expect(meta.IsStatusConditionTrue(getPipeline(Default, ctx, key).Status.Conditions, status.ConditionMoveBlocked)).To(BeTrue())
	})
})

// failoverOn is a fenced failover placement over candidates.
func failoverOn(threshold time.Duration, candidates ...string) func(*urutauv1alpha1.CDCPipeline) {
	return func(p *urutauv1alpha1.CDCPipeline) {
		p.Spec.Placement = urutauv1alpha1.Placement{Fenced: true, Failover: &urutauv1alpha1.FailoverPlacement{
			Candidates: candidates, Threshold: &metav1.Duration{Duration: threshold}}}
	}
}

// expectAnswering checks that the hub's published health records say every one of ms answers.
func expectAnswering(g Gomega, ctx context.Context, ms ...string) {
	for _, m := range ms {
		g.Expect(healthRecordOf(g, ctx, m).Annotations).To(HaveKeyWithValue(urutauv1alpha1.AnnotationReachable, "True"), "the hub's health record of %s", m)
	}
}

func failoverMember(g Gomega, ctx context.Context, key types.NamespacedName) string {
	st := getPipeline(g, ctx, key).Status.Failover
	if st == nil {
		return ""
	}
	return st.Member
}

// expectFenced checks that m runs p's coordinator under the fence: the init container from the
// hub's image, the fence's command before urutau's, and a Role that reads the one fence Lease.
func expectFenced(g Gomega, ctx context.Context, m *testenv.Cluster, p *urutauv1alpha1.CDCPipeline) {
	sts, err := coordinatorSTS(ctx, m, p.Namespace, p.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sts).NotTo(BeNil())
	pod := sts.Spec.Template.Spec
	g.Expect(pod.InitContainers).To(HaveLen(1))
	g.Expect(pod.InitContainers[0].Image).To(Equal(fenceImage))
	g.Expect(pod.Containers[0].Command[0]).To(Equal(coordinator.FenceBinary))
	g.Expect(pod.Containers[0].Command).To(ContainElement("urutau-coordinator"))
	role := &rbacRole{}
	g.Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: coordinator.CoordinatorName(p.Name)}, &role.Role)).To(Succeed())
	g.Expect(role.grantsLease(coordinator.FenceLeaseName(p.Name))).To(BeTrue())
}

// expectRenewed checks that the hub renews p's fence Lease on m: its renewTime changes.
func expectRenewed(ctx context.Context, m *testenv.Cluster, p *urutauv1alpha1.CDCPipeline) {
	GinkgoHelper()
	read := func(g Gomega) string {
		l := &coordinationv1.Lease{}
		g.Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: coordinator.FenceLeaseName(p.Name)}, l)).To(Succeed())
		g.Expect(l.Spec.HolderIdentity).To(HaveValue(Equal(string(p.UID))))
		g.Expect(l.Spec.RenewTime).NotTo(BeNil())
		return l.Spec.RenewTime.String()
	}
	var first string
	Eventually(func(g Gomega) { first = read(g) }).Should(Succeed())
	Eventually(func(g Gomega) { g.Expect(read(g)).NotTo(Equal(first)) }, 3*fenceTTL).Should(Succeed())
}

// simFence runs the fence's own decision (internal/fence) against member m's API server, as
// cmd/fence does in the coordinator pod, with the pod's reader taken to ignore SIGTERM: it is dead
// when the decision says SIGKILL. It stands for the process envtest cannot run.
type simFence struct {
	mu           sync.Mutex
	run          bool
	killed       time.Time
	origin       time.Time
	cfg          fence.Config
	st           fence.State
	member       *testenv.Cluster
	key          client.ObjectKey
	holder       string
	pollInterval time.Duration
}

func simulateFence(ctx context.Context, m *testenv.Cluster, p *urutauv1alpha1.CDCPipeline) *simFence {
	f := &simFence{origin: time.Now(), cfg: fence.Config{TTL: fenceTTL, Grace: fenceGrace}, member: m,
		key: client.ObjectKey{Namespace: p.Namespace, Name: coordinator.FenceLeaseName(p.Name)}, holder: string(p.UID),
		pollInterval: fenceTTL / 10}
	sctx, cancel := context.WithCancel(ctx)
	DeferCleanup(cancel)
	go f.poll(sctx)
	go f.decide(sctx)
	return f
}

// poll reads the Lease one request at a time, as the fence does, and records each answer.
func (f *simFence) poll(ctx context.Context) {
	for ctx.Err() == nil {
		sent := time.Since(f.origin)
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		l := &coordinationv1.Lease{}
		err := f.member.Client.Get(rctx, f.key, l)
		cancel()
		if err == nil || apierrors.IsNotFound(err) {
			tok := ""
			if err == nil && l.Spec.RenewTime != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == f.holder {
				tok = l.Spec.RenewTime.String()
			}
			f.mu.Lock()
			f.st = f.st.Observe(fence.Poll{SentAt: sent, Token: tok})
			f.mu.Unlock()
		}
		time.Sleep(f.pollInterval)
	}
}

// decide applies the decision every 10 ms.
func (f *simFence) decide(ctx context.Context) {
	for ctx.Err() == nil {
		f.mu.Lock()
		var d fence.Decision
		f.st, d = fence.Step(f.cfg, f.st, time.Since(f.origin))
		switch d.Action {
		case fence.Start:
			f.run = true
		case fence.Kill:
			f.killed = time.Now()
			f.st = f.st.Exited()
		}
		f.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *simFence) started() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.run
}

// killedAt is when the fence killed its reader, zero while it has not.
func (f *simFence) killedAt() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed
}

// startSampler finds when a reader of pipeline (its coordinator StatefulSet or a pod) first
// appears on member m, sampling every 5 ms.
type startSampler struct {
	mu sync.Mutex
	// after is when the last sample that saw no reader was sent: the reader appeared later.
	after time.Time
	seen  bool
	stop  context.CancelFunc
}

func sampleStarts(ctx context.Context, m *testenv.Cluster, ns, pipeline string) *startSampler {
	s := &startSampler{}
	sctx, cancel := context.WithCancel(ctx)
	s.stop = cancel
	DeferCleanup(cancel)
	go func() {
		for sctx.Err() == nil {
			now := time.Now()
			sts, err := coordinatorSTS(sctx, m, ns, pipeline)
			pods := &corev1.PodList{}
			perr := m.Client.List(sctx, pods, client.InNamespace(ns), client.MatchingLabels(coordinator.SelectorLabels(pipeline)))
			s.mu.Lock()
			switch {
			case err != nil || perr != nil:
			case sts != nil || len(pods.Items) > 0:
				s.seen = true
				s.mu.Unlock()
				return
			default:
				s.after = now
			}
			s.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return s
}

// first is no later than when the reader appeared: when the last sample that did not see it was
// sent (reads are linearizable, so it appeared after that sample was served). Zero until seen.
func (s *startSampler) first() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen {
		return time.Time{}
	}
	return s.after
}

// waitFirst waits for the sampler's own sample that sees the reader: a poll of the spec may see
// it before the sampler's next read does.
func (s *startSampler) waitFirst() time.Time {
	GinkgoHelper()
	Eventually(s.first, 10*time.Second, 5*time.Millisecond).ShouldNot(BeZero(), "the start sampler never saw the reader")
	return s.first()
}

// rbacRole is a member Role.
type rbacRole struct{ rbacv1.Role }

// grantsLease tells whether the Role lets its subject read the Lease name, and no other.
func (r *rbacRole) grantsLease(name string) bool {
	for _, rule := range r.Rules {
		if slices.Contains(rule.APIGroups, "coordination.k8s.io") && slices.Contains(rule.Resources, "leases") {
			return slices.Equal(rule.ResourceNames, []string{name}) && slices.Contains(rule.Verbs, "get")
		}
	}
	return false
}
