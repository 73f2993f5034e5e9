package placement

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

func pipelineWith(pl urutauv1alpha1.Placement, ovs ...urutauv1alpha1.ClusterOverride) *urutauv1alpha1.CDCPipeline {
	p := &urutauv1alpha1.CDCPipeline{}
	p.Spec.Placement = pl
	p.Spec.Overrides = ovs
	return p
}

func TestSelectMembers(t *testing.T) {
	members := []inventory.Member{
		{Name: "a", Labels: map[string]string{"region": "eu", "tier": "gold"}},
		{Name: "b", Labels: map[string]string{"region": "us"}},
		{Name: "c", Labels: map[string]string{"region": "eu"}},
	}
	tests := []struct {
		name    string
		pl      urutauv1alpha1.Placement
		want    []string
		wantErr bool
	}{
		{name: "empty places nowhere", pl: urutauv1alpha1.Placement{}, want: nil},
		{name: "empty selector places nowhere", pl: urutauv1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{}}, want: nil},
		{name: "by names", pl: urutauv1alpha1.Placement{Clusters: []string{"c", "a"}}, want: []string{"a", "c"}},
		{name: "unknown name dropped", pl: urutauv1alpha1.Placement{Clusters: []string{"a", "zz"}}, want: []string{"a"}},
		{name: "by selector", pl: urutauv1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}, want: []string{"a", "c"}},
		{name: "union", pl: urutauv1alpha1.Placement{Clusters: []string{"b"}, ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}, want: []string{"a", "b"}},
		{name: "expression", pl: urutauv1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"eu"}}}}}, want: []string{"b"}},
		{name: "bad selector", pl: urutauv1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Bogus"}}}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SelectMembers(pipelineWith(tt.pl), members)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got := UnknownClusters(pipelineWith(urutauv1alpha1.Placement{Clusters: []string{"zz", "a", "yy"}}), members); !reflect.DeepEqual(got, []string{"yy", "zz"}) {
		t.Fatalf("UnknownClusters = %v", got)
	}
}

func TestOverrideFor(t *testing.T) {
	p := pipelineWith(urutauv1alpha1.Placement{},
		urutauv1alpha1.ClusterOverride{Clusters: []string{"a", "b"}, Image: "img:1", Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "1"}},
		urutauv1alpha1.ClusterOverride{Clusters: []string{"a"}, LogLevel: "debug", Coordinator: &urutauv1alpha1.ResourceOverride{Memory: "2Gi"}},
		urutauv1alpha1.ClusterOverride{Clusters: []string{"a"}, Image: "img:2", Worker: &urutauv1alpha1.ResourceOverride{CPU: "250m"}},
	)
	tests := []struct {
		member string
		want   *urutauv1alpha1.ClusterOverride
	}{
		{member: "c", want: nil},
		{member: "b", want: &urutauv1alpha1.ClusterOverride{Clusters: []string{"b"}, Image: "img:1", Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "1"}}},
		{member: "a", want: &urutauv1alpha1.ClusterOverride{
			Clusters: []string{"a"}, Image: "img:2", LogLevel: "debug",
			Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "1", Memory: "2Gi"},
			Worker:      &urutauv1alpha1.ResourceOverride{CPU: "250m"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.member, func(t *testing.T) {
			if got := OverrideFor(p, tt.member); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	// The spec's own override entries are never modified by merging.
	if p.Spec.Overrides[0].Coordinator.Memory != "" {
		t.Fatal("OverrideFor modified spec.overrides")
	}
}
