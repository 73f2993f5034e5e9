package fencelease

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/urutau-io/fleet/internal/members"
)

// renewals counts the renewals sent (the name is a contract: docs/operations.md).
var renewals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "urutau_fleet_fence_renewals_total",
	Help: "Renewals of fence Leases sent to members, by member and result (renewed; unanswered: may still be written; refused: surely not written).",
}, []string{members.Label, "result"})

// ForgetMemberSeries deletes every series of member, which left the inventory.
func ForgetMemberSeries(member string) {
	renewals.DeletePartialMatch(prometheus.Labels{members.Label: member})
}

func init() {
	metrics.Registry.MustRegister(renewals)
}
