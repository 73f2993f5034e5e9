package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/localfleet"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/testenv"
)

// pipeline is a minimal MySQL pipeline in ns placed on the given members.
func pipeline(ns, name string, serverID int, clusters ...string) *urutauv1alpha1.CDCPipeline {
	inline := fmt.Sprintf(`{"pipeline":%q,"source":{"kind":"mysql","serverId":"%d"},"sink":{"type":"iceberg+rest","uri":"http://catalog.lake:8181/api/catalog","namespace":"raw","warehouse":"s3://lake/faults"},"tables":[{"source":"shop.orders","target":"raw.orders","primaryKey":["id"]}]}`, name, serverID)
	return &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: []byte(inline)}},
				Secrets:    urutauv1alpha1.Secrets{Source: sourceSecret},
			},
			Placement: urutauv1alpha1.Placement{Clusters: clusters},
		},
	}
}

// pipelines are n pipelines name-0..name-(n-1) in ns, placed on clusters.
func pipelines(ns, name string, firstServerID, n int, clusters ...string) []*urutauv1alpha1.CDCPipeline {
	var out []*urutauv1alpha1.CDCPipeline
	for i := range n {
		out = append(out, pipeline(ns, fmt.Sprintf("%s-%d", name, i), firstServerID+i, clusters...))
	}
	return out
}

func createAll(ctx context.Context, ps []*urutauv1alpha1.CDCPipeline) {
	GinkgoHelper()
	for _, p := range ps {
		Expect(hub.Create(ctx, p)).To(Succeed())
	}
}

func coordinatorKey(p *urutauv1alpha1.CDCPipeline) client.ObjectKey {
	return client.ObjectKey{Namespace: p.Namespace, Name: p.Name + "-coordinator"}
}

func getPipeline(ctx context.Context, g Gomega, p *urutauv1alpha1.CDCPipeline) *urutauv1alpha1.CDCPipeline {
	got := &urutauv1alpha1.CDCPipeline{}
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
	return got
}

func clusterStatus(p *urutauv1alpha1.CDCPipeline, member string) (urutauv1alpha1.ClusterStatus, bool) {
	for _, c := range p.Status.Clusters {
		if c.Name == member {
			return c, true
		}
	}
	return urutauv1alpha1.ClusterStatus{}, false
}

// runningIn checks (for Eventually) that p's coordinator StatefulSet in physical cluster phys
// carries p's UID and has a ready replica, and that the hub reports member Ready at p's current
// generation. member is the inventory name (the same as phys, except for aliases).
func runningIn(ctx context.Context, g Gomega, p *urutauv1alpha1.CDCPipeline, member, phys string) {
	got := getPipeline(ctx, g, p)
	sts := &appsv1.StatefulSet{}
	g.Expect(members[phys].Get(ctx, coordinatorKey(p), sts)).To(Succeed())
	g.Expect(sts.Labels).To(HaveKeyWithValue(urutauv1alpha1.LabelHubPipelineUID, string(got.UID)))
	g.Expect(sts.Status.ReadyReplicas).To(BeNumerically(">=", 1), "coordinator of %s not ready in %s", p.Name, member)
	cs, ok := clusterStatus(got, member)
	g.Expect(ok).To(BeTrue(), "%s: no status.clusters entry for %s", p.Name, member)
	g.Expect(cs.Phase).To(Equal(urutauv1alpha1.ClusterReady), "%s in %s: %s", p.Name, member, cs.Message)
	g.Expect(cs.ObservedGeneration).To(Equal(got.Generation))
}

// waitRunning waits until every pipeline runs on every member (physical cluster = member name) and
// returns how long it took.
func waitRunning(ctx context.Context, ps []*urutauv1alpha1.CDCPipeline, timeout time.Duration, ms ...string) time.Duration {
	GinkgoHelper()
	start := time.Now()
	Eventually(func(g Gomega) {
		for _, p := range ps {
			for _, m := range ms {
				runningIn(ctx, g, p, m, m)
			}
		}
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	return time.Since(start)
}

// expectReady waits for the Ready condition at the current generation.
func expectReady(ctx context.Context, ps []*urutauv1alpha1.CDCPipeline, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, p := range ps {
			got := getPipeline(ctx, g, p)
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, urutauv1alpha1.ConditionReady)).To(BeTrue(),
				"%s: Ready is not True: %+v", p.Name, got.Status.Conditions)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// deleteAll deletes the pipelines and waits until the hub has let them go.
func deleteAll(ctx context.Context, ps []*urutauv1alpha1.CDCPipeline, timeout time.Duration) {
	GinkgoHelper()
	for _, p := range ps {
		Expect(client.IgnoreNotFound(hub.Delete(ctx, p))).To(Succeed())
	}
	Eventually(func(g Gomega) {
		for _, p := range ps {
			err := hub.Get(ctx, client.ObjectKeyFromObject(p), &urutauv1alpha1.CDCPipeline{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "CDCPipeline %s still on the hub (err %v)", p.Name, err)
		}
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// memberKinds are the kinds the hub writes into members (ScaledObjects are opt-in, not used here).
func memberKinds() map[string]client.ObjectList {
	return map[string]client.ObjectList{
		"statefulsets":         &appsv1.StatefulSetList{},
		"configmaps":           &corev1.ConfigMapList{},
		"services":             &corev1.ServiceList{},
		"serviceaccounts":      &corev1.ServiceAccountList{},
		"roles":                &rbacv1.RoleList{},
		"rolebindings":         &rbacv1.RoleBindingList{},
		"poddisruptionbudgets": &policyv1.PodDisruptionBudgetList{},
	}
}

// perPipeline is how many objects of each kind one pipeline has in a member (two
// ServiceAccounts: coordinator and worker).
var perPipeline = map[string]int{
	"statefulsets": 1, "configmaps": 1, "services": 1, "serviceaccounts": 2,
	"roles": 1, "rolebindings": 1, "poddisruptionbudgets": 1,
}

// hubObject is an object the hub wrote into a member, found by its UID label.
type hubObject struct {
	Kind, Namespace, Name, UID string
	Managers                   []string // "manager operation[/subresource]"
}

// hubObjects lists, cluster-wide, every object of a physical member carrying the hub's pipeline UID
// label.
func hubObjects(ctx context.Context, g Gomega, phys string) []hubObject {
	var out []hubObject
	for kind, list := range memberKinds() {
		g.Expect(members[phys].List(ctx, list, client.HasLabels{urutauv1alpha1.LabelHubPipelineUID})).To(Succeed())
		items, err := meta.ExtractList(list)
		g.Expect(err).NotTo(HaveOccurred())
		for _, it := range items {
			o := it.(client.Object)
			h := hubObject{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetLabels()[urutauv1alpha1.LabelHubPipelineUID]}
			for _, mf := range o.GetManagedFields() {
				m := mf.Manager + " " + string(mf.Operation)
				if mf.Subresource != "" {
					m += "/" + mf.Subresource
				}
				h.Managers = append(h.Managers, m)
			}
			out = append(out, h)
		}
	}
	return out
}

// liveUIDs are the UIDs of every CDCPipeline on the hub.
func liveUIDs(ctx context.Context, g Gomega) map[string]string {
	list := &urutauv1alpha1.CDCPipelineList{}
	g.Expect(hub.List(ctx, list)).To(Succeed())
	out := map[string]string{}
	for _, p := range list.Items {
		out[string(p.UID)] = p.Namespace + "/" + p.Name
	}
	return out
}

// expectNoOrphans: every object in the physical members carrying the UID label belongs to a
// CDCPipeline that exists on the hub.
func expectNoOrphans(ctx context.Context, physs ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		live := liveUIDs(ctx, g)
		for _, phys := range physs {
			for _, o := range hubObjects(ctx, g, phys) {
				g.Expect(live).To(HaveKey(o.UID), "orphan in %s: %s %s/%s of pipeline UID %s, which no CDCPipeline has", phys, o.Kind, o.Namespace, o.Name, o.UID)
			}
		}
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}

// expectExactWorkload: for each pipeline, physical member phys holds exactly one set of its
// objects (perPipeline, by UID), each written by exactly one Server-Side Apply manager, the
// member's (urutau-operator@member), and exactly one coordinator pod. No duplicate, no second
// writer.
func expectExactWorkload(ctx context.Context, ps []*urutauv1alpha1.CDCPipeline, member, phys string) {
	GinkgoHelper()
	want := ssa.FieldManagerFor(fleet.DefaultFieldManager, member)
	Eventually(func(g Gomega) {
		objs := hubObjects(ctx, g, phys)
		for _, p := range ps {
			got := getPipeline(ctx, g, p)
			counts := map[string]int{}
			for _, o := range objs {
				if o.UID != string(got.UID) {
					continue
				}
				counts[o.Kind]++
				var appliers []string
				for _, m := range o.Managers {
					if strings.HasSuffix(m, " Apply") || strings.HasPrefix(m, fleet.DefaultFieldManager) {
						appliers = append(appliers, m)
					}
				}
				g.Expect(appliers).To(Equal([]string{want + " Apply"}),
					"%s %s/%s in %s: managers %v", o.Kind, o.Namespace, o.Name, phys, o.Managers)
			}
			g.Expect(counts).To(Equal(perPipeline), "objects of %s in %s", p.Name, phys)
			pods := &corev1.PodList{}
			g.Expect(members[phys].List(ctx, pods, client.InNamespace(p.Namespace),
				client.MatchingLabels(coordinator.SelectorLabels(p.Name)))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1), "coordinator pods of %s in %s", p.Name, phys)
		}
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// expectGone: the physical member holds nothing of the pipeline uid, and no coordinator pod of name.
func expectGone(ctx context.Context, uid, ns, name, phys string, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, o := range hubObjects(ctx, g, phys) {
			g.Expect(o.UID).NotTo(Equal(uid), "%s %s/%s of deleted pipeline %s left in %s", o.Kind, o.Namespace, o.Name, name, phys)
		}
		pods := &corev1.PodList{}
		g.Expect(members[phys].List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(coordinator.SelectorLabels(name)))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty(), "coordinator pods of deleted pipeline %s left in %s", name, phys)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// requests reads apiserver_request_total from the named cluster's API server (its own metrics:
// every request it served, from any client, since it started) and sums it by key(labels); rows
// for which key returns "" are skipped, and so are dry runs.
func requests(ctx context.Context, cluster string, key func(l map[string]string) string) map[string]int {
	GinkgoHelper()
	return counter(ctx, cluster, "apiserver_request_total", key)
}

// counter reads the counter family from the named cluster's API server metrics and sums it by
// key(labels), as requests does.
func counter(ctx context.Context, cluster, family string, key func(l map[string]string) string) map[string]int {
	GinkgoHelper()
	raw, err := apiMetrics(ctx, cluster)
	Expect(err).NotTo(HaveOccurred())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	Expect(err).NotTo(HaveOccurred(), "parsing the metrics of %s", cluster)
	out := map[string]int{}
	for _, m := range families[family].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["dry_run"] != "" {
			continue
		}
		if k := key(l); k != "" {
			out[k] += int(m.GetCounter().GetValue())
		}
	}
	return out
}

// byVerbResource keys requests "VERB resource[/subresource]".
func byVerbResource(l map[string]string) string {
	k := l["verb"] + " " + l["resource"]
	if l["subresource"] != "" {
		k += "/" + l["subresource"]
	}
	return k
}

// applies keys Server-Side Apply requests by resource.
func applies(l map[string]string) string {
	if l["verb"] != "APPLY" {
		return ""
	}
	return l["resource"]
}

// writes keys every write request "VERB resource[/subresource]".
func writes(l map[string]string) string {
	switch l["verb"] {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return byVerbResource(l)
	}
	return ""
}

// apiMetrics reads the raw /metrics of the named cluster's API server with its admin kubeconfig.
func apiMetrics(ctx context.Context, cluster string) ([]byte, error) {
	kc := ""
	for _, c := range append([]localfleet.Cluster{lf.Hub}, lf.Members...) {
		if c.Name == cluster {
			kc = c.KubeconfigPath
		}
	}
	if kc == "" {
		return nil, fmt.Errorf("no cluster %q", cluster)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
}

// expectAppliesBounded: the Server-Side Apply requests a physical member served since before
// (per resource) stay within perObject applies for each object of n pipelines.
func expectAppliesBounded(ctx context.Context, phys string, before map[string]int, n, perObject int) map[string]int {
	GinkgoHelper()
	d := testenv.Delta(before, requests(ctx, phys, applies))
	for kind, per := range perPipeline {
		Expect(d[kind]).To(BeNumerically("<=", perObject*per*n),
			"%s: %d APPLY on %s for %d object(s): more than %d per object", phys, d[kind], kind, per*n, perObject)
	}
	return d
}

// sortedKeys is for stable log lines.
func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func fmtCounts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// hubLogContains is for assertions on what a hub process logged.
func fileContains(path, s string) bool {
	raw, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(raw), s)
}
