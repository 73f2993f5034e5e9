package fleet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/orphans"
)

// Stray objects of a live pipeline are recorded in its lease (holding its moves until the hub
// has emptied that member) only in a namespace opened to the fleet, where the hub may remove
// them; on a member no PlacementPolicy allows too (a restored coordinator reads all the same).
// Elsewhere anyone who may label objects there would hold the pipeline's moves for good; they
// are reported as orphans instead.
func TestStrayRecordedOnlyWherePlaceable(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, urutauv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "orders", UID: "u1"}}
	policy := &urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: "cdc-on-eu"}, Spec: urutauv1alpha1.PlacementPolicySpec{
		Namespaces: []string{"cdc"}, ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}}
	for _, tc := range []struct {
		name         string
		member       inventory.Member
		memberLabels map[string]string
		want         bool
	}{
		{"opened namespace, member the policy allows", inventory.Member{Name: "eu-1", Labels: map[string]string{"region": "eu"}},
			map[string]string{urutauv1alpha1.LabelFleetManaged: "true"}, true},
		{"namespace not opened to the fleet", inventory.Member{Name: "eu-1", Labels: map[string]string{"region": "eu"}}, nil, false},
		{"opened namespace on a member no policy allows", inventory.Member{Name: "us-1", Labels: map[string]string{"region": "us"}},
			map[string]string{urutauv1alpha1.LabelFleetManaged: "true"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := fake.NewClientBuilder().WithScheme(scheme).WithObjects(p.DeepCopy(), policy.DeepCopy(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cdc"}}).Build()
			member := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cdc", Labels: tc.memberLabels}}).Build()
			r := &CoordinatorReconciler{Client: hub, leases: lease.Store{Client: hub, Live: hub, Namespace: "urutau-system"}}
			r.members.SetHealth(tc.member.Name, members.Health{Checked: true, Up: true})
			r.members.SetIdentity(tc.member.Name, nil, "id-"+tc.member.Name)
			got := r.recordStray(t.Context(), tc.member, &members.Conn{Name: tc.member.Name, Live: member}, p, &orphans.Group{UID: p.UID, Namespace: "cdc", Objects: 1})
			leases := &urutauv1alpha1.ReaderLeaseList{}
			if err := hub.List(t.Context(), leases); err != nil {
				t.Fatal(err)
			}
			if got != tc.want || (len(leases.Items) == 1) != tc.want {
				t.Fatalf("recorded %v with %d lease(s), want %v", got, len(leases.Items), tc.want)
			}
		})
	}
}
