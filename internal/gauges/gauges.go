package gauges

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/status"
)

// Gauges recomputes, every few seconds, the gauges that summarise the hub's objects: pipelines by
// Ready status, placements per member by phase, pipelines waiting for a reader lease, and
// tombstones pending. They are read from the hub's cache (no request), so they are never out of
// step with what the status says, and nothing has to remember to update them.
type Gauges struct {
	// Hub is the hub's cache; LeaseNamespace holds the ReaderLeases.
	Hub            client.Reader
	LeaseNamespace string
}

// refresh sets the gauges from the cache.
func (g *Gauges) refresh(ctx context.Context) error {
	pipelines := &urutauv1alpha1.CDCPipelineList{}
	if err := g.Hub.List(ctx, pipelines); err != nil {
		return err
	}
	leases := &urutauv1alpha1.ReaderLeaseList{}
	if err := g.Hub.List(ctx, leases, client.InNamespace(g.LeaseNamespace)); err != nil {
		return err
	}
	live := map[types.UID]bool{}
	ready := map[string]float64{"True": 0, "False": 0, "Unknown": 0}
	perMember := map[[2]string]float64{}
	waits := 0.0
	for _, p := range pipelines.Items {
		live[p.UID] = true
		ready[readyStatus(&p)]++
		if c := meta.FindStatusCondition(p.Status.Conditions, status.ConditionReaderLease); c != nil && c.Status == "False" {
			waits++
		}
		for _, c := range p.Status.Clusters {
			perMember[[2]string{c.Name, string(c.Phase)}]++
		}
	}
	pending := 0.0
	for _, l := range leases.Items {
		for _, e := range l.Spec.Members {
			if !live[e.PipelineUID] {
				pending++
			}
		}
	}
	for s, n := range ready {
		pipelinesByReady.WithLabelValues(s).Set(n)
	}
	memberPipelines.Reset()
	for k, n := range perMember {
		memberPipelines.WithLabelValues(k[0], k[1]).Set(n)
	}
	leaseWaits.Set(waits)
	tombstonesPending.Set(pending)
	return nil
}

func readyStatus(p *urutauv1alpha1.CDCPipeline) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, urutauv1alpha1.ConditionReady); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}

// Start refreshes the gauges every interval until ctx ends (a manager Runnable; every replica
// runs it, so a standby's gauges are ready when it takes over).
func (g *Gauges) Start(ctx context.Context) error {
	t := time.NewTicker(gaugeInterval)
	defer t.Stop()
	for {
		_ = g.refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection: the gauges read the cache only.
func (g *Gauges) NeedLeaderElection() bool { return false }

// gaugeInterval is how often the summary gauges are recomputed: a few seconds behind the status
// at most, for a cost of two cache lists.
const gaugeInterval = 5 * time.Second

// The gauges' metrics, registered with controller-runtime's registry so the manager serves them.
// The names are a contract (docs/operations.md, config/monitoring): never rename one.
var (
	memberPipelines = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_pipelines",
		Help: "Pipelines placed on (or being removed from) the member, by phase.",
	}, []string{members.Label, "phase"})
	tombstonesPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "urutau_fleet_tombstones_pending",
		Help: "ReaderLease entries of deleted pipelines waiting for their member to be emptied.",
	})
	leaseWaits = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "urutau_fleet_reader_lease_waits",
		Help: "Pipelines waiting for their source's reader lease (another pipeline, or a departed member, may still run a reader).",
	})
	pipelinesByReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_pipelines",
		Help: "Pipelines of the hub by the status of their Ready condition (True, False, Unknown).",
	}, []string{"ready"})
)

// ForgetMemberSeries deletes the series of member (the next refresh would, a few seconds later).
func ForgetMemberSeries(member string) {
	memberPipelines.DeletePartialMatch(prometheus.Labels{members.Label: member})
}

func init() {
	metrics.Registry.MustRegister(memberPipelines, tombstonesPending, leaseWaits, pipelinesByReady)
}
