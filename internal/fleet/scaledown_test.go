package fleet

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/lease"
)

func TestScaledDown(t *testing.T) {
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	sts := func(replicas *int32, generation, observed int64, scaledDownAt string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec: appsv1.StatefulSetSpec{Replicas: replicas}, Status: appsv1.StatefulSetStatus{ObservedGeneration: observed}}
		if scaledDownAt != "" {
			s.Annotations = map[string]string{urutauv1alpha1.AnnotationScaledDownAt: scaledDownAt}
		}
		return s
	}
	ago := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
	for name, tc := range map[string]struct {
		sts  *appsv1.StatefulSet
		want bool
	}{
		"no controller ever saw it":                  {sts(ptr.To[int32](1), 1, 0, ""), true},
		"running, seen":                              {sts(ptr.To[int32](1), 1, 1, ""), false},
		"replicas unset (one), seen":                 {sts(nil, 1, 1, ""), false},
		"scaled to zero, not seen yet":               {sts(ptr.To[int32](0), 2, 1, ago(0)), false},
		"scaled to zero, seen":                       {sts(ptr.To[int32](0), 2, 2, ago(0)), true},
		"scaled to zero, then scaled up by a person": {sts(ptr.To[int32](2), 3, 3, ago(0)), false},
		"scaled to zero, seen, status written after": {sts(ptr.To[int32](0), 2, 3, ""), true},
		"not seen a minute after the scale":          {sts(ptr.To[int32](0), 2, 1, ago(time.Minute)), false},
		"not seen for the whole patience":            {sts(ptr.To[int32](0), 2, 1, ago(controllerPatience)), true},
		"scaled up again after the patience":         {sts(ptr.To[int32](1), 3, 1, ago(controllerPatience)), false},
		"a time that does not parse":                 {sts(ptr.To[int32](0), 2, 1, "soon"), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := scaledDown(tc.sts, now); got != tc.want {
				t.Fatalf("scaledDown = %v, want %v", got, tc.want)
			}
		})
	}
}

// A coordinator StatefulSet its controller runs is scaled to zero, kept (a reader) until the
// controller has seen the scale, and deleted in the pass after: a controller whose cache of
// StatefulSets lags cannot make pod-0 again after the member was found empty.
func TestCleanupScalesTheCoordinatorToZeroBeforeDeletingIt(t *testing.T) {
	entry := urutauv1alpha1.LeaseMember{PipelineUID: "u1", PipelineName: "p", PipelineNamespace: "hub-ns", Namespace: "cdc"}
	labels := hubLabels("hub-ns", "p")
	labels[urutauv1alpha1.LabelHubPipelineUID] = "u1"
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: coordinator.CoordinatorName("p"), Labels: labels, Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1}}
	c := fake.NewClientBuilder().WithScheme(cleanScheme(t)).WithObjects(sts).WithStatusSubresource(sts).Build()
	pass := func() cleanupResult {
		t.Helper()
		res, err := cleanupMember(t.Context(), c, c, entry)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	get := func() *appsv1.StatefulSet {
		t.Helper()
		got := &appsv1.StatefulSet{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(sts), got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	if res := pass(); res.state() != lease.Holding || res.deleted != 0 {
		t.Fatalf("first pass: %v, %d deleted; want Holding, none deleted", res.state(), res.deleted)
	}
	got := get()
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 0 {
		t.Fatalf("replicas %v after the first pass, want 0", got.Spec.Replicas)
	}
	if _, err := time.Parse(time.RFC3339, got.Annotations[urutauv1alpha1.AnnotationScaledDownAt]); err != nil {
		t.Fatalf("the scale was not recorded: %v", err)
	}
	// The API server counts the new generation (the fake client does not).
	got.Generation = 2
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if res := pass(); res.state() != lease.Holding || res.deleted != 0 {
		t.Fatalf("a pass before the controller saw the scale: %v, %d deleted; want Holding, none deleted", res.state(), res.deleted)
	}
	// The controller sees it.
	got = get()
	got.Status.ObservedGeneration = 2
	if err := c.Status().Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if res := pass(); res.deleted != 1 {
		t.Fatalf("the pass after the controller saw the scale deleted %d objects, want 1", res.deleted)
	}
	if res := pass(); res.state() != lease.Empty {
		t.Fatalf("after the deletion: %v, want Empty", res.state())
	}
}

// A StatefulSet scaled down once, then placed there again (the hub's apply takes replicas back,
// the annotation stays), is scaled down with a new time: the old one would skip the wait for the
// controller at once.
func TestScaleToZeroReplacesAnEarlierTime(t *testing.T) {
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p-coordinator", Generation: 3,
		Annotations: map[string]string{urutauv1alpha1.AnnotationScaledDownAt: old}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 3}}
	c := fake.NewClientBuilder().WithScheme(cleanScheme(t)).WithObjects(sts).Build()
	now := time.Now()
	if err := scaleToZero(t.Context(), c, sts.DeepCopy(), now); err != nil {
		t.Fatal(err)
	}
	got := &appsv1.StatefulSet{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sts), got); err != nil {
		t.Fatal(err)
	}
	if at := got.Annotations[urutauv1alpha1.AnnotationScaledDownAt]; at != now.UTC().Format(time.RFC3339) {
		t.Fatalf("scaled down at %q, want now", at)
	}
	got.Generation = 4 // as the API server counts the scale
	if scaledDown(got, now.Add(time.Second)) {
		t.Fatal("deleted before its controller saw the scale")
	}
}
