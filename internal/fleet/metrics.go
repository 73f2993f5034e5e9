package fleet

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics, registered with controller-runtime's registry so the manager serves them. The cluster
// label is the member's name: per-member state must be visible (the isolation rule).
var (
	memberDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "urutau_fleet_member_reconcile_duration_seconds",
		Help:    "Time spent on one member in one reconcile (apply or cleanup), by cluster.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"cluster"})
	memberErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_member_errors_total",
		Help: "Member reconciles that failed, by cluster and kind of failure (unreachable, error).",
	}, []string{"cluster", "reason"})
	applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_applies_total",
		Help: "Server-Side Apply requests sent to members, by cluster and kind.",
	}, []string{"cluster", "kind"})
	noopApplies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_noop_applies_skipped_total",
		Help: "Applies not sent because they would change nothing, by cluster and kind.",
	}, []string{"cluster", "kind"})
	tombstonesWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "urutau_fleet_tombstones_written_total",
		Help: "Tombstones recorded for members that could not be cleaned in time.",
	})
)

func init() {
	metrics.Registry.MustRegister(memberDuration, memberErrors, applies, noopApplies, tombstonesWritten)
}
