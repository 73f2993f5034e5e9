package fleet

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// The status is written once, at the end of a reconcile, from the pipeline as the phases left it.
// A phase may have patched the pipeline itself meanwhile (a consumed annotation), and someone
// else may have written it after that (a label, a GitOps re-apply): the status write must carry
// the status alone, not a resourceVersion that fails it, or a consumed failover request would
// never be recorded. Clearing a termination stays locked on the version read.
func TestPatchStatusCarriesTheStatusOnly(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := urutauv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p",
		Annotations: map[string]string{urutauv1alpha1.AnnotationFailoverTo: "b"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
	hw := &hubWrites{client: c, fieldManager: DefaultFieldManager}
	p := &urutauv1alpha1.CDCPipeline{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(stored), p); err != nil {
		t.Fatal(err)
	}
	orig := p.DeepCopy()

	// A phase consumes the annotation (a write of ours), then someone else labels the pipeline.
	before := p.DeepCopy()
	delete(p.Annotations, urutauv1alpha1.AnnotationFailoverTo)
	if err := c.Patch(t.Context(), p, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	other := p.DeepCopy()
	other.Labels = map[string]string{"team": "payments"}
	if err := c.Update(t.Context(), other); err != nil {
		t.Fatal(err)
	}

	p.Status.Failover = &urutauv1alpha1.FailoverStatus{Member: "b"}
	if err := hw.status(t.Context(), orig, p, false); err != nil {
		t.Fatalf("the status write failed on someone else's write since: %v", err)
	}
	got := &urutauv1alpha1.CDCPipeline{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Failover == nil || got.Status.Failover.Member != "b" || got.Labels["team"] != "payments" {
		t.Errorf("stored: status.failover %+v, labels %v; want member b and the other's label kept", got.Status.Failover, got.Labels)
	}

	// The locked write still refuses a stale pipeline.
	stale := p.DeepCopy()
	stale.ResourceVersion = orig.ResourceVersion
	locked := stale.DeepCopy()
	locked.Status.Failover = nil
	if err := hw.status(t.Context(), stale, locked, true); err == nil {
		t.Error("a locked status write on a stale pipeline succeeded")
	}
}
