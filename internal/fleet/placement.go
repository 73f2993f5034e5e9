package fleet

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fleet/inventory"
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

// ConfirmedGone is the set of members a person confirmed gone with the annotation
// urutau.io/confirm-cluster-gone: "<name>[,<name>...]" on the CDCPipeline.
func ConfirmedGone(p *urutauv1alpha1.CDCPipeline) sets.Set[string] {
	out := sets.New[string]()
	for _, n := range strings.Split(p.Annotations[urutauv1alpha1.AnnotationConfirmGone], ",") {
		if n = strings.TrimSpace(n); n != "" {
			out.Insert(n)
		}
	}
	return out
}

// DepartedState is what a departed member (in status.inventory, no longer selected) holds after
// this reconcile's cleanup pass.
type DepartedState int

const (
	// DepartedHolding: the coordinator StatefulSet or a coordinator pod is still there. It is the
	// zero value, so a member nobody observed is treated as the unsafe case.
	DepartedHolding DepartedState = iota
	// DepartedDraining: no coordinator left, but other objects of the pipeline remain (e.g. a
	// ScaledObject waiting on KEDA's finalizer). It no longer blocks a move.
	DepartedDraining
	// DepartedEmpty: nothing of the pipeline is left; the member leaves status.inventory.
	DepartedEmpty
	// DepartedUnreachable: the member did not answer.
	DepartedUnreachable
)

// MoveInput is what PlanMove decides from.
type MoveInput struct {
	// Selected are the members the placement selects now.
	Selected []string
	// Inventory is status.inventory: members that hold, or may hold, objects of the pipeline.
	Inventory []string
	// Departed is the observed state of each member in Inventory but not in Selected.
	Departed map[string]DepartedState
	// ConfirmedGone are members a person confirmed gone.
	ConfirmedGone sets.Set[string]
}

// MovePlan says what to do with each member this reconcile. Every list is sorted.
type MovePlan struct {
	// Apply: selected members to render and apply now.
	Apply []string
	// Wait: newly selected members that must not start while a departed member may still run
	// the coordinator (stop before start).
	Wait []string
	// Removing: departed members still being emptied.
	Removing []string
	// BlockedBy: departed members that did not answer and nobody confirmed gone; they hold the
	// move.
	BlockedBy []string
	// Tombstone: departed members that did not answer but a person confirmed gone: record a
	// tombstone, then drop them.
	Tombstone []string
	// Drop: members that leave status.inventory (verified empty, or tombstoned).
	Drop []string
}

// Blocked reports whether newly selected members must wait.
func (m MovePlan) Blocked() bool { return len(m.Wait) > 0 }

// PlanMove is the stop-before-start decision. Members that stay selected are applied whatever
// happens elsewhere. A newly selected member (not yet in the inventory) is applied only when no
// departed member may still run the coordinator: one holding it, or one that does not answer and
// has not been confirmed gone. Adding a member with nothing departed needs no wait.
func PlanMove(in MoveInput) MovePlan {
	selected := sets.New(in.Selected...)
	inv := sets.New(in.Inventory...)
	var plan MovePlan
	block := false
	for _, d := range sets.List(inv.Difference(selected)) {
		switch in.Departed[d] {
		case DepartedEmpty:
			plan.Drop = append(plan.Drop, d)
		case DepartedDraining:
			plan.Removing = append(plan.Removing, d)
		case DepartedUnreachable:
			if in.ConfirmedGone.Has(d) {
				plan.Tombstone = append(plan.Tombstone, d)
				plan.Drop = append(plan.Drop, d)
				continue
			}
			plan.BlockedBy = append(plan.BlockedBy, d)
			block = true
		default:
			plan.Removing = append(plan.Removing, d)
			block = true
		}
	}
	for _, s := range sets.List(selected) {
		if !inv.Has(s) && block {
			plan.Wait = append(plan.Wait, s)
			continue
		}
		plan.Apply = append(plan.Apply, s)
	}
	return plan
}
