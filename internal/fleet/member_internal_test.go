package fleet

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/status"
)

func TestCoordinatorReady(t *testing.T) {
	sts := func(gen, observed int64, ready, updated int32, cur, upd string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{}
		s.Generation = gen
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated,
			CurrentRevision: cur, UpdateRevision: upd}
		return s
	}
	for _, tc := range []struct {
		name string
		sts  *appsv1.StatefulSet
		want bool
	}{
		{"rolled out and ready", sts(2, 2, 1, 1, "r2", "r2"), true},
		{"no revisions reported", sts(1, 1, 1, 1, "", ""), true},
		{"new spec not observed: the ready pod is the old one", sts(3, 2, 1, 1, "r2", "r2"), false},
		{"rolling: the ready pod is still the old revision", sts(3, 3, 1, 0, "r2", "r3"), false},
		{"updated but revision not switched", sts(3, 3, 1, 1, "r2", "r3"), false},
		{"updated pod not ready", sts(3, 3, 0, 1, "r3", "r3"), false},
	} {
		if got := coordinatorReady(tc.sts); got != tc.want {
			t.Errorf("%s: coordinatorReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The apply's answer decides readiness when the hub wrote the StatefulSet (its echo is not
// reconciled): a write that left the spec alone reads the member's status as it is, one that
// moved the generation reads not ready until the controller catches up.
func TestAppliedStatefulSet(t *testing.T) {
	answer := func(gen, observed int64) *appsv1ac.StatefulSetApplyConfiguration {
		ac := appsv1ac.StatefulSet("p-coordinator", "ns").
			WithStatus(appsv1ac.StatefulSetStatus().WithObservedGeneration(observed).WithReplicas(1).
				WithReadyReplicas(1).WithUpdatedReplicas(1).WithCurrentRevision("r1").WithUpdateRevision("r1"))
		ac.WithGeneration(gen).WithResourceVersion("42")
		return ac
	}
	for _, tc := range []struct {
		name      string
		gen, obs  int64
		wantReady bool
	}{
		{"metadata-only write to a ready StatefulSet", 4, 4, true},
		{"template change not yet observed", 5, 4, false},
	} {
		got, err := appliedStatefulSet(answer(tc.gen, tc.obs))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Generation != tc.gen || got.Status.ReadyReplicas != 1 || got.ResourceVersion != "42" {
			t.Errorf("%s: read %+v, want generation %d, 1 ready replica, resourceVersion 42", tc.name, got.ObjectMeta, tc.gen)
		}
		if r := coordinatorReady(got); r != tc.wantReady {
			t.Errorf("%s: coordinatorReady = %v, want %v", tc.name, r, tc.wantReady)
		}
	}
	if _, err := appliedStatefulSet(appsv1ac.Deployment("d", "ns")); err == nil {
		t.Error("appliedStatefulSet accepted a Deployment apply configuration")
	}
}

func TestPrefetch(t *testing.T) {
	release := make(chan struct{})
	calls := 0
	wait := prefetch(func() (int, error) {
		<-release
		calls++
		return 7, errors.New("answer")
	})
	close(release)
	for range 2 {
		v, err := wait()
		if v != 7 || err == nil || err.Error() != "answer" {
			t.Fatalf("prefetch gave %d, %v; want 7, answer", v, err)
		}
	}
	if calls != 1 {
		t.Errorf("read ran %d times, want once", calls)
	}
}

// holdsApplied decides from metadata alone: the hash must match, our Apply entry must exist, and
// no other manager may have written the object at or after our apply.
func TestHoldsApplied(t *testing.T) {
	t1, t2 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	const me = "urutau-operator@a"
	obj := func(hash string, mf ...metav1.ManagedFieldsEntry) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		cm.Annotations = map[string]string{urutauv1alpha1.AnnotationAppliedHash: hash}
		cm.ManagedFields = mf
		return cm
	}
	ours := metav1.ManagedFieldsEntry{Manager: me, Operation: metav1.ManagedFieldsOperationApply, Time: &t2}
	for _, tc := range []struct {
		name string
		obj  *corev1.ConfigMap
		want bool
	}{
		{"ours, nobody since", obj("h1", ours), true},
		{"another hash", obj("h0", ours), false},
		{"never applied by us", obj("h1", metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t1}), false},
		{"someone wrote before us", obj("h1", ours, metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t1}), true},
		{"someone wrote after us", obj("h1", metav1.ManagedFieldsEntry{Manager: me, Operation: metav1.ManagedFieldsOperationApply, Time: &t1},
			metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t2}), false},
		{"someone wrote in the same second", obj("h1", ours, metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t2}), false},
		{"a controller wrote the status after us", obj("h1", ours,
			metav1.ManagedFieldsEntry{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &t2}), true},
		{"a person scaled it after us (kubectl scale)", obj("h1", metav1.ManagedFieldsEntry{Manager: me, Operation: metav1.ManagedFieldsOperationApply, Time: &t1},
			metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "scale", Time: &t2}), false},
		{"a scale before our apply", obj("h1", ours,
			metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "scale", Time: &t1}), true},
	} {
		if got := holdsApplied(tc.obj, me, "h1"); got != tc.want {
			t.Errorf("%s: holdsApplied = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A hand scale to zero leaves no manager behind (the Scale omits a zero), so the content hash and
// the managers alone would call the StatefulSet unchanged: keeps reads the replicas.
func TestStatefulSetRequestKeepsReplicas(t *testing.T) {
	ac := appsv1ac.StatefulSet("c", "ns").WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(1))
	r, err := statefulSetRequest(ac)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		replicas *int32
		want     bool
	}{{ptr.To[int32](1), true}, {ptr.To[int32](0), false}, {ptr.To[int32](2), false}, {nil, false}} {
		live := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: tc.replicas}}
		if got := r.keeps(live); got != tc.want {
			t.Errorf("replicas %v: keeps = %v, want %v", tc.replicas, got, tc.want)
		}
	}
	workers, err := statefulSetRequest(appsv1ac.StatefulSet("w", "ns").WithSpec(appsv1ac.StatefulSetSpec()))
	if err != nil || workers.keeps != nil {
		t.Errorf("a StatefulSet whose replicas another owns (KEDA) has keeps %v, err %v", workers.keeps != nil, err)
	}
}

// TestNextLookDeparted: a departed member that answers and still holds a reader brings the
// pipeline back soon by itself, whatever its entry's state; one draining, or whose pass failed, at
// the retry interval; one that does not answer waits for its health check (or the fence's bound).
// The Removing rows check the same with the entry listed in the status, as an entry not yet
// confirmed gone is.
func TestNextLookDeparted(t *testing.T) {
	r := &CoordinatorReconciler{WaitInterval: 2 * time.Second, RetryInterval: 30 * time.Second}
	p := &urutauv1alpha1.CDCPipeline{}
	for _, tc := range []struct {
		name   string
		state  DepartedState
		failed bool
		want   time.Duration
	}{
		{"holding a reader", DepartedHolding, false, 2 * time.Second},
		{"draining", DepartedDraining, false, 30 * time.Second},
		{"empty", DepartedEmpty, false, 0},
		{"unreachable", DepartedUnreachable, false, 0},
		// A member answering 403 to every cleanup LIST, or too slow for the fan-out: the pass
		// says Holding because it is the safe default, not because a reader was seen.
		{"pass failed", DepartedHolding, true, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := &placed{departed: map[entryKey]departedResult{{cluster: "a"}: {state: tc.state, failed: tc.failed}}}
			// No Removing: the entry was confirmed gone, so the status does not list it.
			if got := r.nextLook(p, &world{}, status.Observation{}, pl, nil); got != tc.want {
				t.Errorf("confirmed gone: nextLook = %s, want %s", got, tc.want)
			}
			want := tc.want
			if want == 0 {
				want = r.RetryInterval
			}
			if got := r.nextLook(p, &world{}, status.Observation{Removing: []string{"a"}}, pl, nil); got != want {
				t.Errorf("removing: nextLook = %s, want %s", got, want)
			}
		})
	}
}
