package failover

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of failover placements (the names are a contract: docs/operations.md).
var (
	failovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_failovers_total",
		Help: "Moves of failover placements, by reason (MemberLost: automatic; Requested: urutau.io/failover-to; CandidateRemoved).",
	}, []string{"reason"})
	failoverReaderGap = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "urutau_fleet_failover_reader_gap_seconds",
		Help:    "How long a pipeline had no reader in a move of a failover placement: from when the member it left was last known answering (or the move was decided) to the coordinator ready on the new member.",
		Buckets: []float64{10, 30, 60, 90, 120, 180, 300, 600, 1200},
	})
)

func init() {
	metrics.Registry.MustRegister(failovers, failoverReaderGap)
}
