package fleet

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/memberwork"
)

// A coordinator is created only by the reconcile of the pipeline as it still is: an apply that a
// newer change overtook starts no reader.
func TestStillCurrent(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := urutauv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	read := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p", UID: "u1", Generation: 2}}
	now := func(mutate func(*urutauv1alpha1.CDCPipeline)) *urutauv1alpha1.CDCPipeline {
		p := read.DeepCopy()
		mutate(p)
		return p
	}
	for _, tc := range []struct {
		name       string
		hub        *urutauv1alpha1.CDCPipeline // nil: gone
		superseded bool
	}{
		{"unchanged", now(func(*urutauv1alpha1.CDCPipeline) {}), false},
		{"status and metadata changed", now(func(p *urutauv1alpha1.CDCPipeline) { p.Labels = map[string]string{"a": "b"} }), false},
		{"the spec changed (a new placement)", now(func(p *urutauv1alpha1.CDCPipeline) { p.Generation = 3 }), true},
		{"being deleted", now(func(p *urutauv1alpha1.CDCPipeline) {
			ts := metav1.Now()
			p.DeletionTimestamp, p.Finalizers = &ts, []string{urutauv1alpha1.Finalizer}
		}), true},
		{"re-created", now(func(p *urutauv1alpha1.CDCPipeline) { p.UID = "u2" }), true},
		{"gone", nil, true},
	} {
		b := fake.NewClientBuilder().WithScheme(scheme)
		if tc.hub != nil {
			b = b.WithObjects(tc.hub)
		}
		c := b.Build()
		err := stillCurrent(t.Context(), c, read)
		if got := errors.Is(err, memberwork.ErrSuperseded); got != tc.superseded || (!tc.superseded && err != nil) {
			t.Errorf("%s: stillCurrent = %v, want superseded %v", tc.name, err, tc.superseded)
		}
	}
}
