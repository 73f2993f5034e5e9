package ssa

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_applies_total",
		Help: "Server-Side Apply requests sent to members, by member and kind.",
	}, []string{"member", "kind"})
	noopApplies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_noop_applies_skipped_total",
		Help: "Applies not sent because they would change nothing, by member and kind.",
	}, []string{"member", "kind"})
)

func init() {
	metrics.Registry.MustRegister(applies, noopApplies)
}

// ForgetMemberSeries drops the series of member, a member that left the inventory.
func ForgetMemberSeries(member string) {
	for _, v := range []*prometheus.CounterVec{applies, noopApplies} {
		v.DeletePartialMatch(prometheus.Labels{"member": member})
	}
}
