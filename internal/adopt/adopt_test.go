package adopt

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

func TestDecide(t *testing.T) {
	p := Pipeline{UID: "uid-1", Namespace: "shop", Name: "orders"}
	obj := func(labels, annotations map[string]string, owners []metav1.OwnerReference, managers ...string) client.Object {
		o := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders-coordinator",
			Labels: labels, Annotations: annotations, OwnerReferences: owners}}
		for _, m := range managers {
			o.ManagedFields = append(o.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply})
		}
		return o
	}
	single := map[string]string{urutauv1alpha1.LabelApp: "urutau-coordinator", urutauv1alpha1.LabelPipeline: "orders"}
	crOwner := metav1.OwnerReference{APIVersion: "urutau.io/v1alpha1", Kind: "CDCPipeline", Name: "orders", Controller: new(true)}
	tests := []struct {
		name     string
		existing client.Object
		want     Verdict
		conflict []string // substrings of the conflict message
	}{
		{name: "absent", existing: nil, want: Absent},
		{name: "ours", existing: obj(map[string]string{urutauv1alpha1.LabelHubPipelineUID: "uid-1"}, nil, nil, "urutau-operator@eu-1"), want: Ours},
		{name: "another pipeline's (a re-created pipeline of the same name before the tombstone replay)",
			existing: obj(map[string]string{urutauv1alpha1.LabelHubPipelineUID: "uid-0", urutauv1alpha1.LabelHubNamespace: "shop", urutauv1alpha1.LabelHubName: "orders"}, nil, nil, "urutau-operator@eu-1"),
			conflict: []string{"another pipeline of the fleet (urutau.io/hub-pipeline-uid shop/orders, UID uid-0)", "field managers: urutau-operator@eu-1"}},
		{name: "single-cluster operator's, orphaned", existing: obj(single, nil, nil, "urutau-operator", "kube-controller-manager"), want: Migrate},
		{name: "single-cluster operator's, still owned by its live CR", existing: obj(single, nil, []metav1.OwnerReference{crOwner}, "urutau-operator"),
			conflict: []string{"still owned by the CDCPipeline \"orders\" of the member", "--cascade=orphan"}},
		{name: "single-cluster operator's, still owned by its CR, handed over", existing: obj(single, map[string]string{urutauv1alpha1.AnnotationAdopt: "shop/orders"}, []metav1.OwnerReference{crOwner}, "urutau-operator"),
			want: Adopt},
		{name: "single-cluster labels of another CR", existing: obj(map[string]string{urutauv1alpha1.LabelApp: "urutau-coordinator", urutauv1alpha1.LabelPipeline: "payments"}, nil, nil, "urutau-operator"),
			conflict: []string{"not created by the fleet"}},
		{name: "single-cluster labels but another owner", existing: obj(single, nil, []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}, "kubectl"),
			conflict: []string{"owned by Deployment web", "owners Deployment/web"}},
		{name: "explicit adopt annotation", existing: obj(nil, map[string]string{urutauv1alpha1.AnnotationAdopt: "shop/orders"}, nil, "kubectl-client-side-apply"), want: Adopt},
		{name: "adopt annotation for another pipeline", existing: obj(nil, map[string]string{urutauv1alpha1.AnnotationAdopt: "shop/payments"}, nil, "kubectl"),
			conflict: []string{`hands it to "shop/payments"`}},
		{name: "another team's Service", existing: obj(map[string]string{"app": "checkout"}, nil, nil, "helm", "kubectl-edit"),
			conflict: []string{"Service shop/orders-coordinator already exists and the hub will not take it over",
				"field managers: helm, kubectl-edit", "nothing was written", "urutau.io/adopt=shop/orders"}},
		{name: "no managed fields", existing: obj(nil, nil, nil), conflict: []string{"field managers: none recorded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide("Service", tt.existing, p)
			if len(tt.conflict) > 0 {
				var c *Conflict
				if !errors.As(err, &c) {
					t.Fatalf("decision %+v, err %v; want a Conflict", d, err)
				}
				if c.Object != "Service shop/orders-coordinator" {
					t.Errorf("object = %q", c.Object)
				}
				for _, s := range tt.conflict {
					if !strings.Contains(c.Message, s) {
						t.Errorf("message %q does not contain %q", c.Message, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != tt.want {
				t.Errorf("verdict = %s, want %s", d.Verdict, tt.want)
			}
		})
	}
}
