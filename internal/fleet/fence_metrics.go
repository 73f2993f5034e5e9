package fleet

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the fence (names are a contract, as in metrics.go; failover's are in
// internal/failover).
var fenceRenewals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "urutau_fleet_fence_renewals_total",
	Help: "Renewals of fence Leases sent to members, by member and result (renewed; unanswered: may still be written; refused: surely not written).",
}, []string{"member", "result"})

func init() {
	metrics.Registry.MustRegister(fenceRenewals)
	memberMetrics = append(memberMetrics, fenceRenewals)
}
