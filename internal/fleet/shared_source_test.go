package fleet

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// splitRunning gives sourcedb.Hold its order: the targets a coordinator of the pipeline runs on
// already, oldest first (the first of them keeps running), then the others by name. A drained
// entry, another pipeline's entry, or an entry of another cluster under the target's name does
// not run there.
func TestSplitRunning(t *testing.T) {
	running := func(m string, since time.Duration) urutauv1alpha1.LeaseMember {
		e := entry(selfP, m, urutauv1alpha1.LeaseMemberActive)
		e.Since = metav1.NewTime(t0.Add(since))
		return e
	}
	other := urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "other", UID: "uid-o"}
	moved := running("e", 0)
	moved.ClusterID = "another-cluster"
	l := leaseOf(selfP, running("a", time.Minute), running("b", 0), entry(selfP, "c", urutauv1alpha1.LeaseMemberDrained),
		entry(other, "d", urutauv1alpha1.LeaseMemberActive), moved)
	gotRunning, gotWaiting := splitRunning(l, selfP.UID, targets("a", "b", "c", "d", "e"))
	if want := []string{"b", "a"}; !slices.Equal(gotRunning, want) {
		t.Errorf("running %v, want %v", gotRunning, want)
	}
	if want := []string{"c", "d", "e"}; !slices.Equal(gotWaiting, want) {
		t.Errorf("waiting %v, want %v", gotWaiting, want)
	}
}
