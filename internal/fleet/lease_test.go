package fleet

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/lease"
)

var (
	t0    = metav1.Date(2026, 12, 1, 10, 0, 0, 0, metav1.Now().Location())
	src   = &urutauv1alpha1.SourceIdentity{Kind: "mysql", Field: "serverId", Value: "1101"}
	selfP = urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders", UID: "uid-p"}
)

// entry is a lease entry of pipeline ref on member m (identity "id-"+m).
func entry(ref urutauv1alpha1.PipelineRef, m string, st urutauv1alpha1.LeaseMemberState) urutauv1alpha1.LeaseMember {
	return urutauv1alpha1.LeaseMember{Cluster: m, ClusterID: "id-" + m, PipelineUID: ref.UID, PipelineNamespace: ref.Namespace,
		PipelineName: ref.Name, Namespace: ref.Namespace, State: st, Since: t0}
}

func leaseOf(holder urutauv1alpha1.PipelineRef, entries ...urutauv1alpha1.LeaseMember) *urutauv1alpha1.ReaderLease {
	l := &urutauv1alpha1.ReaderLease{Spec: urutauv1alpha1.ReaderLeaseSpec{Source: src.DeepCopy(), Holder: holder, Members: entries}}
	l.Name = lease.Name(src, holder.UID)
	return l
}

func targets(ms ...string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		out[m] = "id-" + m
	}
	return out
}

func TestConfirmedGone(t *testing.T) {
	p := &urutauv1alpha1.CDCPipeline{}
	p.Annotations = map[string]string{urutauv1alpha1.AnnotationConfirmGone: " a, ,b "}
	if got := ConfirmedGone(p); !got.Equal(sets.New("a", "b")) {
		t.Fatalf("got %v", sets.List(got))
	}
}
