package members

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// Label names the member in every per-member metric of the hub. Not "cluster": Thanos, Mimir and
// many Prometheus setups add an external label of that name (the Prometheus the series came
// from), which would overwrite or collide with it.
const Label = "member"

// The metrics of the member connections, registered with controller-runtime's registry so the
// manager serves them. The names are a contract (docs/operations.md, config/monitoring): never
// rename one. Every series of a member is deleted when it leaves the inventory (Set.Forget).
var (
	memberUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_up",
		Help: "1 when the member answered its last health check, 0 when it did not.",
	}, []string{Label})
	memberEngaged = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_engaged",
		Help: "1 when the hub holds a connection to the member (the provider engaged it), 0 otherwise.",
	}, []string{Label})
	memberCredentialsExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "urutau_fleet_member_credentials_expiry_timestamp_seconds",
		Help: "When the token in the member's credentials expires (Unix time), from its entry's urutau.io/credentials-expire-at annotation; no series when the entry has none.",
	}, []string{Label})
	memberPanics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "urutau_fleet_member_panics_total",
		Help: "Panics recovered in the work on one member (each is a bug: the log has its stack).",
	}, []string{Label})
)

func init() {
	metrics.Registry.MustRegister(memberUp, memberEngaged, memberCredentialsExpiry, memberPanics)
}

// forgetSeries deletes every series of member.
func forgetSeries(member string) {
	for _, v := range []*prometheus.GaugeVec{memberUp, memberEngaged, memberCredentialsExpiry} {
		v.DeletePartialMatch(prometheus.Labels{Label: member})
	}
	memberPanics.DeletePartialMatch(prometheus.Labels{Label: member})
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
