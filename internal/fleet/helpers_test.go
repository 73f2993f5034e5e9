package fleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/tenancy"
	"github.com/urutau-io/fleet/internal/testenv"
)

// mysqlInline is a pipeline definition; %s is its pipeline name, the CR's (the fleet binds worker
// names to the CR), and %d its MySQL serverId, unique per pipeline (one reader per source identity
// across the fleet: two pipelines with one serverId would wait for each other).
const mysqlInline = `
pipeline: %s
source:
  kind: mysql
  serverId: "%d"
sink:
  type: iceberg+rest
  namespace: raw
  warehouse: s3://lake/warehouse
tables:
- source: shop.orders
  target: raw.orders
  primaryKey: [id]
`

// newNamespace creates a fresh namespace on the hub and in every member (with the "default"
// ServiceAccount no controller-manager creates here, so test pods can be created).
func newNamespace(ctx context.Context) string {
	ns := fmt.Sprintf("t-%06d", rand.IntN(1_000_000))
	Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	for _, m := range members {
		Expect(m.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: openNamespace}})).To(Succeed())
		Expect(m.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})).To(Succeed())
	}
	return ns
}

// openNamespace and openSecret are the labels that open a member namespace and a member Secret
// to the fleet (the tenancy boundary).
var (
	openNamespace = map[string]string{urutauv1alpha1.LabelFleetManaged: "true", tenancy.LabelPodSecurityEnforce: tenancy.PodSecurityBaseline}
	openSecret    = map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}
)

// serverIDs hands out a new serverId to each pipeline newPipeline makes.
var serverIDs atomic.Int64

func newPipeline(ns, name string, mutate ...func(*urutauv1alpha1.CDCPipeline)) *urutauv1alpha1.CDCPipeline {
	return newPipelineWithServerID(ns, name, serverIDs.Add(1)+1000, mutate...)
}

func newPipelineWithServerID(ns, name string, serverID int64, mutate ...func(*urutauv1alpha1.CDCPipeline)) *urutauv1alpha1.CDCPipeline {
	raw, err := yaml.YAMLToJSON([]byte(fmt.Sprintf(mysqlInline, name, serverID)))
	Expect(err).NotTo(HaveOccurred())
	p := &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: raw}},
			},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// renamedFrom is old's pipeline under a new CR name: the same source (so the same reader
// identity), its definition's pipeline the new name as the fleet requires.
func renamedFrom(old *urutauv1alpha1.CDCPipeline, name string, mutate ...func(*urutauv1alpha1.CDCPipeline)) *urutauv1alpha1.CDCPipeline {
	p := newPipeline(old.Namespace, name, mutate...)
	raw := strings.Replace(string(old.Spec.Definition.Inline.Raw), fmt.Sprintf("%q", old.Name), fmt.Sprintf("%q", name), 1)
	Expect(raw).NotTo(Equal(string(old.Spec.Definition.Inline.Raw)), "the definition of %s does not name its pipeline", old.Name)
	p.Spec.Definition = urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: []byte(raw)}}
	return p
}

func onClusters(names ...string) func(*urutauv1alpha1.CDCPipeline) {
	return func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = names }
}

func getPipeline(g Gomega, ctx context.Context, key types.NamespacedName) *urutauv1alpha1.CDCPipeline {
	p := &urutauv1alpha1.CDCPipeline{}
	g.Expect(hubClient.Get(ctx, key, p)).To(Succeed())
	return p
}

func updatePipeline(ctx context.Context, key types.NamespacedName, mutate func(*urutauv1alpha1.CDCPipeline)) {
	Eventually(func(g Gomega) {
		p := getPipeline(g, ctx, key)
		mutate(p)
		g.Expect(hubClient.Update(ctx, p)).To(Succeed())
	}).Should(Succeed())
}

func clusterStatus(p *urutauv1alpha1.CDCPipeline, name string) *urutauv1alpha1.ClusterStatus {
	for i := range p.Status.Clusters {
		if p.Status.Clusters[i].Name == name {
			return &p.Status.Clusters[i]
		}
	}
	return nil
}

// memberKinds are the kinds the hub writes into a member, with an empty list to read each.
func memberLists() map[string]client.ObjectList {
	return map[string]client.ObjectList{
		"ServiceAccount":      &corev1.ServiceAccountList{},
		"PodDisruptionBudget": &policyv1.PodDisruptionBudgetList{},
		"Role":                &rbacv1.RoleList{},
		"RoleBinding":         &rbacv1.RoleBindingList{},
		"Service":             &corev1.ServiceList{},
		"ConfigMap":           &corev1.ConfigMapList{},
		"StatefulSet":         &appsv1.StatefulSetList{},
	}
}

// ownedObjects lists, in member m, every object carrying the pipeline-UID label uid, as
// "Kind/name" -> object.
func ownedObjects(g Gomega, ctx context.Context, m *testenv.Cluster, ns string, uid types.UID) map[string]client.Object {
	out := map[string]client.Object{}
	for kind, list := range memberLists() {
		g.Expect(m.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: string(uid)})).To(Succeed())
		items, err := meta.ExtractList(list)
		g.Expect(err).NotTo(HaveOccurred())
		for _, it := range items {
			o := it.(client.Object)
			out[kind+"/"+o.GetName()] = o
		}
	}
	return out
}

// expectPlaced asserts that member m holds the whole workload of p: every kind, the fleet
// labels, and managedFields owned by the member's field manager.
func expectPlaced(g Gomega, ctx context.Context, m *testenv.Cluster, p *urutauv1alpha1.CDCPipeline) map[string]client.Object {
	return expectPlacedAs(g, ctx, m, m.Name, p)
}

// expectPlacedAs is expectPlaced for cluster m registered on the hub as member.
func expectPlacedAs(g Gomega, ctx context.Context, m *testenv.Cluster, member string, p *urutauv1alpha1.CDCPipeline) map[string]client.Object {
	objs := ownedObjects(g, ctx, m, p.Namespace, p.UID)
	name := coordinator.CoordinatorName(p.Name)
	want := []string{
		"ServiceAccount/" + name, "ServiceAccount/" + coordinator.WorkerServiceAccountName(p.Name),
		"PodDisruptionBudget/" + name, "Role/" + name, "RoleBinding/" + name, "Service/" + name,
		"ConfigMap/" + name, "StatefulSet/" + name,
	}
	g.Expect(sortedKeys(objs)).To(ConsistOf(want), "objects in cluster %s", m.Name)
	manager := ssa.FieldManagerFor(fleet.DefaultFieldManager, member)
	for k, o := range objs {
		l := o.GetLabels()
		g.Expect(l).To(HaveKeyWithValue(urutauv1alpha1.LabelHubNamespace, p.Namespace), k)
		g.Expect(l).To(HaveKeyWithValue(urutauv1alpha1.LabelHubName, p.Name), k)
		g.Expect(l).To(HaveKeyWithValue(urutauv1alpha1.LabelManagedBy, urutauv1alpha1.ManagedByFleet), k)
		var managers []string
		for _, mf := range o.GetManagedFields() {
			if mf.Operation == metav1.ManagedFieldsOperationApply {
				managers = append(managers, mf.Manager)
			}
		}
		g.Expect(managers).To(ConsistOf(manager), "apply managers of %s in cluster %s", k, m.Name)
	}
	return objs
}

func expectEmpty(g Gomega, ctx context.Context, m *testenv.Cluster, ns string, uid types.UID) {
	g.Expect(sortedKeys(ownedObjects(g, ctx, m, ns, uid))).To(BeEmpty(), "objects left in cluster %s", m.Name)
}

func coordinatorSTS(ctx context.Context, m *testenv.Cluster, ns, pipeline string) (*appsv1.StatefulSet, error) {
	sts := &appsv1.StatefulSet{}
	err := m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: coordinator.CoordinatorName(pipeline)}, sts)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return sts, err
}

// markReady plays the StatefulSet controller: the coordinator is ready.
func markReady(ctx context.Context, m *testenv.Cluster, ns, pipeline string) {
	Eventually(func(g Gomega) {
		sts, err := coordinatorSTS(ctx, m, ns, pipeline)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sts).NotTo(BeNil())
		orig := sts.DeepCopy()
		sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.AvailableReplicas, sts.Status.UpdatedReplicas = 1, 1, 1, 1
		sts.Status.ObservedGeneration = sts.Generation
		g.Expect(m.Client.Status().Patch(ctx, sts, client.MergeFrom(orig))).To(Succeed())
	}).Should(Succeed())
}

// seeScalesToZero plays, until ctx ends, the part of member m's StatefulSet controller the hub
// waits for before it deletes a coordinator StatefulSet (scaledDown): a StatefulSet scaled to
// zero is seen, its observedGeneration brought up to date. No other StatefulSet is touched: specs
// that check a rollout's status rely on the generation staying unobserved.
func seeScalesToZero(ctx context.Context, m *testenv.Cluster) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list := &appsv1.StatefulSetList{}
		if err := m.Client.List(ctx, list); err != nil {
			continue // the spec stopped its API server
		}
		for i := range list.Items {
			sts := &list.Items[i]
			if sts.Status.ObservedGeneration >= sts.Generation || sts.Spec.Replicas == nil || *sts.Spec.Replicas != 0 {
				continue
			}
			orig := sts.DeepCopy()
			sts.Status.ObservedGeneration = sts.Generation
			_ = m.Client.Status().Patch(ctx, sts, client.MergeFrom(orig))
		}
	}
}

// fakeCoordinatorPod plays the StatefulSet controller of member m: the coordinator pod of
// pipeline, with the selector labels, controlled by its coordinator StatefulSet when there is one
// (without one, it is a pod made by hand). It is bound to a node, so that a delete leaves it
// terminating (no kubelet confirms it here) until the test kills it, as a real pod takes its
// grace period.
func fakeCoordinatorPod(ctx context.Context, m *testenv.Cluster, ns, pipeline string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: coordinator.CoordinatorName(pipeline) + "-0", Labels: coordinator.SelectorLabels(pipeline)},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "coordinator", Image: image}}},
	}
	sts, err := coordinatorSTS(ctx, m, ns, pipeline)
	Expect(err).NotTo(HaveOccurred())
	if sts != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
	}
	return pod
}

// leaseEntry is the ReaderLease entry of pipeline uid in member, in any lease; nil when there is
// none. A deleted pipeline's entry is its tombstone.
func leaseEntry(ctx context.Context, uid types.UID, member string) (*urutauv1alpha1.LeaseMember, error) {
	list := &urutauv1alpha1.ReaderLeaseList{}
	if err := hubClient.List(ctx, list, client.InNamespace(systemNS)); err != nil {
		return nil, err
	}
	for _, l := range list.Items {
		for i, e := range l.Spec.Members {
			if e.PipelineUID == uid && e.Cluster == member {
				return &l.Spec.Members[i], nil
			}
		}
	}
	return nil, nil
}

// leaseOf is the ReaderLease that records pipeline uid (as holder or entry), nil when none does.
func leaseOf(ctx context.Context, uid types.UID) (*urutauv1alpha1.ReaderLease, error) {
	list := &urutauv1alpha1.ReaderLeaseList{}
	if err := hubClient.List(ctx, list, client.InNamespace(systemNS)); err != nil {
		return nil, err
	}
	for i, l := range list.Items {
		if l.Spec.Holder.UID == uid {
			return &list.Items[i], nil
		}
		for _, e := range l.Spec.Members {
			if e.PipelineUID == uid {
				return &list.Items[i], nil
			}
		}
	}
	return nil, nil
}

func resourceVersions(objs map[string]client.Object) map[string]string {
	out := map[string]string{}
	for k, o := range objs {
		out[k] = o.GetResourceVersion()
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// memberWrites counts the write requests a member's API server served for the kinds the hub
// writes (the API server's own lease renewals are not ours).
func memberWrites(ctx context.Context, m *testenv.Cluster) (ours, all map[string]int) {
	byRes, err := m.WriteRequestsByResource(ctx)
	Expect(err).NotTo(HaveOccurred())
	ours = map[string]int{}
	for k, v := range byRes {
		res := strings.SplitN(k, " ", 2)[1]
		switch strings.Split(res, "/")[0] {
		case "statefulsets", "services", "configmaps", "serviceaccounts", "roles", "rolebindings",
			"poddisruptionbudgets", "scaledobjects", "pods", "secrets":
			ours[k] = v
		}
	}
	return ours, byRes
}

// figure prints a measured figure to stdout, so it shows in every run, not only on failure.
func figure(format string, args ...any) { fmt.Printf("FIGURE: "+format+"\n", args...) }

// expectReady checks that p is Ready, and says why not when it is not: a spec that times out
// waiting for Ready then names what the pipeline waited for.
func expectReady(g Gomega, p *urutauv1alpha1.CDCPipeline) {
	c := meta.FindStatusCondition(p.Status.Conditions, urutauv1alpha1.ConditionReady)
	g.Expect(c).NotTo(BeNil(), "no Ready condition")
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "Ready is %s: %s: %s", c.Status, c.Reason, c.Message)
}
