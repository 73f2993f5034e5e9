package fleet

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/urutau-io/fleet/internal/fencelease"
	"github.com/urutau-io/fleet/internal/gauges"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/orphans"
)

// Metrics, registered with controller-runtime's registry so the manager serves them. The member
// label (memberLabel) is the member's name: per-member state must be visible (the isolation
// rule). Every series of a member is deleted when it leaves the inventory. The names are a
// contract (docs/operations.md, config/monitoring): never rename one.
// memberLabel names the member in every per-member metric. Not "cluster": Thanos, Mimir and many
// Prometheus setups add an external label of that name (the Prometheus the series came from),
// which would overwrite or collide with it.
const memberLabel = members.Label

var (
	tombstonesWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "urutau_fleet_tombstones_written_total",
		Help: "Tombstones recorded: entries of deleted pipelines kept in a ReaderLease because a member could not be emptied in time.",
	})
	memberHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_held",
		Help: "1 while reconciles skip the member because its earlier requests have not been answered.",
	}, []string{memberLabel})
)

// deleterByLabels is what every labelled metric vector can do.
type deleterByLabels interface {
	DeletePartialMatch(labels prometheus.Labels) int
}

// memberMetrics are the vectors with a member label, dropped for a member that leaves (with
// the ForgetMemberSeries of memberwork, orphans and fencelease).
var memberMetrics = []deleterByLabels{
	memberHeld,
}

// forgetMemberSeries deletes every series of member in memberMetrics.
func forgetMemberSeries(member string) {
	memberwork.ForgetMemberSeries(member)
	orphans.ForgetMemberSeries(member)
	fencelease.ForgetMemberSeries(member)
	gauges.ForgetMemberSeries(member)
	for _, v := range memberMetrics {
		v.DeletePartialMatch(prometheus.Labels{memberLabel: member})
	}
}

func init() {
	metrics.Registry.MustRegister(tombstonesWritten, memberHeld)
}
