package placement

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// SelectMembers resolves spec.placement against the inventory: the union of the named clusters
// and the clusters whose inventory labels match clusterSelector, sorted. Only members present in
// the inventory are returned (UnknownClusters reports the other names). An empty placement
// selects nothing, never everything. The error is a selector that does not parse: a spec error.
func SelectMembers(p *urutauv1alpha1.CDCPipeline, members []inventory.Member) ([]string, error) {
	pl := p.Spec.Placement
	named := sets.New(pl.Clusters...)
	var sel labels.Selector
	if pl.ClusterSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(pl.ClusterSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.placement.clusterSelector: %w", err)
		}
		// An empty selector ({}) would match every member: placement never means "everywhere".
		if !s.Empty() {
			sel = s
		}
	}
	out := sets.New[string]()
	for _, m := range members {
		if named.Has(m.Name) || (sel != nil && sel.Matches(labels.Set(m.Labels))) {
			out.Insert(m.Name)
		}
	}
	return sets.List(out), nil
}

// UnknownClusters are the names in spec.placement.clusters that the inventory does not hold,
// sorted. They are reported, not placed on.
func UnknownClusters(p *urutauv1alpha1.CDCPipeline, members []inventory.Member) []string {
	known := sets.New[string]()
	for _, m := range members {
		known.Insert(m.Name)
	}
	return sets.List(sets.New(p.Spec.Placement.Clusters...).Difference(known))
}

// OverrideFor merges, in order, every spec.overrides entry that names member: later entries win
// field by field. It is nil when no entry names member.
func OverrideFor(p *urutauv1alpha1.CDCPipeline, member string) *urutauv1alpha1.ClusterOverride {
	var out *urutauv1alpha1.ClusterOverride
	for i := range p.Spec.Overrides {
		o := &p.Spec.Overrides[i]
		if !slices.Contains(o.Clusters, member) {
			continue
		}
		if out == nil {
			out = &urutauv1alpha1.ClusterOverride{Clusters: []string{member}}
		}
		if o.Image != "" {
			out.Image = o.Image
		}
		if o.LogLevel != "" {
			out.LogLevel = o.LogLevel
		}
		out.Coordinator = mergeResources(out.Coordinator, o.Coordinator)
		out.Worker = mergeResources(out.Worker, o.Worker)
	}
	return out
}

func mergeResources(into, from *urutauv1alpha1.ResourceOverride) *urutauv1alpha1.ResourceOverride {
	if from == nil {
		return into
	}
	if into == nil {
		into = &urutauv1alpha1.ResourceOverride{}
	}
	if from.CPU != "" {
		into.CPU = from.CPU
	}
	if from.Memory != "" {
		into.Memory = from.Memory
	}
	return into
}
