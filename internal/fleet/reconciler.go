package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fencelease"
	"github.com/urutau-io/fleet/internal/hubindex"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// Defaults of the reconciler's settings.
const (
	// DefaultFieldManager is the base of every field manager (docs/architecture.md, "Contracts");
	// the single-cluster operator's default, so a pipeline moving to the fleet keeps the same base.
	DefaultFieldManager = "urutau-operator"
	// ControllerName names the controller (metrics, logs) and the event reporter.
	ControllerName = "urutau-fleet"
	// DefaultMemberTimeout bounds the work on one member in one reconcile.
	DefaultMemberTimeout = 10 * time.Second
	// DefaultTombstoneGrace is how long a deleted pipeline waits for a member to be emptied
	// before leaving a tombstone (its ReaderLease entry) and letting the CR go.
	DefaultTombstoneGrace = 2 * time.Minute
	// DefaultControllerPatience bounds the wait for a member's StatefulSet controller to see a
	// coordinator scaled to zero before the hub deletes it (memberwork.CleanupMember).
	DefaultControllerPatience = memberwork.DefaultControllerPatience
	// DefaultRetryInterval retries missing Secrets and members that do not answer.
	DefaultRetryInterval = 30 * time.Second
	// DefaultWaitInterval polls a departed member until its reader pods are gone.
	DefaultWaitInterval = 5 * time.Second
	// DefaultMaxConcurrentReconciles is the number of pipelines reconciled at once.
	DefaultMaxConcurrentReconciles = 4
	// DefaultLeaseNamespace holds the ReaderLeases on the hub.
	DefaultLeaseNamespace = "urutau-system"
	// DefaultOrphanScanInterval is how often each member's cache is scanned for orphans.
	DefaultOrphanScanInterval = 5 * time.Minute
	// DefaultSecretRecheckInterval is how often a placed pipeline reads its members' Secrets again.
	DefaultSecretRecheckInterval = time.Minute
	// DefaultFenceTTL is how long a fenced coordinator runs after the last renewal it saw.
	DefaultFenceTTL = 30 * time.Second
	// DefaultFenceGrace is how long it has between SIGTERM and SIGKILL.
	DefaultFenceGrace = 15 * time.Second
	// DefaultFenceMargin is what the hub waits beyond the fence's bound: the drift between the
	// hub's and the pod's clock rates over the bound, the fence's loop, and a process's death.
	DefaultFenceMargin = 10 * time.Second
)

// CoordinatorReconciler places CDCPipelines of the hub on member clusters and keeps their
// coordinator workload applied there. Its public shape is the single-cluster operator's
// (Image, Recorder, FieldManager, KEDA settings, Reconcile, SetupWithManager,
// SetupWebhookWithManager), plus what a fleet needs. One reconcile is a short list of phases
// (Reconcile); the work on each member is its own type (memberwork.ApplyJob, memberwork.CleanJob).
type CoordinatorReconciler struct {
	// Client reads and writes the hub. Defaults to the local manager's client.
	Client client.Client
	// APIReader reads the hub's API server itself, for the reads a stale cache must not answer.
	// Defaults to the local manager's.
	APIReader client.Reader
	// Manager reaches member clusters (GetCluster). Set by SetupWithManager when nil.
	Manager mcmanager.Manager
	// Inventory lists member clusters and their labels.
	Inventory inventory.Inventory

	// Image is the default coordinator image (--coordinator-image).
	Image string
	// Recorder emits events on CDCPipelines. Defaults to the local manager's events recorder.
	Recorder events.EventRecorder
	// FieldManager is the base field manager (--field-manager); members get FieldManagerFor.
	FieldManager string
	// KEDAPrometheusAddress turns KEDA on (--keda-prometheus-address); a member's inventory
	// entry may override it with AnnotationKEDAPrometheusAddress.
	KEDAPrometheusAddress string
	// KEDAThreshold is the ScaledObject trigger threshold (--keda-threshold).
	KEDAThreshold string
	// NetworkPolicy renders a NetworkPolicy for each coordinator (--coordinator-network-policy).
	NetworkPolicy bool

	// MemberTimeout bounds the work on one member in one reconcile.
	MemberTimeout time.Duration
	// TombstoneGrace bounds how long a deletion waits on a member before tombstoning it.
	TombstoneGrace time.Duration
	// ControllerPatience bounds the wait for a member's StatefulSet controller to see a
	// coordinator scaled to zero before it is deleted anyway (scaledDown).
	ControllerPatience time.Duration
	// LeaseNamespace holds the ReaderLeases on the hub.
	LeaseNamespace string
	// ReservedNamespaces are the hub's own namespaces (--cluster-provider-namespace,
	// --lease-namespace): no pipeline runs in a namespace of that name, hub or member
	// (tenancy.Boundary.Reserved).
	ReservedNamespaces []string
	// Images are the hub's image rules (--coordinator-image, --allowed-images,
	// --require-image-digests); PlacementPolicies allow more (tenancy.Boundary.Images).
	Images tenancy.ImageSettings
	// AllowWeakPodSecurity places pipelines into member namespaces that enforce less than the Pod
	// Security baseline level (--allow-weak-pod-security).
	AllowWeakPodSecurity bool
	// MaxConcurrentReconciles is per controller (manager-wide options are not applied by
	// multicluster-runtime v0.24.1).
	MaxConcurrentReconciles int
	// RetryInterval retries missing Secrets and members that do not answer.
	RetryInterval time.Duration
	// WaitInterval polls a departed member while its reader pods go away.
	WaitInterval time.Duration
	// HealthInterval is how often each member's health is checked (--member-health-interval);
	// defaults to MemberTimeout, so a member that stops answering shows within twice that.
	HealthInterval time.Duration
	// OrphanScanInterval is how often each member is scanned for orphans (objects of pipelines
	// no ReaderLease records there).
	OrphanScanInterval time.Duration
	// SecretRecheckInterval is how often a placed pipeline reads again, in each member, the
	// Secrets it references (--secret-recheck-interval): Secrets make no event the hub watches. A
	// Secret closed to the fleet stops the coordinator that mounts it, and a source Secret
	// repointed at the database another member reads stops the member that started later.
	SecretRecheckInterval time.Duration
	// DeleteOrphans lets the hub delete orphans in every member (--delete-orphans); a member's
	// inventory entry may allow it for that member alone (AnnotationDeleteOrphans).
	DeleteOrphans bool
	// Refusals says why a member's credentials were refused (internal/credentials), so that a
	// member the provider never engages for that reason says so instead of "not engaged".
	Refusals interface{ Refused(cluster string) error }
	// Liveness follows whether members answer (its Track must be among the provider's REST
	// options); without it, a reconcile waits for a hung member for half of MemberTimeout.
	Liveness *members.Liveness
	// Leader is the leader-election lock (LeaderFence) when the hub runs with leader election:
	// no member is written by a replica whose lease may have passed to another.
	Leader *memberwork.LeaderFence

	// FenceImage holds the fence binary (/fence): the hub's own image (--fence-image). Fenced
	// placements wait, stalled, while it is empty.
	FenceImage string
	// FenceTTL and FenceGrace are the fence's bound (--fence-ttl, --fence-grace): a fenced
	// coordinator runs while its last renewal is younger than FenceTTL and is killed FenceGrace
	// later. FenceMargin is what the hub waits beyond that bound (--fence-margin).
	FenceTTL, FenceGrace, FenceMargin time.Duration

	// The state that outlives one reconcile, all of it described in doc.go.
	members members.Set
	applier ssa.Applier
	shared  memberwork.SharedReads
	leases  lease.Store
	running members.RunningWork
	// render and looks are settings the flags set: how coordinators are rendered, and when a
	// pipeline is looked at again without an event.
	render renderDefaults
	looks  lookIntervals
	// fanOut runs the work of one reconcile on its members; reads are what it reads of them
	// before it decides.
	fanOut fanOut
	reads  memberReads
	// queue is the controller's queue: work that ends late brings its pipeline back through it.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[mcreconcile.Request]]
	// wakeLease has a ReaderLease's tombstone replay run again (tombstones.Reconciler.Requeue).
	wakeLease func(keys ...types.NamespacedName)
	// writes makes the writes to the hub; book keeps what is known of each member.
	writes hubWrites
	book   memberBook
	// tenancy decides the tenancy boundary at reconcile time.
	tenancy hubTenancy
	// lookup finds the pipelines a member, a lease or an inventory change concerns.
	lookup hubindex.Lookup
	// The phases that hold their own dependencies: deleting, placing, applying.
	deletion deletion
	placer   placer
	rollout  rollout
	// fence renews the fence Leases of fenced placements and tells when a member they left is
	// drained by the fence.
	fence *fencelease.Hub
}

// Reconcile brings one hub CDCPipeline's members to its spec, in phases: deletion first, then the
// finalizer, observation of the world, the terminal gate, placement under the reader lease, the
// applies, and the status, written only when it changed.
func (r *CoordinatorReconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	if req.ClusterName != mcmanager.LocalCluster {
		// Member events are mapped to hub requests; nothing else is ours.
		return ctrl.Result{}, nil
	}
	res, err := r.reconcile(ctx, req)
	if errors.Is(err, lease.ErrChanged) {
		// Another writer moved the lease since we read it: decide again on what it wrote.
		ctrl.LoggerFrom(ctx).V(1).Info("reader lease changed; reconciling again", "reason", err.Error())
		return ctrl.Result{RequeueAfter: lookAgainAfter}, nil
	}
	if again := r.writes.again(req.NamespacedName); again && err == nil && (res.RequeueAfter <= 0 || res.RequeueAfter > lookAgainAfter) {
		// A change by someone else crossed one of our writes (ssa.EchoFilter): see it now.
		res.RequeueAfter = lookAgainAfter
	}
	return res, err
}

// lookAgainAfter is how soon a pipeline is reconciled again when a change by someone else
// crossed one of our writes to it, or won a race for its lease.
const lookAgainAfter = 10 * time.Millisecond

func (r *CoordinatorReconciler) reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	p, err := r.fetch(ctx, req.NamespacedName)
	if p == nil || err != nil {
		return ctrl.Result{}, err
	}
	if err := r.prepare(ctx, p); err != nil {
		return ctrl.Result{}, err
	}
	orig := p.DeepCopy()
	res, err := r.phases(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !p.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(p, urutauv1alpha1.Finalizer) {
		return res, nil // the pipeline is gone, or about to be: there is no status to write
	}
	// The reconcile's one status write: what its phases set, when it changed (idle is quiet).
	if err := r.writes.status(ctx, orig, p, false); err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// prepare makes the writes that come before the phases: the finalizer, before anything is
// written to a member, and clearing a termination the spec moved past.
func (r *CoordinatorReconciler) prepare(ctx context.Context, p *urutauv1alpha1.CDCPipeline) error {
	if !p.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.ensureFinalizer(ctx, p); err != nil {
		return err
	}
	return r.clearPassedTermination(ctx, p)
}

// phases are the reconcile's work over p; they set its status, and reconcile writes it.
func (r *CoordinatorReconciler) phases(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (ctrl.Result, error) {
	if !p.DeletionTimestamp.IsZero() {
		return r.deletion.run(ctx, p)
	}
	w, err := r.observe(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.gate(p, w) {
		return ctrl.Result{}, nil
	}
	plan, err := r.placer.place(ctx, p, w)
	if err != nil {
		return ctrl.Result{}, err
	}
	results := r.rollout.all(ctx, p, w, plan)
	return r.report(ctx, p, w, plan, results), nil
}

// fetch reads the pipeline; nil when it is gone (what is kept about it is dropped).
func (r *CoordinatorReconciler) fetch(ctx context.Context, key types.NamespacedName) (*urutauv1alpha1.CDCPipeline, error) {
	p := &urutauv1alpha1.CDCPipeline{}
	if err := r.Client.Get(ctx, key, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.book.backoff.ForgetPipeline(key)
			r.writes.pipelineEchoes.Forget(key.String())
			return nil, nil
		}
		return nil, err
	}
	return p, nil
}

// ensureFinalizer adds the finalizer before anything is written to a member.
func (r *CoordinatorReconciler) ensureFinalizer(ctx context.Context, p *urutauv1alpha1.CDCPipeline) error {
	if controllerutil.ContainsFinalizer(p, urutauv1alpha1.Finalizer) {
		return nil
	}
	orig := p.DeepCopy()
	controllerutil.AddFinalizer(p, urutauv1alpha1.Finalizer)
	if err := r.writes.patch(ctx, orig, p); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	return nil
}

// wake brings back the reconciles of keys, each in its own controller's queue.
func (r *CoordinatorReconciler) wake(keys ...members.WakeKey) {
	for _, k := range keys {
		switch {
		case !k.Lease:
			r.requeue(k.NamespacedName)
		case r.wakeLease != nil:
			r.wakeLease(k.NamespacedName)
		}
	}
}

// requeue has pipelines reconciled again.
func (r *CoordinatorReconciler) requeue(keys ...types.NamespacedName) {
	q := r.queue.Load()
	if q == nil {
		return
	}
	for _, k := range keys {
		(*q).Add(mcreconcile.Request{Request: reconcile.Request{NamespacedName: k}, ClusterName: mcmanager.LocalCluster})
	}
}

// nowRFC3339 is a terminated.at value.
func nowRFC3339() string { return time.Now().UTC().Format(time.RFC3339) }

// fanOut builds members.FanOut's options for the reconcile of a key (a pipeline, or a lease's
// tombstone replay): work on a member starts only where none of that key's runs, a member whose
// work the reconcile stops waiting for is slow (members.Breaker), and work that ends late brings
// the key back, with the reconciles that skipped the member meanwhile, each in its own controller
// (wake).
type fanOut struct {
	members  *members.Set
	running  *members.RunningWork
	liveness *members.Liveness
	// timeout bounds the work on one member in one reconcile.
	timeout time.Duration
	wake    func(keys ...members.WakeKey)
}

// options are the options of key's work, named what in logs and errors.
func (f *fanOut) options(key members.WakeKey, what string) members.FanOutOptions {
	work := func(m string) members.WorkKey {
		return members.WorkKey{Pipeline: key.NamespacedName, Member: m, Lease: key.Lease}
	}
	return members.FanOutOptions{
		What:     what,
		Timeout:  f.timeout,
		Patience: f.timeout / 2,
		Start: func(m string) bool {
			return !f.members.Breaker.Skip(m, key) && f.running.Begin(work(m))
		},
		Slow: func(m string) {
			f.members.Breaker.MarkSlow(m)
			memberHeld.WithLabelValues(m).Set(1)
		},
		GiveUp: func(m string, begun time.Time) bool {
			return f.members.Breaker.IsSlow(m) || f.liveness.Silent(f.members.Host(m), begun, time.Now()) >= members.Silence
		},
		End: func(m string, late bool) {
			f.running.End(work(m))
			if late {
				memberHeld.WithLabelValues(m).Set(0)
				f.wake(append(f.members.Breaker.Settle(m), key)...)
			}
		},
	}
}
