package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fencelease"
	"github.com/urutau-io/fleet/internal/gauges"
	"github.com/urutau-io/fleet/internal/hubindex"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/membercache"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/orphans"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/tenancy"
	"github.com/urutau-io/fleet/internal/tombstones"
	"github.com/urutau-io/fleet/internal/webhook"
)

// The hub's RBAC markers are all in rbac.go.

func (r *CoordinatorReconciler) setDefaults(mgr mcmanager.Manager) {
	if r.Manager == nil {
		r.Manager = mgr
	}
	local := mgr.GetLocalManager()
	if r.Client == nil {
		r.Client = local.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = local.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = local.GetEventRecorder(ControllerName)
	}
	if r.FieldManager == "" {
		r.FieldManager = DefaultFieldManager
	}
	r.MemberTimeout = orDefault(r.MemberTimeout, DefaultMemberTimeout)
	r.TombstoneGrace = orDefault(r.TombstoneGrace, DefaultTombstoneGrace)
	r.ControllerPatience = orDefault(r.ControllerPatience, DefaultControllerPatience)
	r.RetryInterval = orDefault(r.RetryInterval, DefaultRetryInterval)
	r.WaitInterval = orDefault(r.WaitInterval, DefaultWaitInterval)
	r.HealthInterval = orDefault(r.HealthInterval, r.MemberTimeout)
	r.OrphanScanInterval = orDefault(r.OrphanScanInterval, DefaultOrphanScanInterval)
	r.SecretRecheckInterval = orDefault(r.SecretRecheckInterval, DefaultSecretRecheckInterval)
	if r.LeaseNamespace == "" {
		r.LeaseNamespace = DefaultLeaseNamespace
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	r.members.Manager = mgr
	r.members.Refusals = r.Refusals
	r.members.Liveness = r.Liveness
	r.members.Writer = func(c client.Client, cfg *rest.Config, opts client.Options) client.Client {
		return ssa.NewMemberClient(c, cfg, opts.HTTPClient, opts.Scheme, opts.Mapper)
	}
	r.applier.Base = r.FieldManager
	r.shared.Window = memberwork.DefaultSharedReadWindow
	r.leases = lease.Store{Client: r.Client, Live: r.APIReader, Namespace: r.LeaseNamespace, Owner: r.FieldManager}
	r.lookup = hubindex.Lookup{Hub: r.Client, LeaseNamespace: r.LeaseNamespace}
	r.FenceTTL = orDefault(r.FenceTTL, DefaultFenceTTL)
	r.FenceGrace = orDefault(r.FenceGrace, DefaultFenceGrace)
	r.FenceMargin = orDefault(r.FenceMargin, DefaultFenceMargin)
	r.fanOut = fanOut{members: &r.members, running: &r.running, liveness: r.Liveness, timeout: r.MemberTimeout, wake: r.wake}
	r.reads = memberReads{members: &r.members, fanOut: &r.fanOut}
	r.fence = fencelease.NewHub(fencelease.HubOptions{
		Config:  fencelease.Config{Image: r.FenceImage, TTL: r.FenceTTL, Grace: r.FenceGrace, Margin: r.FenceMargin},
		Members: &r.members, Leader: r.Leader, FieldManager: r.FieldManager, MemberTimeout: r.MemberTimeout,
		Leases: r.APIReader, LeaseNamespace: r.LeaseNamespace,
	})
	r.render = renderDefaults{image: r.Image, kedaAddress: r.KEDAPrometheusAddress, kedaThreshold: r.KEDAThreshold,
		networkPolicy: r.NetworkPolicy, fence: r.fence.Config()}
	r.looks = lookIntervals{retry: r.RetryInterval, wait: r.WaitInterval, secretRecheck: r.SecretRecheckInterval}
	r.tenancy = hubTenancy{cache: r.Client, flags: tenancy.Boundary{Reserved: r.ReservedNamespaces, Images: r.Images, AllowWeakPodSecurity: r.AllowWeakPodSecurity}}
	r.setPhases()
}

// setPhases wires the hub writes, the member book and the phases that hold their own
// dependencies; the fields are set one by one, as writes and book hold state of their own.
func (r *CoordinatorReconciler) setPhases() {
	hw := &r.writes
	hw.client, hw.fieldManager, hw.leases, hw.requeue, hw.lookup = r.Client, r.FieldManager, &r.leases, r.requeue, r.lookup
	b := &r.book
	b.members, b.inventory, b.applier = &r.members, r.Inventory, &r.applier
	b.pipelinesOn, b.requeue = r.lookup.On, r.requeue
	b.memberTimeout, b.healthInterval = r.MemberTimeout, r.HealthInterval
	holder, _ := os.Hostname()
	b.records = members.Records{Client: r.Client, Live: r.APIReader, Namespace: r.LeaseNamespace, Holder: holder, Interval: r.HealthInterval}
	r.deletion = deletion{inventory: r.Inventory, leases: &r.leases, members: &r.members, fanOut: &r.fanOut, fence: r.fence,
		writes: hw, book: b, emit: r.event, grace: r.TombstoneGrace, patience: r.ControllerPatience, wait: r.WaitInterval, retry: r.RetryInterval}
	r.placer = placer{reads: &r.reads, fence: r.fence, members: &r.members, fanOut: &r.fanOut, writes: hw, book: b,
		liveness: r.Liveness, emit: r.event, patience: r.ControllerPatience}
	r.rollout = rollout{members: &r.members, fanOut: &r.fanOut, book: b, render: &r.render, applier: &r.applier, shared: &r.shared,
		writes: hw, leases: &r.leases, liveness: r.Liveness, leader: r.Leader, hub: r.APIReader, fieldManager: r.FieldManager}
}

func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// SetupWithManager registers the controllers (CDCPipelines on the hub, with member objects,
// inventory entries and ReaderLeases mapped back to them; ReaderLeases for tombstone replay),
// the hub cache indexes, and the member health checks.
func (r *CoordinatorReconciler) SetupWithManager(mgr mcmanager.Manager) error {
	if r.Inventory == nil {
		return errors.New("fleet: CoordinatorReconciler needs an Inventory")
	}
	r.setDefaults(mgr)
	if err := indexFields(context.Background(), mgr.GetLocalManager().GetFieldIndexer()); err != nil {
		return err
	}
	lr := r.tombstoneReplay()
	r.wakeLease = lr.Requeue
	h := &handlers{lookup: r.lookup, applier: &r.applier,
		hubEchoes: &r.writes.pipelineEchoes, leaseEchoes: &r.writes.leaseEchoes, forgetMember: r.book.forget}
	monitor := r.healthMonitor(mgr, lr)
	r.book.health, h.health = monitor, monitor
	if err := mgr.GetLocalManager().Add(monitor); err != nil {
		return fmt.Errorf("adding the member health checks: %w", err)
	}
	if err := mgr.GetLocalManager().Add(r.fence.Renewer); err != nil {
		return fmt.Errorf("adding the fence renewals: %w", err)
	}
	if err := mgr.GetLocalManager().Add(&gauges.Gauges{Hub: r.Client, LeaseNamespace: r.LeaseNamespace}); err != nil {
		return fmt.Errorf("adding the fleet gauges: %w", err)
	}
	if err := r.setupPipelineController(mgr, h); err != nil {
		return err
	}
	return lr.SetupWithManager(mgr)
}

// indexFields registers the hub cache indexes.
func indexFields(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &urutauv1alpha1.ReaderLease{}, lease.IndexPipelines, lease.PipelineUIDs); err != nil {
		return fmt.Errorf("indexing ReaderLeases: %w", err)
	}
	err := idx.IndexField(ctx, &urutauv1alpha1.CDCPipeline{}, hubindex.PipelineLease, func(o client.Object) []string {
		p, ok := o.(*urutauv1alpha1.CDCPipeline)
		if !ok {
			return nil
		}
		return []string{lease.Name(sourceIdentity(parseInline(p)), p.UID)}
	})
	if err != nil {
		return fmt.Errorf("indexing CDCPipelines: %w", err)
	}
	return nil
}

func (r *CoordinatorReconciler) setupPipelineController(mgr mcmanager.Manager, h *handlers) error {
	local, members := mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false)
	b := mcbuilder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&urutauv1alpha1.CDCPipeline{}, local, members, mcbuilder.WithPredicates(h.notOurEcho())).
		// A member that is not engaged yet must be retried, not dropped.
		WithClusterNotFoundWrapper(false).
		WithOptions(mccontroller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles})
	for _, obj := range membercache.Kinds() {
		b = b.Watches(obj, h.members,
			mcbuilder.WithEngageWithLocalCluster(false),
			mcbuilder.WithEngageWithProviderClusters(true))
	}
	b = b.WatchesRawSource(r.queueSource())
	b = b.Watches(r.Inventory.EntryType(), h.inventory, local, members,
		mcbuilder.WithPredicates(predicate.NewPredicateFuncs(r.Inventory.IsEntry)))
	b = b.Watches(&urutauv1alpha1.ReaderLease{}, h.leases, local, members,
		mcbuilder.WithPredicates(inNamespace(r.LeaseNamespace)))
	b = b.Watches(&urutauv1alpha1.PlacementPolicy{}, h.policies, local, members)
	hubNamespaces := &metav1.PartialObjectMetadata{}
	hubNamespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	b = b.Watches(hubNamespaces, h.hubNamespaces, local, members,
		mcbuilder.WithPredicates(predicate.LabelChangedPredicate{}))
	return b.Complete(r)
}

// queueSource is a source that only keeps the controller's queue, for requeue.
func (r *CoordinatorReconciler) queueSource() source.TypedSource[mcreconcile.Request] {
	return source.TypedFunc[mcreconcile.Request](func(_ context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) error {
		r.queue.Store(&q)
		return nil
	})
}

func inNamespace(ns string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == ns })
}

// tombstoneReplay builds the tombstone replay controller, sharing the member state.
func (r *CoordinatorReconciler) tombstoneReplay() *tombstones.Reconciler {
	return &tombstones.Reconciler{
		Client: r.Client, APIReader: r.APIReader, Inventory: r.Inventory, Members: &r.members, Leases: &r.leases,
		Recorder: r.Recorder, Options: func(key types.NamespacedName) members.FanOutOptions {
			return r.fanOut.options(members.WakeKey{NamespacedName: key, Lease: true}, "replay")
		},
		TimedOut: r.book.timedOut, PipelineBusy: r.running.Busy, Patience: r.ControllerPatience,
		Name: ControllerName + "-lease", WaitInterval: DefaultWaitInterval,
	}
}

// healthMonitor builds the member health checks: a change brings back the pipelines placed on
// the member and the leases that name it; a member that answers is scanned for orphans.
func (r *CoordinatorReconciler) healthMonitor(mgr mcmanager.Manager, lr *tombstones.Reconciler) *members.Monitor {
	kind, err := apiutil.GVKForObject(r.Inventory.EntryType(), mgr.GetLocalManager().GetScheme())
	if err != nil {
		kind.Kind = "Secret"
		kind.Version = "v1"
	}
	scanner := &orphans.Scanner{Hub: r.Client, LeaseNamespace: r.LeaseNamespace, Recorder: r.Recorder, EntryKind: kind,
		Patience: r.ControllerPatience, Interval: r.OrphanScanInterval, Timeout: orphans.ScanTimeout(r.MemberTimeout),
		DeleteAll: r.DeleteOrphans, Identity: r.members.KnownIdentity, Stray: r.recordStray,
		Present: func(ctx context.Context, m string) bool { _, ok := r.book.entry(ctx, m); return ok },
		MayLag:  func(host string) bool { return r.Liveness.CacheMayLag(host, time.Now()) }}
	return &members.Monitor{
		Members: &r.members, Inventory: r.Inventory, Interval: r.HealthInterval, Timeout: r.MemberTimeout,
		Changed: func(member string) {
			ctx := context.Background()
			r.requeue(r.lookup.On(ctx, member)...)
			lr.Requeue(lr.LeasesFor(ctx, member, r.members.KnownIdentity(member))...)
			r.book.publish(ctx, member)
		},
		Left: r.book.forget,
		Listed: func(ctx context.Context, members []inventory.Member) {
			if err := r.book.records.Prune(ctx, members); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Removing the health records of members that left")
			}
		},
		Checked: func(ctx context.Context, member string, c *members.Conn) {
			if m, ok := r.book.entry(ctx, member); ok {
				scanner.Start(ctx, m, c)
			}
		},
	}
}

// SetupWebhookWithManager registers the CDCPipeline validating webhook on the hub.
func (r *CoordinatorReconciler) SetupWebhookWithManager(mgr mcmanager.Manager) error {
	local := mgr.GetLocalManager()
	return webhook.SetupWithManager(local, &webhook.CDCPipelineValidator{Client: local.GetAPIReader()})
}

// HubCacheByObject scopes the hub's cache of ReaderLeases to namespace; merge it into the
// manager's cache.Options.ByObject.
func HubCacheByObject(namespace string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&urutauv1alpha1.ReaderLease{}: {Namespaces: map[string]cache.Config{namespace: {}}},
	}
}
