package orphans

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/urutau-io/fleet/internal/members"
)

// Event reasons, on the member's inventory entry.
const (
	EventFound   = "OrphansFound"
	EventDeleted = "OrphansDeleted"
)

// The scan's metrics, registered with controller-runtime's registry. The names are a contract
// (docs/operations.md, config/monitoring): never rename one.
var (
	orphansFound = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_orphans",
		Help: "Pipelines (by UID) whose objects a member holds while no ReaderLease records them there.",
	}, []string{members.Label})
	strayPodsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_stray_reader_pods_deleted_total",
		Help: "Coordinator pods no StatefulSet controlled (made by hand, or orphaned), deleted by the hub: each was a reader it did not start.",
	}, []string{members.Label})
)

// ForgetMemberSeries deletes every series of member, which left the inventory.
func ForgetMemberSeries(member string) {
	for _, v := range []*prometheus.MetricVec{orphansFound.MetricVec, strayPodsDeleted.MetricVec} {
		v.DeletePartialMatch(prometheus.Labels{members.Label: member})
	}
}

func init() {
	metrics.Registry.MustRegister(orphansFound, strayPodsDeleted)
}
