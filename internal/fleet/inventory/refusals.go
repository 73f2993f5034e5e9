package inventory

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/urutau-io/fleet/internal/credentials"
)

// EventCredentialsRefused is the event reason on an inventory entry (kubeconfig Secret or
// ClusterProfile) whose credentials the hub refused; the note says why.
const EventCredentialsRefused = "CredentialsRefused"

var credentialsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "urutau_fleet_member_credentials_refused_total",
	Help: "Member credentials (kubeconfig Secrets, ClusterProfiles) the hub refused to use, by cluster and reason (exec, file-path, proxy, insecure-tls, ...).",
}, []string{"cluster", "reason"})

func init() {
	metrics.Registry.MustRegister(credentialsRefused)
}

// Refusals records the members whose credentials were refused: an event on the entry, the metric,
// and the last refusal per member so that the reconciler can report it. One Refusals is shared by
// the provider (which writes) and the reconciler (which reads). The zero value records no events.
type Refusals struct {
	// Recorder emits the events; nil emits none.
	Recorder events.EventRecorder

	mu      sync.RWMutex
	refused map[string]error
}

// Refuse records that the credentials of member cluster, read from entry, were refused with err.
func (r *Refusals) Refuse(entry runtime.Object, cluster string, err error) {
	reason := credentials.ReasonOf(err)
	if reason == "" {
		reason = "invalid"
	}
	credentialsRefused.WithLabelValues(cluster, string(reason)).Inc()
	r.mu.Lock()
	if r.refused == nil {
		r.refused = map[string]error{}
	}
	r.refused[cluster] = err
	r.mu.Unlock()
	if r.Recorder != nil && entry != nil {
		r.Recorder.Eventf(entry, nil, corev1.EventTypeWarning, EventCredentialsRefused, "Engage",
			"credentials of member %q refused (%s): %s; the hub does not connect to it until they change", cluster, reason, err.Error())
	}
}

// Accept forgets a refusal of member cluster: its credentials changed and passed.
func (r *Refusals) Accept(cluster string) {
	r.mu.Lock()
	delete(r.refused, cluster)
	r.mu.Unlock()
}

// Refused returns the last refusal of member cluster's credentials, nil when they were not refused
// (or not seen yet). The reconciler shows it in the member's status instead of "not engaged".
func (r *Refusals) Refused(cluster string) error {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.refused[cluster]
}
