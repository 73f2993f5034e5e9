package fleet

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// Metrics, registered with controller-runtime's registry so the manager serves them. The member
// label (memberLabel) is the member's name: per-member state must be visible (the isolation
// rule). Every series of a member is deleted when it leaves the inventory. The names are a
// contract (docs/operations.md, config/monitoring): never rename one.
// memberLabel names the member in every per-member metric. Not "cluster": Thanos, Mimir and many
// Prometheus setups add an external label of that name (the Prometheus the series came from),
// which would overwrite or collide with it.
const memberLabel = "member"

var (
	memberDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "urutau_fleet_member_reconcile_duration_seconds",
		Help:    "Time spent on one member in one reconcile (apply or cleanup), by member.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{memberLabel})
	memberErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_member_errors_total",
		Help: "Member reconciles that failed, by member and kind of failure (unreachable, error).",
	}, []string{memberLabel, "reason"})
	tombstonesWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "urutau_fleet_tombstones_written_total",
		Help: "Tombstones recorded: entries of deleted pipelines kept in a ReaderLease because a member could not be emptied in time.",
	})
	memberUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_up",
		Help: "1 when the member answered its last health check, 0 when it did not.",
	}, []string{memberLabel})
	memberEngaged = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_engaged",
		Help: "1 when the hub holds a connection to the member (the provider engaged it), 0 otherwise.",
	}, []string{memberLabel})
	memberHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_held",
		Help: "1 while reconciles skip the member because its earlier requests have not been answered.",
	}, []string{memberLabel})
	memberPipelines = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_pipelines",
		Help: "Pipelines placed on (or being removed from) the member, by phase.",
	}, []string{memberLabel, "phase"})
	memberCredentialsExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_credentials_expiry_timestamp_seconds",
		Help: "When the token in the member's credentials expires (Unix time), from its entry's urutau.io/credentials-expire-at annotation; no series when the entry has none.",
	}, []string{memberLabel})
	memberPanics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_member_panics_total",
		Help: "Panics recovered in the work on one member (each is a bug: the log has its stack).",
	}, []string{memberLabel})
	orphans = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_orphans",
		Help: "Pipelines (by UID) whose objects a member holds while no ReaderLease records them there.",
	}, []string{memberLabel})
	strayPodsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_stray_reader_pods_deleted_total",
		Help: "Coordinator pods no StatefulSet controlled (made by hand, or orphaned), deleted by the hub: each was a reader it did not start.",
	}, []string{memberLabel})
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

// deleterByLabels is what every labelled metric vector can do.
type deleterByLabels interface {
	DeletePartialMatch(labels prometheus.Labels) int
}

// memberMetrics are the vectors with a cluster label, dropped for a member that leaves.
var memberMetrics = []deleterByLabels{
	memberDuration, memberErrors, memberUp, memberEngaged, memberHeld,
	memberPipelines, memberPanics, orphans, memberCredentialsExpiry, strayPodsDeleted,
}

func init() {
	metrics.Registry.MustRegister(memberDuration, memberErrors, tombstonesWritten,
		memberUp, memberEngaged, memberHeld, memberPipelines, memberPanics, orphans, tombstonesPending,
		leaseWaits, pipelinesByReady, memberCredentialsExpiry, strayPodsDeleted)
}

// recordCredentialsExpiry exports when m's credentials expire, as its entry says; an entry that
// says nothing, or nothing readable, has no series (an alert on the expiry must not fire on it).
func recordCredentialsExpiry(m inventory.Member) {
	at, err := time.Parse(time.RFC3339, m.Annotations[urutauv1alpha1.AnnotationCredentialsExpireAt])
	if err != nil {
		memberCredentialsExpiry.DeleteLabelValues(m.Name)
		return
	}
	memberCredentialsExpiry.WithLabelValues(m.Name).Set(float64(at.Unix()))
}
