package fleet

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/ssa"
)

// A write of ours that changes nothing answers with the resourceVersion of the latest change,
// which may be someone else's: a change our writes never make passes the hub filter anyway
// (chaos seed 70071: a deletion taken for the echo of a status patch).
func TestNotOurEchoLetsOthersChangesThrough(t *testing.T) {
	h := &handlers{hubEchoes: &ssa.EchoFilter{}}
	h.hubEchoes.Begin("cdc/p1")
	h.hubEchoes.End("cdc/p1", "42") // a status patch from a stale cache: a no-op, answered with 42
	old := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p1", Generation: 2, ResourceVersion: "41",
		Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}}}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(*urutauv1alpha1.CDCPipeline)
		passes bool
	}{
		{"our status write", func(p *urutauv1alpha1.CDCPipeline) { p.Status.ObservedGeneration = 2 }, false},
		{"our finalizer", func(p *urutauv1alpha1.CDCPipeline) { p.Finalizers = []string{urutauv1alpha1.Finalizer} }, false},
		{"a deletion", func(p *urutauv1alpha1.CDCPipeline) { p.DeletionTimestamp, p.Generation = &now, 3 }, true},
		{"a spec change", func(p *urutauv1alpha1.CDCPipeline) { p.Generation = 3 }, true},
		{"a label", func(p *urutauv1alpha1.CDCPipeline) { p.Labels = map[string]string{"team": "b"} }, true},
		{"an annotation", func(p *urutauv1alpha1.CDCPipeline) {
			p.Annotations = map[string]string{"note": "x", urutauv1alpha1.AnnotationConfirmGone: "member-a"}
		}, true},
	} {
		updated := old.DeepCopy()
		tc.change(updated)
		updated.ResourceVersion = "42"
		if got := h.notOurEcho().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tc.passes {
			t.Errorf("%s with our write's resourceVersion: passes %v, want %v", tc.name, got, tc.passes)
		}
	}
}

// The answer to our write shows what others changed meanwhile; a change the hub acts on has the
// pipeline looked at again, since the filter may take its event for our echo (a person clearing
// status.terminated while a status patch from a stale cache changes nothing).
func TestWriteHubLooksAgainAtOthersChanges(t *testing.T) {
	sent := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p1", Generation: 2, ResourceVersion: "9"}}
	sent.Status.Terminated = &urutauv1alpha1.Terminated{Reason: "InvalidSpec"}
	now := metav1.Now()
	for _, tc := range []struct {
		name  string
		other func(*urutauv1alpha1.CDCPipeline)
		again bool
	}{
		{"nothing else changed", func(*urutauv1alpha1.CDCPipeline) {}, false},
		{"a status field the hub writes", func(p *urutauv1alpha1.CDCPipeline) { p.Status.ObservedGeneration = 2 }, false},
		{"status.terminated cleared", func(p *urutauv1alpha1.CDCPipeline) { p.Status.Terminated = nil }, true},
		{"a deletion", func(p *urutauv1alpha1.CDCPipeline) { p.DeletionTimestamp, p.Generation = &now, 3 }, true},
		{"a spec change", func(p *urutauv1alpha1.CDCPipeline) { p.Generation = 3 }, true},
		{"an annotation", func(p *urutauv1alpha1.CDCPipeline) {
			p.Annotations = map[string]string{urutauv1alpha1.AnnotationConfirmGone: "member-a"}
		}, true},
	} {
		hw := &hubWrites{}
		p := sent.DeepCopy()
		err := hw.pipeline(p, func() error {
			p.ResourceVersion = "11" // a no-op patch: the latest resourceVersion, someone else's
			tc.other(p)
			return nil
		})
		again := hw.again(client.ObjectKeyFromObject(p))
		if err != nil || again != tc.again {
			t.Errorf("%s: pipeline write = %v, looks again %v, want %v", tc.name, err, again, tc.again)
		}
	}
}
