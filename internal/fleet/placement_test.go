package fleet

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fleet/inventory"
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

func TestConfirmedGone(t *testing.T) {
	p := &urutauv1alpha1.CDCPipeline{}
	p.Annotations = map[string]string{urutauv1alpha1.AnnotationConfirmGone: " a, ,b "}
	if got := ConfirmedGone(p); !got.Equal(sets.New("a", "b")) {
		t.Fatalf("got %v", sets.List(got))
	}
}

func TestPlanMove(t *testing.T) {
	tests := []struct {
		name string
		in   MoveInput
		want MovePlan
	}{
		{
			name: "first placement",
			in:   MoveInput{Selected: []string{"a", "b"}},
			want: MovePlan{Apply: []string{"a", "b"}},
		},
		{
			name: "add a member, nothing departed: no wait",
			in:   MoveInput{Selected: []string{"a", "b"}, Inventory: []string{"a"}},
			want: MovePlan{Apply: []string{"a", "b"}},
		},
		{
			name: "move a->b while a holds the coordinator: b waits",
			in:   MoveInput{Selected: []string{"b"}, Inventory: []string{"a"}, Departed: map[string]DepartedState{"a": DepartedHolding}},
			want: MovePlan{Wait: []string{"b"}, Removing: []string{"a"}},
		},
		{
			name: "unobserved departed member is treated as holding",
			in:   MoveInput{Selected: []string{"b"}, Inventory: []string{"a"}},
			want: MovePlan{Wait: []string{"b"}, Removing: []string{"a"}},
		},
		{
			name: "move a->b once a is empty",
			in:   MoveInput{Selected: []string{"b"}, Inventory: []string{"a"}, Departed: map[string]DepartedState{"a": DepartedEmpty}},
			want: MovePlan{Apply: []string{"b"}, Drop: []string{"a"}},
		},
		{
			name: "draining departed member no longer blocks",
			in:   MoveInput{Selected: []string{"b"}, Inventory: []string{"a"}, Departed: map[string]DepartedState{"a": DepartedDraining}},
			want: MovePlan{Apply: []string{"b"}, Removing: []string{"a"}},
		},
		{
			name: "unreachable departed member blocks the move",
			in:   MoveInput{Selected: []string{"b"}, Inventory: []string{"a"}, Departed: map[string]DepartedState{"a": DepartedUnreachable}},
			want: MovePlan{Wait: []string{"b"}, BlockedBy: []string{"a"}},
		},
		{
			name: "unreachable but confirmed gone: tombstone, drop, proceed",
			in: MoveInput{Selected: []string{"b"}, Inventory: []string{"a"}, Departed: map[string]DepartedState{"a": DepartedUnreachable},
				ConfirmedGone: sets.New("a")},
			want: MovePlan{Apply: []string{"b"}, Tombstone: []string{"a"}, Drop: []string{"a"}},
		},
		{
			name: "confirmation does not override a member that answers and still holds",
			in: MoveInput{Selected: []string{"b"}, Inventory: []string{"a"}, Departed: map[string]DepartedState{"a": DepartedHolding},
				ConfirmedGone: sets.New("a")},
			want: MovePlan{Wait: []string{"b"}, Removing: []string{"a"}},
		},
		{
			name: "members that stay are applied during a move",
			in:   MoveInput{Selected: []string{"b", "c"}, Inventory: []string{"a", "c"}, Departed: map[string]DepartedState{"a": DepartedHolding}},
			want: MovePlan{Apply: []string{"c"}, Wait: []string{"b"}, Removing: []string{"a"}},
		},
		{
			name: "placed nowhere: everything departs",
			in:   MoveInput{Inventory: []string{"a", "b"}, Departed: map[string]DepartedState{"a": DepartedEmpty, "b": DepartedHolding}},
			want: MovePlan{Removing: []string{"b"}, Drop: []string{"a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlanMove(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
