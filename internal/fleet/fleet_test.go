package fleet_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/status"
	"github.com/urutau-io/fleet/internal/testenv"
)

var _ = Describe("CoordinatorReconciler", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	// create creates p on the hub and waits until the hub added its finalizer and UID.
	create := func(ctx context.Context, p *urutauv1alpha1.CDCPipeline) *urutauv1alpha1.CDCPipeline {
		Expect(hubClient.Create(ctx, p)).To(Succeed())
		return p
	}

	It("places by cluster names", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "names", onClusters("a", "c")))
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectPlaced(g, ctx, members["c"], p)
			expectEmpty(g, ctx, members["b"], ns, p.UID)
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(got.Finalizers).To(ContainElement(urutauv1alpha1.Finalizer))
			g.Expect(got.Status.Inventory).To(Equal([]string{"a", "c"}))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.ReadyClusters).To(Equal("0/2"))
		}).Should(Succeed())

		markReady(ctx, members["a"], ns, p.Name)
		markReady(ctx, members["c"], ns, p.Name)
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(got.Status.ReadyClusters).To(Equal("2/2"))
			expectReady(g, got)
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, urutauv1alpha1.ConditionReconciling)).To(BeNil())
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, urutauv1alpha1.ConditionStalled)).To(BeNil())
			for _, c := range got.Status.Conditions {
				g.Expect(c.ObservedGeneration).To(Equal(got.Generation), c.Type)
			}
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterReady))
			g.Expect(clusterStatus(got, "a").CoordinatorReadyReplicas).To(Equal(int32(1)))
		}).Should(Succeed())
	})

	It("places by cluster selector, and follows members joining the selection", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "selector", func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}
		}))
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectPlaced(g, ctx, members["c"], p)
			expectEmpty(g, ctx, members["b"], ns, p.UID)
		}).Should(Succeed())

		// b joins the selection when its inventory entry is relabelled.
		relabel := func(ctx context.Context, region string) {
			Eventually(func(g Gomega) {
				s := &corev1.Secret{}
				g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: "b"}, s)).To(Succeed())
				s.Labels["region"] = region
				g.Expect(hubClient.Update(ctx, s)).To(Succeed())
			}).Should(Succeed())
		}
		relabel(ctx, "eu")
		DeferCleanup(func(ctx SpecContext) { relabel(ctx, "us") })
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["b"], p)
			g.Expect(getPipeline(g, ctx, client.ObjectKeyFromObject(p)).Status.Inventory).To(Equal([]string{"a", "b", "c"}))
		}).Should(Succeed())
	})

	It("applies an override on one member only", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "override", onClusters("a", "b"), func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Overrides = []urutauv1alpha1.ClusterOverride{{
				Clusters:    []string{"b"},
				Image:       "ghcr.io/urutau-io/coordinator:canary",
				Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "2"},
			}}
		}))
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectPlaced(g, ctx, members["b"], p)
			a, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			b, err := coordinatorSTS(ctx, members["b"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			ca, cb := a.Spec.Template.Spec.Containers[0], b.Spec.Template.Spec.Containers[0]
			g.Expect(ca.Image).To(Equal(image))
			g.Expect(cb.Image).To(Equal("ghcr.io/urutau-io/coordinator:canary"))
			g.Expect(ca.Resources.Requests.Cpu().String()).To(Equal("500m"))
			g.Expect(cb.Resources.Requests.Cpu().String()).To(Equal("2"))
			g.Expect(cb.Resources.Limits.Cpu().String()).To(Equal("2"))
		}).Should(Succeed())
	})

	It("moves from a to b, stopping a before starting b", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "move", onClusters("a")))
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		pod := fakeCoordinatorPod(ctx, members["a"], ns, p.Name)
		Expect(members["a"].Client.Create(ctx, pod)).To(Succeed())

		// Watch every member throughout the move: never two hold a reader (pod or StatefulSet).
		sampler := sampleReaders(ctx, ns, []string{p.Name}, oneReader)

		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		// a loses its StatefulSet, but its pod is still there: b waits.
		Eventually(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).To(BeNil())
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(clusterStatus(got, "b")).NotTo(BeNil())
			g.Expect(clusterStatus(got, "b").Phase).To(Equal(urutauv1alpha1.ClusterPending))
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterDeleting))
		}).Should(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, p.UID) }).Should(Succeed())

		// The pod goes (the garbage collector's job in a real cluster): b starts.
		Expect(members["a"].Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["b"], p)
			expectEmpty(g, ctx, members["a"], ns, p.UID)
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(got.Status.Inventory).To(Equal([]string{"b"}))
			g.Expect(clusterStatus(got, "a")).To(BeNil())
		}).Should(Succeed())
		sampler.done("move a->b")
	})

	moveWhileStopped := func(ctx SpecContext, name string, complete func(p *urutauv1alpha1.CDCPipeline)) *urutauv1alpha1.CDCPipeline {
		p := create(ctx, newPipeline(ns, name, onClusters("a")))
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		stopAPIServer(members["a"])
		DeferCleanup(func() { startAPIServer(members["a"]) })

		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = []string{"b"} })
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			c := meta.FindStatusCondition(got.Status.Conditions, status.ConditionMoveBlocked)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(status.ReasonWaitingForDepartedCluster))
			g.Expect(c.Message).To(ContainSubstring("a"))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, urutauv1alpha1.ConditionStalled)).To(BeTrue())
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterUnreachable))
			g.Expect(clusterStatus(got, "b").Phase).To(Equal(urutauv1alpha1.ClusterPending))
		}).Should(Succeed())
		Consistently(func(g Gomega) { expectEmpty(g, ctx, members["b"], ns, p.UID) }, 3*time.Second).Should(Succeed())

		complete(p)
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["b"], p)
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			// A member confirmed gone stays in the inventory until it is emptied.
			g.Expect(got.Status.Inventory).To(ContainElement("b"))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, status.ConditionMoveBlocked)).To(BeNil())
		}, afterLateWrites).Should(Succeed())
		return p
	}

	It("holds a move while the departed member is unreachable, until a person confirms it gone", func(ctx SpecContext) {
		p := moveWhileStopped(ctx, "move-confirm", func(p *urutauv1alpha1.CDCPipeline) {
			updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) {
				metav1.SetMetaDataAnnotation(&p.ObjectMeta, urutauv1alpha1.AnnotationConfirmGone, "a")
			})
		})
		// The confirmation left a visible entry (Gone: no longer a reader) and was consumed; a's
		// return empties it.
		Eventually(func(g Gomega) {
			e, err := leaseEntry(ctx, p.UID, "a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.State).To(Equal(urutauv1alpha1.LeaseMemberGone))
			g.Expect(getPipeline(g, ctx, client.ObjectKeyFromObject(p)).Annotations).NotTo(HaveKey(urutauv1alpha1.AnnotationConfirmGone))
		}).Should(Succeed())
		startAPIServer(members["a"])
		Eventually(func(g Gomega) {
			expectEmpty(g, ctx, members["a"], ns, p.UID)
			e, err := leaseEntry(ctx, p.UID, "a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e).To(BeNil())
			g.Expect(getPipeline(g, ctx, client.ObjectKeyFromObject(p)).Status.Inventory).To(Equal([]string{"b"}))
		}, afterLateWrites).Should(Succeed())
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["b"], p) }).Should(Succeed())
	})

	It("holds a move while the departed member is unreachable, until it answers", func(ctx SpecContext) {
		p := moveWhileStopped(ctx, "move-return", func(*urutauv1alpha1.CDCPipeline) {
			startAPIServer(members["a"])
		})
		Eventually(func(g Gomega) {
			expectEmpty(g, ctx, members["a"], ns, p.UID)
			e, err := leaseEntry(ctx, p.UID, "a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e).To(BeNil())
		}).Should(Succeed())
	})

	It("deletes from every member of the inventory", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "delete", onClusters("a", "b")))
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectPlaced(g, ctx, members["b"], p)
		}).Should(Succeed())
		Expect(hubClient.Delete(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			err := hubClient.Get(ctx, client.ObjectKeyFromObject(p), &urutauv1alpha1.CDCPipeline{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "CR still there: %v", err)
			for _, m := range members {
				expectEmpty(g, ctx, m, ns, p.UID)
			}
		}).Should(Succeed())
	})

	It("deletes while terminated", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "delete-terminated", onClusters("a")))
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["a"], p) }).Should(Succeed())
		terminateByPerson(ctx, client.ObjectKeyFromObject(p))
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterTerminated))
		}).Should(Succeed())
		Expect(hubClient.Delete(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			err := hubClient.Get(ctx, client.ObjectKeyFromObject(p), &urutauv1alpha1.CDCPipeline{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			expectEmpty(g, ctx, members["a"], ns, p.UID)
		}).Should(Succeed())
	})

	// deleteWithCStopped places p on a and c, stops c, deletes p and waits for the CR to go.
	deleteWithCStopped := func(ctx SpecContext, p *urutauv1alpha1.CDCPipeline) time.Duration {
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectPlaced(g, ctx, members["c"], p)
		}).Should(Succeed())
		stopAPIServer(members["c"])
		DeferCleanup(func() { startAPIServer(members["c"]) })
		start := time.Now()
		Expect(hubClient.Delete(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			err := hubClient.Get(ctx, client.ObjectKeyFromObject(p), &urutauv1alpha1.CDCPipeline{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).Should(Succeed())
		took := time.Since(start)
		Eventually(func(g Gomega) { expectEmpty(g, ctx, members["a"], ns, p.UID) }).Should(Succeed())
		e, err := leaseEntry(ctx, p.UID, "c")
		Expect(err).NotTo(HaveOccurred())
		Expect(e).NotTo(BeNil(), "tombstone for c")
		Expect(e.PipelineName).To(Equal(p.Name))
		Expect(e.Namespace).To(Equal(ns))
		Expect(e.ClusterID).NotTo(BeEmpty())
		Expect(e.Reason).To(ContainSubstring("deleted"))
		return took
	}

	It("deletes with a member down: the CR goes, a tombstone cleans the member when it returns", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "delete-down", onClusters("a", "c")))
		took := deleteWithCStopped(ctx, p)
		figure("delete with member c down: CR gone after %s (TombstoneGrace %s)", took.Round(time.Millisecond), tombstoneGrace)
		startAPIServer(members["c"])
		Eventually(func(g Gomega) {
			expectEmpty(g, ctx, members["c"], ns, p.UID)
			e, err := leaseEntry(ctx, p.UID, "c")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e).To(BeNil())
			l, err := leaseOf(ctx, p.UID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(l).To(BeNil(), "the lease of a deleted pipeline stays once its members are empty")
		}, afterLateWrites).Should(Succeed())
	})

	It("never touches a re-created pipeline of the same name while a tombstone is pending", func(ctx SpecContext) {
		old := create(ctx, newPipeline(ns, "recreate", onClusters("a", "c")))
		deleteWithCStopped(ctx, old)

		p := create(ctx, newPipeline(ns, "recreate", onClusters("a", "c")))
		Expect(p.UID).NotTo(Equal(old.UID))
		var aSTS types.UID
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			aSTS = sts.UID
		}).Should(Succeed())

		startAPIServer(members["c"])
		Eventually(func(g Gomega) {
			e, err := leaseEntry(ctx, old.UID, "c")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e).To(BeNil())
			expectEmpty(g, ctx, members["c"], ns, old.UID)
			expectPlaced(g, ctx, members["c"], p)
		}).Should(Succeed())
		// The new pipeline's objects in a were never deleted and re-created.
		Consistently(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["a"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts).NotTo(BeNil())
			g.Expect(sts.UID).To(Equal(aSTS))
			expectPlaced(g, ctx, members["c"], p)
		}).Should(Succeed())
	})

	It("writes nothing to members while a person's termination holds, and a spec change clears it", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "terminated", onClusters("a", "b")))
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			expectPlaced(g, ctx, members["b"], p)
		}).Should(Succeed())
		terminateByPerson(ctx, client.ObjectKeyFromObject(p))
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(got.Status.Terminated).NotTo(BeNil())
			g.Expect(got.Status.Terminated.ObservedGeneration).To(Equal(got.Generation), "the hub records the generation")
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterTerminated))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, urutauv1alpha1.ConditionStalled)).To(BeTrue())
		}).Should(Succeed())

		// Spec-irrelevant events: a member StatefulSet's status moves, the CR gets a label.
		markReady(ctx, members["a"], ns, p.Name)
		before := map[string]map[string]string{}
		for _, n := range []string{"a", "b"} {
			before[n] = resourceVersions(ownedObjects(Default, ctx, members[n], ns, p.UID))
		}
		// Also a foreign edit the hub would otherwise correct.
		editImage(ctx, members["b"], ns, p.Name, "someone/else:1")
		before["b"] = resourceVersions(ownedObjects(Default, ctx, members["b"], ns, p.UID))
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) {
			metav1.SetMetaDataLabel(&p.ObjectMeta, "touched", "yes")
		})
		Consistently(func(g Gomega) {
			for _, n := range []string{"a", "b"} {
				g.Expect(resourceVersions(ownedObjects(g, ctx, members[n], ns, p.UID))).To(Equal(before[n]), "cluster %s", n)
			}
		}, 3*time.Second).Should(Succeed())

		// A spec change clears the termination and the hub writes again.
		updatePipeline(ctx, client.ObjectKeyFromObject(p), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.LogLevel = "debug" })
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(got.Status.Terminated).To(BeNil())
			for _, n := range []string{"a", "b"} {
				sts, err := coordinatorSTS(ctx, members[n], ns, p.Name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(sts.Spec.Template.Spec.Containers[0].Command).To(ContainElement("--log-level"))
				g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
			}
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}).Should(Succeed())
	})

	It("retries a missing Secret, then applies once it appears", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "secret-missing", onClusters("a"), func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Secrets.Source = "source-dsn"
		}))
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			c := clusterStatus(got, "a")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Phase).To(Equal(urutauv1alpha1.ClusterPending))
			g.Expect(c.Message).To(ContainSubstring("source-dsn"))
			g.Expect(got.Status.Terminated).To(BeNil())
			objs := ownedObjects(g, ctx, members["a"], ns, p.UID)
			g.Expect(objs).To(HaveKey("ConfigMap/" + coordinator.CoordinatorName(p.Name)))
			g.Expect(objs).NotTo(HaveKey("StatefulSet/" + coordinator.CoordinatorName(p.Name)))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			ev := &eventsList{}
			g.Expect(hubClient.List(ctx, &ev.EventList, client.InNamespace(ns))).To(Succeed())
			g.Expect(ev.reasons()).To(ContainElement(fleet.EventSecretNotReady))
		}).Should(Succeed())

		Expect(members["a"].Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source-dsn", Labels: openSecret},
			Data:       map[string][]byte{"uri": []byte("mysql://u:p@db:3306")},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			expectPlaced(g, ctx, members["a"], p)
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterApplied))
		}).Should(Succeed())
	})

	It("terminates on a Secret without its required key", func(ctx SpecContext) {
		Expect(members["a"].Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source-dsn", Labels: openSecret},
			Data:       map[string][]byte{"url": []byte("typo")},
		})).To(Succeed())
		p := create(ctx, newPipeline(ns, "secret-invalid", onClusters("a"), func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Secrets.Source = "source-dsn"
		}))
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			g.Expect(got.Status.Terminated).NotTo(BeNil())
			g.Expect(got.Status.Terminated.Reason).To(Equal(urutauv1alpha1.ReasonSecretValidationFailed))
			g.Expect(got.Status.Terminated.Cluster).To(Equal("a"))
			g.Expect(got.Status.Terminated.Message).To(ContainSubstring(`"uri"`))
			g.Expect(got.Status.Terminated.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(clusterStatus(got, "a").Phase).To(Equal(urutauv1alpha1.ClusterTerminated))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(ownedObjects(g, ctx, members["a"], ns, p.UID)).NotTo(HaveKey("StatefulSet/" + coordinator.CoordinatorName(p.Name)))
		}).Should(Succeed())
	})

	It("corrects a foreign change to a field it owns", func(ctx SpecContext) {
		p := create(ctx, newPipeline(ns, "drift", onClusters("b")))
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["b"], p) }).Should(Succeed())
		start := time.Now()
		editImage(ctx, members["b"], ns, p.Name, "someone/else:1")
		Eventually(func(g Gomega) {
			sts, err := coordinatorSTS(ctx, members["b"], ns, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
		}).WithPolling(10 * time.Millisecond).Should(Succeed())
		figure("foreign edit of the coordinator image reverted in %s", time.Since(start).Round(time.Millisecond))
		Eventually(func(g Gomega) { expectPlaced(g, ctx, members["b"], p) }).Should(Succeed())
	})

	It("converges on three members and then stays quiet", func(ctx SpecContext) {
		start := time.Now()
		p := create(ctx, newPipeline(ns, "idle", func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "test"}}
		}))
		Eventually(func(g Gomega) {
			for _, m := range members {
				expectPlaced(g, ctx, m, p)
			}
		}).WithPolling(10 * time.Millisecond).Should(Succeed())
		converged := time.Since(start)
		for _, n := range []string{"a", "b", "c"} {
			markReady(ctx, members[n], ns, p.Name)
		}
		Eventually(func(g Gomega) {
			got := getPipeline(g, ctx, client.ObjectKeyFromObject(p))
			expectReady(g, got)
			g.Expect(got.Status.ReadyClusters).To(Equal("3/3"))
		}).Should(Succeed())
		ready := time.Since(start)
		figure("3 members: workload applied in all three %s after create; Ready=True (3/3) %s after create (after the test marked the StatefulSets ready)",
			converged.Round(time.Millisecond), ready.Round(time.Millisecond))

		// Let the last status write and its echo settle, then count for 30 s.
		time.Sleep(2 * time.Second)
		before, beforeAll := map[string]map[string]int{}, map[string]map[string]int{}
		for n, m := range members {
			before[n], beforeAll[n] = memberWrites(ctx, m)
		}
		hubBefore, err := hub.WriteRequestsByResource(ctx)
		Expect(err).NotTo(HaveOccurred())
		pBefore := getPipeline(Default, ctx, client.ObjectKeyFromObject(p))
		recordsBefore := map[string]string{}
		for _, n := range []string{"a", "b", "c"} {
			recordsBefore[n] = healthRecordOf(Default, ctx, n).ResourceVersion
		}
		time.Sleep(30 * time.Second)
		for _, n := range []string{"a", "b", "c"} {
			after, afterAll := memberWrites(ctx, members[n])
			d := testenv.Delta(before[n], after)
			figure("idle 30 s, member %s: %d write requests for our kinds %v (all writes incl. the API server's own: %v)",
				n, testenv.Total(d), d, testenv.Delta(beforeAll[n], afterAll))
			Expect(d).To(BeEmpty(), "writes to member %s while idle", n)
		}
		hubAfter, err := hub.WriteRequestsByResource(ctx)
		Expect(err).NotTo(HaveOccurred())
		hd := testenv.Delta(hubBefore, hubAfter)
		figure("idle 30 s, hub: cdcpipelines writes %d (all hub writes: %v)", hd["PATCH cdcpipelines/status"]+hd["PUT cdcpipelines/status"]+hd["PATCH cdcpipelines"], hd)
		pAfter := getPipeline(Default, ctx, client.ObjectKeyFromObject(p))
		Expect(pAfter.ResourceVersion).To(Equal(pBefore.ResourceVersion), "the hub status churned while idle")
		for n, rv := range recordsBefore {
			Expect(healthRecordOf(Default, ctx, n).ResourceVersion).To(Equal(rv), "member %s's health record was written while idle", n)
		}
	})
})

// afterLateWrites bounds how long a member that comes back takes to be emptied: the hub waits up
// to members.WriteLanding (70 s) for a write that was in flight when the member stopped (it may
// have landed), and that write may be an earlier spec's, not only this one's.
const afterLateWrites = 100 * time.Second

// stopAPIServer makes m unreachable.
func stopAPIServer(m *testenv.Cluster) {
	start := time.Now()
	Expect(m.StopAPIServer()).To(Succeed())
	figure("API server %s stopped in %s", m.Name, time.Since(start).Round(time.Millisecond))
}

// startAPIServer brings m back.
func startAPIServer(m *testenv.Cluster) {
	start := time.Now()
	Expect(m.StartAPIServer()).To(Succeed())
	figure("API server %s restarted in %s", m.Name, time.Since(start).Round(time.Millisecond))
}

// terminateByPerson sets status.terminated as a person would: through the status subresource,
// without an observedGeneration.
func terminateByPerson(ctx context.Context, key types.NamespacedName) {
	Eventually(func(g Gomega) {
		p := getPipeline(g, ctx, key)
		orig := p.DeepCopy()
		p.Status.Terminated = &urutauv1alpha1.Terminated{Reason: "manual-stop", Message: "stopped by the on-call engineer"}
		g.Expect(hubClient.Status().Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	}).Should(Succeed())
}

// editImage changes the coordinator image the way `kubectl edit` does: an update under another
// field manager.
func editImage(ctx context.Context, m *testenv.Cluster, ns, pipeline, img string) {
	Eventually(func(g Gomega) {
		sts, err := coordinatorSTS(ctx, m, ns, pipeline)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sts).NotTo(BeNil())
		sts.Spec.Template.Spec.Containers[0].Image = img
		g.Expect(m.Client.Update(ctx, sts, client.FieldOwner("kubectl-edit"))).To(Succeed())
	}).Should(Succeed())
}

type eventsList struct{ corev1.EventList }

// delivered counts the events of reason on the object named name, repeats of one event included.
func (e *eventsList) delivered(reason, name string) int32 {
	var n int32
	for _, ev := range e.Items {
		if ev.Reason != reason || ev.InvolvedObject.Name != name {
			continue
		}
		n += max(ev.Count, 1)
		if ev.Series != nil {
			n += ev.Series.Count
		}
	}
	return n
}

func (e *eventsList) reasons() []string {
	var out []string
	for _, ev := range e.Items {
		out = append(out, ev.Reason)
	}
	return out
}
