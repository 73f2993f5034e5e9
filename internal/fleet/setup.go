package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
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
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/membercache"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/orphans"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/tenancy"
	"github.com/urutau-io/fleet/internal/webhook"
)

// The hub's RBAC markers are all in rbac.go.

// Hub cache indexes.
const (
	// indexPipelineLease indexes CDCPipelines by the name of their ReaderLease, so a lease that
	// changes finds the pipelines that wait for it.
	indexPipelineLease = "urutau.io/reader-lease"
)

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
	r.lookup = lookup{hub: r.Client, leaseNamespace: r.LeaseNamespace}
	r.FenceTTL = orDefault(r.FenceTTL, DefaultFenceTTL)
	r.FenceGrace = orDefault(r.FenceGrace, DefaultFenceGrace)
	r.FenceMargin = orDefault(r.FenceMargin, DefaultFenceMargin)
	r.fanOut = fanOut{members: &r.members, running: &r.running, liveness: r.Liveness, timeout: r.MemberTimeout, wake: r.wake}
	r.reads = memberReads{members: &r.members, fanOut: &r.fanOut}
	r.fence = newHubFence(r)
	r.render = renderDefaults{image: r.Image, kedaAddress: r.KEDAPrometheusAddress, kedaThreshold: r.KEDAThreshold,
		networkPolicy: r.NetworkPolicy, fence: r.fence.Config()}
	r.looks = lookIntervals{retry: r.RetryInterval, wait: r.WaitInterval, secretRecheck: r.SecretRecheckInterval}
	r.tenancy = hubTenancy{cache: r.Client, flags: tenancy.Boundary{Reserved: r.ReservedNamespaces, Images: r.Images, AllowWeakPodSecurity: r.AllowWeakPodSecurity}}
	holder, _ := os.Hostname()
	r.records = members.Records{Client: r.Client, Live: r.APIReader, Namespace: r.LeaseNamespace, Holder: holder, Interval: r.HealthInterval}
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
	lr := r.leaseReconciler()
	r.wakeLease = lr.requeue
	h := &handlers{lookup: r.lookup, applier: &r.applier,
		hubEchoes: &r.hubEchoes, leaseEchoes: &r.leaseEchoes, forgetMember: r.forgetMember}
	monitor := r.healthMonitor(mgr, lr)
	r.health, h.health = monitor, monitor
	if err := mgr.GetLocalManager().Add(monitor); err != nil {
		return fmt.Errorf("adding the member health checks: %w", err)
	}
	if err := mgr.GetLocalManager().Add(r.fence.Renewer); err != nil {
		return fmt.Errorf("adding the fence renewals: %w", err)
	}
	if err := mgr.GetLocalManager().Add(&fleetGauges{hub: r.Client, leaseNamespace: r.LeaseNamespace}); err != nil {
		return fmt.Errorf("adding the fleet gauges: %w", err)
	}
	if err := r.setupPipelineController(mgr, h); err != nil {
		return err
	}
	return lr.setup(mgr, r)
}

// indexFields registers the hub cache indexes.
func indexFields(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &urutauv1alpha1.ReaderLease{}, lease.IndexPipelines, lease.PipelineUIDs); err != nil {
		return fmt.Errorf("indexing ReaderLeases: %w", err)
	}
	err := idx.IndexField(ctx, &urutauv1alpha1.CDCPipeline{}, indexPipelineLease, func(o client.Object) []string {
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

// leaseReconciler builds the tombstone replay controller, sharing the member state.
func (r *CoordinatorReconciler) leaseReconciler() *LeaseReconciler {
	return &LeaseReconciler{
		client: r.Client, apiReader: r.APIReader, inventory: r.Inventory, members: &r.members, leases: &r.leases,
		recorder: r.Recorder, options: func(key types.NamespacedName) members.FanOutOptions {
			return r.fanOut.options(members.WakeKey{NamespacedName: key, Lease: true}, "replay")
		},
		timedOut:     r.markTimedOut,
		pipelineBusy: r.running.Busy,
		patience:     r.ControllerPatience,
	}
}

// healthMonitor builds the member health checks: a change brings back the pipelines placed on
// the member and the leases that name it; a member that answers is scanned for orphans.
func (r *CoordinatorReconciler) healthMonitor(mgr mcmanager.Manager, lr *LeaseReconciler) *members.Monitor {
	kind, err := apiutil.GVKForObject(r.Inventory.EntryType(), mgr.GetLocalManager().GetScheme())
	if err != nil {
		kind.Kind = "Secret"
		kind.Version = "v1"
	}
	scanner := &orphans.Scanner{Hub: r.Client, LeaseNamespace: r.LeaseNamespace, Recorder: r.Recorder, EntryKind: kind,
		Patience: r.ControllerPatience, Interval: r.OrphanScanInterval, Timeout: orphans.ScanTimeout(r.MemberTimeout),
		DeleteAll: r.DeleteOrphans, Identity: r.members.KnownIdentity, Stray: r.recordStray,
		Present: func(ctx context.Context, m string) bool { _, ok := r.inventoryMember(ctx, m); return ok },
		MayLag:  func(host string) bool { return r.Liveness.CacheMayLag(host, time.Now()) }}
	return &members.Monitor{
		Members: &r.members, Inventory: r.Inventory, Interval: r.HealthInterval, Timeout: r.MemberTimeout,
		Changed: func(member string) {
			ctx := context.Background()
			r.requeue(r.lookup.pipelinesOn(ctx, member)...)
			lr.requeue(lr.leasesFor(ctx, member, r.members.KnownIdentity(member))...)
			r.publishHealth(ctx, member)
		},
		Left: r.forgetMember,
		Listed: func(ctx context.Context, members []inventory.Member) {
			if err := r.records.Prune(ctx, members); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Removing the health records of members that left")
			}
		},
		Checked: func(ctx context.Context, member string, c *members.Conn) {
			if m, ok := r.inventoryMember(ctx, member); ok {
				scanner.Start(ctx, m, c)
			}
		},
	}
}

// setup registers the LeaseReconciler: ReaderLeases in the hub's namespace; the inventory
// entries, which bring back the leases that name a member that (re)joins; and the CDCPipelines,
// whose removal from the hub turns their entries into tombstones. The last write a deletion makes
// to a lease precedes the CR's removal, so the lease's own event would find the pipeline still
// there and leave its tombstones waiting for an unrelated event.
func (lr *LeaseReconciler) setup(mgr mcmanager.Manager, r *CoordinatorReconciler) error {
	local, members := mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false)
	entries := func(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
		return handler.TypedFuncs[client.Object, mcreconcile.Request]{
			CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
				for _, k := range lr.leasesFor(ctx, e.Object.GetName(), "") {
					q.Add(localRequest(k))
				}
			},
		}
	}
	pipelines := func(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
		return handler.TypedFuncs[client.Object, mcreconcile.Request]{
			DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
				for _, k := range lr.leasesOf(ctx, e.Object.GetUID()) {
					q.Add(localRequest(k))
				}
			},
		}
	}
	return mcbuilder.ControllerManagedBy(mgr).
		Named(ControllerName+"-lease").
		For(&urutauv1alpha1.ReaderLease{}, local, members, mcbuilder.WithPredicates(inNamespace(r.LeaseNamespace))).
		Watches(r.Inventory.EntryType(), entries, local, members, mcbuilder.WithPredicates(predicate.NewPredicateFuncs(r.Inventory.IsEntry))).
		Watches(&urutauv1alpha1.CDCPipeline{}, pipelines, local, members).
		WatchesRawSource(source.TypedFunc[mcreconcile.Request](func(_ context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) error {
			lr.queue.Store(&q)
			return nil
		})).
		WithClusterNotFoundWrapper(false).
		WithOptions(mccontroller.Options{MaxConcurrentReconciles: 2}).
		Complete(lr)
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

// inventoryMember is the inventory entry of member, if it has one.
func (r *CoordinatorReconciler) inventoryMember(ctx context.Context, member string) (m inventory.Member, ok bool) {
	members, err := r.Inventory.Members(ctx)
	if err != nil {
		return m, false
	}
	for _, x := range members {
		if x.Name == member {
			return x, true
		}
	}
	return m, false
}

// requeue has leases reconciled again.
func (lr *LeaseReconciler) requeue(keys ...types.NamespacedName) {
	q := lr.queue.Load()
	if q == nil {
		return
	}
	for _, k := range keys {
		(*q).Add(localRequest(k))
	}
}

// forgetMember drops every piece of state kept about member, which left the inventory.
// The record goes first: should a check publish it again in between (the member is back
// already), the health forgotten after makes the member's next check publish it once more.
func (r *CoordinatorReconciler) forgetMember(member string) {
	ctx, cancel := context.WithTimeout(context.Background(), hubWriteTimeout)
	defer cancel()
	if err := r.records.Remove(ctx, member); err != nil {
		ctrl.Log.WithName("health").Error(err, "Removing the health record of a member that left", "cluster", member)
	}
	r.members.Forget(member)
	r.backoff.ForgetMember(member)
	r.applier.ForgetMember(member)
	forgetMemberSeries(member)
	ssa.ForgetMemberSeries(member)
	r.health.Forget(member)
}

// publishHealth records what the last check of member found (members.Records). A check that
// ended after member left the inventory is dropped with everything else kept about it:
// forgetMember ran when it left, and this check must not bring its record back.
func (r *CoordinatorReconciler) publishHealth(ctx context.Context, member string) {
	if r.records.Client == nil {
		return // a reconciler built without SetupWithManager (unit tests) publishes nothing
	}
	ctx, cancel := context.WithTimeout(ctx, hubWriteTimeout)
	defer cancel()
	present := func(ctx context.Context) bool {
		listed, err := r.Inventory.Members(ctx)
		// An inventory that cannot be read says nothing of member: only a listing without it
		// drops what the hub keeps.
		return err != nil || slices.ContainsFunc(listed, func(m inventory.Member) bool { return m.Name == member })
	}
	stays, err := r.records.PublishWhile(ctx, member, r.members.Health(member), r.members.KnownIdentity(member), present)
	if err != nil {
		ctrl.Log.WithName("health").Error(err, "Publishing a member's health record", "cluster", member)
	}
	if !stays {
		r.forgetMember(member)
	}
}

// hubWriteTimeout bounds one write of a health record to the hub.
const hubWriteTimeout = 10 * time.Second
