package gauges

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/status"
)

// The gauges count what the hub's objects say: pipelines by Ready, placements per member and
// phase, lease waits, and entries of pipelines that are gone (tombstones).
func TestRefresh(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := urutauv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pipeline := func(name, uid string, ready metav1.ConditionStatus, waits bool, clusters ...urutauv1alpha1.ClusterStatus) client.Object {
		p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: name, UID: types.UID("uid-" + uid)}}
		p.Status.Conditions = []metav1.Condition{{Type: urutauv1alpha1.ConditionReady, Status: ready}}
		if waits {
			p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{Type: status.ConditionReaderLease, Status: metav1.ConditionFalse})
		}
		p.Status.Clusters = clusters
		return p
	}
	ready := urutauv1alpha1.ClusterStatus{Name: "a", Phase: urutauv1alpha1.ClusterReady}
	lease := &urutauv1alpha1.ReaderLease{ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: "mysql-1"},
		Spec: urutauv1alpha1.ReaderLeaseSpec{Members: []urutauv1alpha1.LeaseMember{
			{Cluster: "a", PipelineUID: "uid-p"}, {Cluster: "b", PipelineUID: "uid-gone"}, {Cluster: "c", PipelineUID: "uid-gone"}}}}
	hub := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		pipeline("p", "p", metav1.ConditionTrue, false, ready),
		pipeline("q", "q", metav1.ConditionFalse, true, ready, urutauv1alpha1.ClusterStatus{Name: "b", Phase: urutauv1alpha1.ClusterPending}),
		lease).Build()
	if err := (&Gauges{Hub: hub, LeaseNamespace: "urutau-system"}).refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]float64{
		"ready True":     testutil.ToFloat64(pipelinesByReady.WithLabelValues("True")) - 1,
		"ready False":    testutil.ToFloat64(pipelinesByReady.WithLabelValues("False")) - 1,
		"ready Unknown":  testutil.ToFloat64(pipelinesByReady.WithLabelValues("Unknown")),
		"a Ready":        testutil.ToFloat64(memberPipelines.WithLabelValues("a", "Ready")) - 2,
		"b Pending":      testutil.ToFloat64(memberPipelines.WithLabelValues("b", "Pending")) - 1,
		"lease waits":    testutil.ToFloat64(leaseWaits) - 1,
		"tombstones":     testutil.ToFloat64(tombstonesPending) - 2,
		"series, before": float64(testutil.CollectAndCount(memberPipelines)) - 2,
	} {
		if got != 0 {
			t.Errorf("%s: off by %v", what, got)
		}
	}
	ForgetMemberSeries("a")
	if n := testutil.CollectAndCount(memberPipelines); n != 1 {
		t.Errorf("%d series after member a left, want b's only", n)
	}
	memberPipelines.Reset()
}

// Per-member series name the member in the label "member", never "cluster" (the external label
// Thanos, Mimir and many Prometheus setups add).
func TestMemberLabel(t *testing.T) {
	ch := make(chan *prometheus.Desc, 1)
	memberPipelines.Describe(ch)
	if d := (<-ch).String(); !strings.Contains(d, "variableLabels: {member,phase}") {
		t.Errorf("urutau_fleet_member_pipelines: %s, want the labels member and phase", d)
	}
}
