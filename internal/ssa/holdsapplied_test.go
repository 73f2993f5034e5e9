package ssa

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/membercache"
)

// The no-op check decides the same from a cached object as from the member's.
func TestMemberObjectHoldsApplied(t *testing.T) {
	const me = "urutau-operator@a"
	t1, t2 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	for _, mf := range [][]metav1.ManagedFieldsEntry{
		{{Manager: me, Operation: metav1.ManagedFieldsOperationApply, Time: &t2}},
		{{Manager: me, Operation: metav1.ManagedFieldsOperationApply, Time: &t1}, {Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t2}},
		{{Manager: me, Operation: metav1.ManagedFieldsOperationApply, Time: &t2}, {Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "scale", Time: &t1}},
		{{Manager: me, Operation: metav1.ManagedFieldsOperationApply}},
	} {
		live := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", ManagedFields: mf,
			Annotations: map[string]string{urutauv1alpha1.AnnotationAppliedHash: "00000000000000aa"}}}
		cached := &corev1.ServiceAccount{}
		compacted, err := membercache.Transform(live.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if err := membercache.Fill(compacted.(client.Object), cached); err != nil {
			t.Fatal(err)
		}
		if a, b := holdsApplied(live, me, "00000000000000aa"), holdsApplied(cached, me, "00000000000000aa"); a != b {
			t.Errorf("managers %v: holdsApplied %v from the member, %v from the cache", mf, a, b)
		}
	}
}
