package memberwork

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/urutau-io/fleet/internal/members"
)

// The member jobs' metrics, registered with controller-runtime's registry so the hub's manager
// serves them. Their names are a contract (docs/operations.md, config/monitoring): never rename
// one. The member label is members.Label.
var (
	memberDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "urutau_fleet_member_reconcile_duration_seconds",
		Help:    "Time spent on one member in one reconcile (apply or cleanup), by member.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{members.Label})
	memberErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_member_errors_total",
		Help: "Member reconciles that failed, by member and kind of failure (unreachable, error).",
	}, []string{members.Label, "reason"})
)

// ForgetMemberSeries deletes every series of member: it left the inventory.
func ForgetMemberSeries(member string) {
	for _, v := range []*prometheus.MetricVec{memberDuration.MetricVec, memberErrors.MetricVec} {
		v.DeletePartialMatch(prometheus.Labels{members.Label: member})
	}
}

func init() {
	metrics.Registry.MustRegister(memberDuration, memberErrors)
}
