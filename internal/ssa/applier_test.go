package ssa

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// The apply's answer is read back whole: the hub decides readiness from it when it wrote the
// StatefulSet (its echo is not reconciled), so its generation and status must be the member's.
func TestAppliedStatefulSet(t *testing.T) {
	answer := func(gen, observed int64) *appsv1ac.StatefulSetApplyConfiguration {
		ac := appsv1ac.StatefulSet("p-coordinator", "ns").
			WithStatus(appsv1ac.StatefulSetStatus().WithObservedGeneration(observed).WithReplicas(1).
				WithReadyReplicas(1).WithUpdatedReplicas(1).WithCurrentRevision("r1").WithUpdateRevision("r1"))
		ac.WithGeneration(gen).WithResourceVersion("42")
		return ac
	}
	for _, tc := range []struct {
		name     string
		gen, obs int64
	}{
		{"metadata-only write to a ready StatefulSet", 4, 4},
		{"template change not yet observed", 5, 4},
	} {
		got, err := appliedStatefulSet(answer(tc.gen, tc.obs))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Generation != tc.gen || got.Status.ReadyReplicas != 1 || got.ResourceVersion != "42" {
			t.Errorf("%s: read %+v, want generation %d, 1 ready replica, resourceVersion 42", tc.name, got.ObjectMeta, tc.gen)
		}
		want := appsv1.StatefulSetStatus{ObservedGeneration: tc.obs, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r1"}
		if !reflect.DeepEqual(got.Status, want) {
			t.Errorf("%s: status read back %+v, want %+v (readiness reads every field)", tc.name, got.Status, want)
		}
	}
	if _, err := appliedStatefulSet(appsv1ac.Deployment("d", "ns")); err == nil {
		t.Error("appliedStatefulSet accepted a Deployment apply configuration")
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
