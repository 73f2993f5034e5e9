package inventory

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/urutau-io/fleet/internal/credentials"
)

// EventCredentialsRefused is the event reason on an inventory entry (kubeconfig Secret or
// ClusterProfile) whose credentials the hub refused; the note says why.
const EventCredentialsRefused = "CredentialsRefused"

var credentialsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "urutau_fleet_member_credentials_refused_total",
	Help: "Member credentials (kubeconfig Secrets, ClusterProfiles) the hub refused to use, by member and reason (exec, file-path, proxy, insecure-tls, ...).",
}, []string{"member", "reason"})

func init() {
	metrics.Registry.MustRegister(credentialsRefused)
}

// Refusals records the members whose credentials were refused: an event on the entry, the metric,
// a line in the hub's log, and the last refusal per member so that the reconciler can report it.
// One Refusals is shared by the provider (which writes) and the reconciler (which reads). The zero
// value records no events.
//
// Two texts per refusal: the detail (the refusal's own message: which kubeconfig entry, which
// field, why; redacted by internal/credentials, never a credential) goes to the event on the
// inventory entry, which only the platform admin reads, and to the hub's log; tenants, who read
// the status and Events of their pipelines, get only credentials.PublicMessage (Refused).
type Refusals struct {
	// Recorder emits the events; nil emits none.
	Recorder events.EventRecorder

	mu      sync.RWMutex
	refused map[string]error
}

var refusalLog = ctrl.Log.WithName("member-credentials")

// Refuse records that the credentials of member cluster, read from entry, were refused with err.
func (r *Refusals) Refuse(entry runtime.Object, cluster string, err error) {
	if r == nil {
		return
	}
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
	refusalLog.Info("Member credentials refused; the hub does not connect to the member until they change",
		"cluster", cluster, "reason", string(reason), "detail", err.Error())
	if r.Recorder != nil && entry != nil {
		r.Recorder.Eventf(entry, nil, corev1.EventTypeWarning, EventCredentialsRefused, "Engage",
			"credentials of member %q refused (%s): %s; the hub does not connect to it until they change", cluster, reason, err.Error())
	}
}

// Accept forgets a refusal of member cluster: its credentials changed and passed.
func (r *Refusals) Accept(cluster string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.refused, cluster)
	r.mu.Unlock()
}

// Refused returns the last refusal of member cluster's credentials, nil when they were not refused
// (or not seen yet). The reconciler shows it in the member's status instead of "not engaged".
//
// Its text (Error) is what a tenant may read: the reason and a fixed sentence
// (credentials.PublicMessage), nothing of the credentials or the entry. The detail, for the
// hub's log, is the error it wraps (errors.Unwrap, or errors.As to *credentials.Refusal).
func (r *Refusals) Refused(cluster string) error {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if err := r.refused[cluster]; err != nil {
		return &PublicRefusal{Reason: credentials.ReasonOf(err), detail: err}
	}
	return nil
}

// PublicRefusal is a refusal of a member's credentials as tenants may see it: Error is
// credentials.PublicMessage of Reason; Unwrap is the detail for the hub's log.
type PublicRefusal struct {
	Reason credentials.Reason
	detail error
}

func (p *PublicRefusal) Error() string { return credentials.PublicMessage(p.Reason) }

// Unwrap is the refusal's detail: for the platform admin and the hub's log only.
func (p *PublicRefusal) Unwrap() error { return p.detail }
