// Package inventory is the hub's view of its member clusters: which members exist and the labels
// and annotations of their inventory entries (a kubeconfig Secret or a ClusterProfile on the hub).
// Placement selects over those labels; per-member settings (such as the KEDA Prometheus address)
// are read from them.
//
// The multicluster-runtime provider engages the members; this package only lists the entries, so
// the reconciler never depends on a provider's private state.
package inventory

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Member is one inventory entry.
type Member struct {
	// Name is the member cluster's name, as the provider engages it.
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// Namespace and UID identify the entry object on the hub (events about the member go there).
	Namespace string
	UID       types.UID
}

// Inventory lists member clusters.
type Inventory interface {
	// Members lists every member cluster, sorted by name.
	Members(ctx context.Context) ([]Member, error)
	// EntryType is the kind of hub object that holds one entry. The reconciler watches it so that
	// members joining, leaving or being relabelled re-trigger placement.
	EntryType() client.Object
	// IsEntry tells whether a hub object of EntryType is an inventory entry.
	IsEntry(obj client.Object) bool
}

// KEDAPrometheusAddressKey is the annotation (or label) on an inventory entry that overrides the
// hub's --keda-prometheus-address for that member, because each member usually has its own
// Prometheus. A URL is not a valid label value, so in practice it is an annotation; the label is
// read too so that every setting follows the same rule.
const KEDAPrometheusAddressKey = "urutau.io/keda-prometheus-address"

// Setting returns the per-member setting key: the entry's annotation if set, else its label, else
// "". Annotations win because they can hold any string; labels are for selection.
func (m Member) Setting(key string) string {
	if v, ok := m.Annotations[key]; ok {
		return v
	}
	return m.Labels[key]
}
