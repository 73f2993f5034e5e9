package fleetview

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

var (
	t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
	t2 = t0.Add(2 * time.Minute)
)

func ptr(t time.Time) *time.Time { return &t }

func TestMembers(t *testing.T) {
	f := Facts{
		Entries: []Entry{
			{Name: "eu-1", Kind: "Secret", Labels: map[string]string{"region": "eu"}, Annotations: map[string]string{AnnotationClusterID: "uid-from-join"}},
			{Name: "us-1", Kind: "Secret"},
			{Name: "idle", Kind: "Secret"},
			{Name: "cp", Kind: "ClusterProfile", Healthy: False, HealthChanged: t1},
			{Name: "leaving", Kind: "Secret", Deleting: true},
		},
		Pipelines: []Pipeline{
			{Namespace: "shop", Name: "orders", Placements: []Placement{
				{Member: "eu-1", Phase: "Ready", ClusterID: "uid-from-status", LastTransition: t1},
				{Member: "us-1", Phase: "Ready", LastTransition: t0},
				{Member: "gone", Phase: "Deleting", LastTransition: t0},
				{Member: "deregistered", Phase: "Orphaned", LastTransition: t2},
				{Member: "cp", Phase: "Ready", LastTransition: t0},
			}},
			{Namespace: "shop", Name: "clicks", Placements: []Placement{
				{Member: "eu-1", Phase: "Applied", LastTransition: t2},
				{Member: "us-1", Phase: "Unreachable", LastTransition: t2},
			}},
		},
		Tombstones: []Tombstone{{Member: "gone"}, {Member: "gone"}, {Member: "old"}},
	}
	got := Members(f)
	want := []Member{
		{Name: "cp", Reachable: False, Engaged: True, LastAnswer: ptr(t0), Placed: 1, Ready: 1, Source: "ClusterProfile"},
		// Its entry was removed: the hub asks it nothing, its objects stay (Orphaned).
		{Name: "deregistered", Reachable: Unknown, Engaged: False, Placed: 1, Source: "status"},
		// Identity from the hub's status wins over what join recorded.
		{Name: "eu-1", Identity: "uid-from-status", Reachable: True, Engaged: True, LastAnswer: ptr(t2), Placed: 2, Ready: 1,
			Source: "Secret", Labels: map[string]string{"region": "eu"}},
		// Out of the inventory, being cleaned: not engaged, nothing placed, tombstones pending.
		{Name: "gone", Reachable: True, Engaged: False, LastAnswer: ptr(t0), Tombstones: 2, Source: "status"},
		{Name: "idle", Reachable: Unknown, Engaged: True, Source: "Secret"},
		{Name: "leaving", Reachable: Unknown, Engaged: False, Source: "Secret"},
		{Name: "old", Reachable: Unknown, Engaged: False, Tombstones: 1, Source: "status"},
		// The latest answer is Unreachable.
		{Name: "us-1", Reachable: False, Engaged: True, LastAnswer: ptr(t0), Placed: 2, Ready: 1, Source: "Secret"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if MembersHealthy(got) {
		t.Error("unreachable members: want unhealthy")
	}
	if !MembersHealthy(want[4:5]) {
		t.Error("an idle engaged member is healthy")
	}
}

func TestPlacementRowsAndHealth(t *testing.T) {
	f := Facts{Pipelines: []Pipeline{
		{Namespace: "shop", Name: "orders", Generation: 3, Ready: True, Placements: []Placement{
			{Member: "us-1", Phase: "Ready", ObservedGeneration: 3, ReadyReplicas: 1, LastTransition: t1},
			{Member: "eu-1", Phase: "Applied", ObservedGeneration: 2, Message: "waiting"},
		}},
		{Namespace: "shop", Name: "nowhere", Generation: 1, Ready: False, ReadyReason: "NoClustersSelected", ReadyMessage: "no member matches"},
	}}
	want := []PlacementRow{
		{Namespace: "shop", Pipeline: "nowhere", Phase: "NoClustersSelected", Generation: 1, Message: "no member matches"},
		{Namespace: "shop", Pipeline: "orders", Member: "eu-1", Phase: "Applied", Generation: 3, ObservedGeneration: 2, Message: "waiting"},
		{Namespace: "shop", Pipeline: "orders", Member: "us-1", Phase: "Ready", Generation: 3, ObservedGeneration: 3, ReadyReplicas: 1, Since: ptr(t1)},
	}
	if d := cmp.Diff(want, PlacementRows(f)); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if PipelinesHealthy(f.Pipelines) {
		t.Error("a pipeline not Ready: want unhealthy")
	}
	if !PipelinesHealthy(f.Pipelines[:1]) {
		t.Error("a Ready pipeline is healthy")
	}
	if PipelinesHealthy([]Pipeline{{Ready: True, Terminated: "invalid_spec"}}) {
		t.Error("a terminated pipeline is unhealthy")
	}
}

// TestPipelineFrom reads a pipeline with a field today's API lacks (clusterID) and one with no
// status at all.
func TestPipelineFrom(t *testing.T) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: urutau.io/v1alpha1
kind: CDCPipeline
metadata: {name: orders, namespace: shop, generation: 4}
status:
  observedGeneration: 3
  terminated: {reason: invalid_spec}
  conditions:
  - {type: Ready, status: "False", reason: Terminated, message: stopped}
  clusters:
  - {name: eu-1, phase: Terminated, clusterID: abc, observedGeneration: 3, coordinatorReadyReplicas: 1, message: m, lastTransitionTime: "2026-12-01T12:00:00Z"}
`), &u.Object); err != nil {
		t.Fatal(err)
	}
	want := Pipeline{Namespace: "shop", Name: "orders", Generation: 4, Observed: 3, Ready: False, ReadyReason: "Terminated",
		ReadyMessage: "stopped", Terminated: "invalid_spec", Placements: []Placement{{Namespace: "shop", Pipeline: "orders",
			Member: "eu-1", Phase: "Terminated", ClusterID: "abc", ObservedGeneration: 3, Generation: 4, ReadyReplicas: 1, Message: "m", LastTransition: t0}}}
	if d := cmp.Diff(want, PipelineFrom(u)); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	fo := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
metadata: {name: orders, namespace: shop}
status:
  clusters: [{name: eu-1, phase: Ready}, {name: eu-2, phase: Deleting}]
  failover:
    member: eu-1
    last: {from: eu-2, to: eu-1, reason: MemberLost, readyAt: "2026-12-01T12:00:00Z", readerGapSeconds: 93}
`), &fo.Object); err != nil {
		t.Fatal(err)
	}
	rows := PlacementRows(Facts{Pipelines: []Pipeline{PipelineFrom(fo)}})
	if len(rows) != 2 || rows[0].Failover != "moved from eu-2 (MemberLost), no reader for 93s" || rows[1].Failover != "" {
		t.Errorf("failover rows: %+v", rows)
	}
	bare := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x", "namespace": "y"}}}
	if d := cmp.Diff(Pipeline{Namespace: "y", Name: "x", Ready: Unknown}, PipelineFrom(bare)); d != "" {
		t.Errorf("no status (-want +got)\n%s", d)
	}
}

func TestTombstones(t *testing.T) {
	leases := []urutauv1alpha1.ReaderLease{{Spec: urutauv1alpha1.ReaderLeaseSpec{Members: []urutauv1alpha1.LeaseMember{
		{Cluster: "eu-1", PipelineUID: "live", PipelineName: "orders"},
		{Cluster: "us-1", PipelineUID: "dead", PipelineNamespace: "shop", PipelineName: "old", Reason: "unreachable", Since: metav1.NewTime(t0)},
	}}}}
	got := Tombstones(leases, []Pipeline{{Name: "orders", UID: "live"}})
	want := []Tombstone{{Member: "us-1", Namespace: "shop", Pipeline: "old", Reason: "unreachable", Created: t0}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

// The hub's health record, when there is one, decides over what pipelines' status suggests: an
// idle member is known to answer, a member whose placements still say Ready is known down.
func TestMembersFromHealthRecords(t *testing.T) {
	f := Facts{
		Entries: []Entry{
			{Name: "idle", Kind: "Secret", Health: &HealthRecord{Reachable: True, Engaged: True, Identity: "uid-idle", Since: t0, LastAnswer: t0, Interval: 30 * time.Second}},
			{Name: "down", Kind: "Secret", Health: &HealthRecord{Reachable: False, Engaged: False, Message: "no connection", Since: t2, LastAnswer: t1, Interval: 30 * time.Second}},
			{Name: "leaving", Kind: "Secret", Deleting: true, Health: &HealthRecord{Reachable: True, Engaged: True}},
		},
		Pipelines: []Pipeline{{Namespace: "shop", Name: "orders", Placements: []Placement{
			{Member: "down", Phase: "Ready", LastTransition: t0},
		}}},
	}
	got := Members(f)
	want := []Member{
		{Name: "down", Reachable: False, Engaged: False, LastAnswer: ptr(t1), ReachableSince: ptr(t2),
			CheckInterval: metav1.Duration{Duration: 30 * time.Second}, Message: "no connection", Placed: 1, Ready: 1, Source: "Secret"},
		{Name: "idle", Identity: "uid-idle", Reachable: True, Engaged: True, ReachableSince: ptr(t0),
			CheckInterval: metav1.Duration{Duration: 30 * time.Second}, Source: "Secret"},
		// Leaving the inventory: the hub no longer checks it, so its record says nothing.
		{Name: "leaving", Reachable: Unknown, Engaged: False, Source: "Secret"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Members (-want +got):\n%s", d)
	}
}
