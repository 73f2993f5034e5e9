package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet/inventory"
	"github.com/urutau-io/fleet/internal/webhook"
)

// Defaults of the reconciler's settings.
const (
	// DefaultFieldManager is the base of every field manager (docs/architecture.md, "Contracts"); the single-cluster
	// operator's default, so a pipeline moving to the fleet keeps the same base.
	DefaultFieldManager = "urutau-operator"
	// ControllerName names the controller (metrics, logs) and the event reporter.
	ControllerName = "urutau-fleet"
	// DefaultMemberTimeout bounds the work on one member in one reconcile.
	DefaultMemberTimeout = 10 * time.Second
	// DefaultTombstoneGrace is how long a deleted pipeline waits for a member to be emptied
	// before recording a tombstone and letting the CR go.
	DefaultTombstoneGrace = 2 * time.Minute
	// DefaultRetryInterval retries missing Secrets, unreachable members and blocked moves.
	DefaultRetryInterval = 30 * time.Second
	// DefaultWaitInterval polls a departed member until its coordinator pods are gone.
	DefaultWaitInterval = 5 * time.Second
	// DefaultMaxConcurrentReconciles is the number of pipelines reconciled at once.
	DefaultMaxConcurrentReconciles = 4
)

// CoordinatorReconciler places CDCPipelines of the hub on member clusters and keeps their
// coordinator workload applied there. Its public shape is the single-cluster operator's
// (Image, Recorder, FieldManager, KEDA settings, Reconcile, SetupWithManager,
// SetupWebhookWithManager), plus what a fleet needs.
type CoordinatorReconciler struct {
	// Client reads and writes the hub. Defaults to the local manager's client.
	Client client.Client
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

	// MemberTimeout bounds the work on one member in one reconcile.
	MemberTimeout time.Duration
	// TombstoneGrace bounds how long a deletion waits on a member before tombstoning it.
	TombstoneGrace time.Duration
	// TombstoneNamespace holds tombstone ConfigMaps on the hub.
	TombstoneNamespace string
	// MaxConcurrentReconciles is per controller (manager-wide options are not applied by
	// multicluster-runtime v0.24.1).
	MaxConcurrentReconciles int
	// RetryInterval retries missing Secrets, unreachable members and blocked moves.
	RetryInterval time.Duration
	// WaitInterval polls a departed member while its coordinator goes away.
	WaitInterval time.Duration
	// Liveness follows whether members answer (its Track must be among the provider's REST
	// options); without it, a reconcile waits for a hung member for half of MemberTimeout.
	Liveness *Liveness

	applier applier
	breaker memberBreaker
	// late is the member work running, some of it past the reconcile that started it (fanOut).
	late lateWork
	// queue is the controller's queue: late work that ends brings its pipeline back through it.
	queue         atomic.Pointer[workqueue.TypedRateLimitingInterface[mcreconcile.Request]]
	memberClients memberClientSet
	// hubEchoes filters the hub watch events of our own writes to pipelines (echoFilter).
	hubEchoes echoFilter
	// lookAgain holds the pipelines whose writes crossed a change by someone else in this
	// reconcile (echoFilter.end): they are reconciled again at once.
	lookAgain sync.Map
	// tombstonesWritten are the names of tombstones this process wrote (see deleteTombstoneIfAny).
	tombstonesWritten sync.Map
}

// The hub's RBAC markers are all in rbac.go.

// Reconcile brings one hub CDCPipeline's members to its spec: deletion first, then the finalizer,
// the terminal gate, validation, placement, stop-before-start, the concurrent apply, and the
// status, written only when it changed.
func (r *CoordinatorReconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	if req.ClusterName != mcmanager.LocalCluster {
		// Member events are mapped to hub requests; nothing else is ours.
		return ctrl.Result{}, nil
	}
	res, err := r.reconcile(ctx, req)
	if _, again := r.lookAgain.LoadAndDelete(req.NamespacedName); again && err == nil && (res.RequeueAfter <= 0 || res.RequeueAfter > lookAgainAfter) {
		// A change by someone else crossed one of our writes (echoFilter): see it now.
		res.RequeueAfter = lookAgainAfter
	}
	return res, err
}

// lookAgainAfter is how soon a pipeline is reconciled again when a change by someone else
// crossed one of our writes to it.
const lookAgainAfter = 10 * time.Millisecond

func (r *CoordinatorReconciler) reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	p := &urutauv1alpha1.CDCPipeline{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.late.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !p.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, p)
	}
	if !controllerutil.ContainsFinalizer(p, urutauv1alpha1.Finalizer) {
		orig := p.DeepCopy()
		controllerutil.AddFinalizer(p, urutauv1alpha1.Finalizer)
		if err := r.writeHub(p, func() error {
			return r.Client.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(r.FieldManager))
		}); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	members, err := r.Inventory.Members(ctx)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the cluster inventory: %w", err)
	}
	if p.Status.Terminated != nil {
		if cleared, err := r.terminalGate(ctx, p, p.DeepCopy(), members); !cleared || err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.reconcileNormal(ctx, p, members)
}

// terminalGate handles a terminated pipeline with hub-only writes; orig is the pipeline as read,
// for the status patch. It reports cleared when the spec moved past the termination, which it
// then removes, and the reconcile goes on.
func (r *CoordinatorReconciler) terminalGate(ctx context.Context, p, orig *urutauv1alpha1.CDCPipeline, members []inventory.Member) (bool, error) {
	t := p.Status.Terminated
	if t.ObservedGeneration != 0 && p.Generation > t.ObservedGeneration {
		p.Status.Terminated = nil
		if err := r.patchStatus(ctx, orig, p, true); err != nil {
			return false, err
		}
		r.event(p, corev1.EventTypeNormal, EventTerminationCleared, "Reconcile",
			"the spec changed (generation %d > %d): termination %q cleared", p.Generation, t.ObservedGeneration, t.Reason)
		return true, nil
	}
	nt := t.DeepCopy()
	if nt.ObservedGeneration == 0 {
		// A person set it without a generation: it applies to the current one. Said once, when
		// the hub first sees it (hub-set terminations have their own event).
		nt.ObservedGeneration = p.Generation
		r.event(p, corev1.EventTypeWarning, EventTerminated, "Reconcile",
			"terminated (%s): no member is written until status.terminated is removed or the spec changes", nt.Reason)
	}
	selected, _ := SelectMembers(p, members)
	shown := sets.New(selected...).Insert(p.Status.Inventory...)
	prev := map[string]urutauv1alpha1.ClusterStatus{}
	for _, c := range p.Status.Clusters {
		prev[c.Name] = c
	}
	obs := Observation{
		Generation: p.Generation, Now: statusNow(), Selected: selected, Unknown: UnknownClusters(p, members),
		Inventory: p.Status.Inventory, Terminated: nt,
	}
	for _, n := range sets.List(shown) {
		obs.Members = append(obs.Members, MemberObservation{
			Name: n, Phase: urutauv1alpha1.ClusterTerminated, ReadyReplicas: prev[n].CoordinatorReadyReplicas,
			Message: "terminated: the hub writes nothing here until status.terminated is removed or the spec changes",
		})
	}
	p.Status = ComputeStatus(p.Status, obs)
	return false, r.patchStatus(ctx, orig, p, false)
}

// terminate records a hub-side termination and reports it.
func (r *CoordinatorReconciler) terminate(ctx context.Context, p *urutauv1alpha1.CDCPipeline, members []inventory.Member, t *urutauv1alpha1.Terminated, reason string) (ctrl.Result, error) {
	t.At = nowRFC3339()
	t.ObservedGeneration = p.Generation
	r.event(p, corev1.EventTypeWarning, reason, "Reconcile", "%s", t.Message)
	orig := p.DeepCopy()
	p.Status.Terminated = t
	_, err := r.terminalGate(ctx, p, orig, members)
	return ctrl.Result{}, err
}

// reconcileNormal places, moves and applies.
func (r *CoordinatorReconciler) reconcileNormal(ctx context.Context, p *urutauv1alpha1.CDCPipeline, members []inventory.Member) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	// Validate on the hub, once, without any member's settings: an invalid spec never reaches a
	// member.
	base, err := coordinator.Render(p, coordinator.Settings{
		DefaultImage: r.Image, KEDAPrometheusAddress: r.KEDAPrometheusAddress, KEDAThreshold: r.KEDAThreshold,
	})
	if err != nil {
		return r.terminate(ctx, p, members, &urutauv1alpha1.Terminated{Reason: urutauv1alpha1.ReasonInvalidSpec, Message: err.Error()}, EventInvalidSpec)
	}
	selected, err := SelectMembers(p, members)
	if err != nil {
		return r.terminate(ctx, p, members, &urutauv1alpha1.Terminated{Reason: urutauv1alpha1.ReasonInvalidSpec, Message: err.Error()}, EventInvalidSpec)
	}
	byName := map[string]inventory.Member{}
	for _, m := range members {
		byName[m.Name] = m
	}
	inv := sets.New(p.Status.Inventory...)

	// Stop: clean departed members first, concurrently.
	departed := sets.List(inv.Difference(sets.New(selected...)))
	dep, lateDep := fanOut(ctx, r.fanOutOptions(p), departed, func(ctx context.Context, m string) departedResult {
		return r.cleanMember(ctx, p, m)
	})
	for _, m := range lateDep {
		dep[m] = lateDeparted(m)
	}
	states := map[string]DepartedState{}
	for m, d := range dep {
		states[m] = d.state
	}
	plan := PlanMove(MoveInput{Selected: selected, Inventory: sets.List(inv), Departed: states, ConfirmedGone: ConfirmedGone(p)})

	for _, m := range plan.Tombstone {
		if err := writeTombstone(ctx, r.Client, r.TombstoneNamespace, r.FieldManager, p, m, "placement moved away while the cluster did not answer; confirmed gone by "+urutauv1alpha1.AnnotationConfirmGone); err != nil {
			return ctrl.Result{}, err
		}
		r.tombstonesWritten.Store(TombstoneName(p.UID, m), true)
		r.event(p, corev1.EventTypeWarning, EventTombstoned, "Move",
			"cluster %q confirmed gone while unreachable: tombstone %s/%s will clean it if it returns", m, r.TombstoneNamespace, TombstoneName(p.UID, m))
	}

	// Start: a member enters status.inventory before the first write to it.
	additions := sets.New(plan.Apply...).Difference(inv)
	if additions.Len() > 0 {
		for _, m := range sets.List(additions) {
			if err := r.deleteTombstoneIfAny(ctx, p.UID, m); err != nil {
				return ctrl.Result{}, err
			}
		}
		orig := p.DeepCopy()
		p.Status.Inventory = sets.List(inv.Union(additions))
		if err := r.patchStatus(ctx, orig, p, true); err != nil {
			return ctrl.Result{}, fmt.Errorf("recording members %v in status.inventory before applying: %w", sets.List(additions), err)
		}
	}

	results, late := fanOut(ctx, r.fanOutOptions(p), plan.Apply, func(ctx context.Context, m string) memberResult {
		return r.applyMember(ctx, p, byName[m])
	})
	for _, m := range late {
		results[m] = lateMember(p, m)
	}

	var term *urutauv1alpha1.Terminated
	for _, m := range plan.Apply {
		if t := results[m].terminal; t != nil && term == nil {
			term = t.DeepCopy()
			term.At = nowRFC3339()
			term.ObservedGeneration = p.Generation
		}
	}

	obs := Observation{
		Generation: p.Generation, Now: statusNow(), Selected: selected, Unknown: UnknownClusters(p, members),
		Terminated: term, BlockedBy: plan.BlockedBy, Waiting: plan.Wait, Removing: plan.Removing,
		SpecHash: base.SpecHash,
	}
	obs.Inventory = sets.List(inv.Union(additions).Difference(sets.New(plan.Drop...)))
	for _, m := range plan.Apply {
		obs.Members = append(obs.Members, results[m].obs)
	}
	for _, m := range plan.Wait {
		obs.Members = append(obs.Members, MemberObservation{Name: m, Phase: urutauv1alpha1.ClusterPending,
			Message: "waiting for the coordinator to leave " + joinNames(append(append([]string{}, plan.Removing...), plan.BlockedBy...)) + " before starting here"})
	}
	for _, m := range plan.Removing {
		obs.Members = append(obs.Members, MemberObservation{Name: m, Phase: urutauv1alpha1.ClusterDeleting, Message: dep[m].message})
	}
	for _, m := range plan.BlockedBy {
		obs.Members = append(obs.Members, MemberObservation{Name: m, Phase: urutauv1alpha1.ClusterUnreachable,
			Message: "no longer placed here, but the coordinator cannot be removed: " + dep[m].message})
	}

	orig := p.DeepCopy()
	p.Status = ComputeStatus(p.Status, obs)
	r.emitEvents(p, orig, results, dep, plan)
	if err := r.patchStatus(ctx, orig, p, false); err != nil {
		return ctrl.Result{}, err
	}

	var errs []error
	retry, wait := len(plan.BlockedBy) > 0, len(plan.Wait) > 0 || len(plan.Removing) > 0
	for _, m := range plan.Apply {
		res := results[m]
		if res.err != nil {
			errs = append(errs, res.err)
		}
		retry = retry || res.unreachable || res.retry
	}
	for _, d := range dep {
		if d.err != nil {
			errs = append(errs, d.err)
		}
	}
	if term != nil {
		log.Info("terminated", "reason", term.Reason, "cluster", term.Cluster)
		return ctrl.Result{}, nil
	}
	if len(errs) > 0 {
		return ctrl.Result{}, errors.Join(errs...)
	}
	switch {
	case wait:
		return ctrl.Result{RequeueAfter: min(r.WaitInterval, r.RetryInterval)}, nil
	case retry:
		return ctrl.Result{RequeueAfter: r.RetryInterval}, nil
	}
	return ctrl.Result{}, nil
}

// reconcileDelete empties every member in status.inventory, selected or not, terminated or not.
// A member not emptied within TombstoneGrace of the deletion gets a tombstone, so the CR still
// goes away in bounded time and the member is cleaned when it answers again.
func (r *CoordinatorReconciler) reconcileDelete(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(p, urutauv1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	inv := sets.List(sets.New(p.Status.Inventory...))
	dep, late := fanOut(ctx, r.fanOutOptions(p), inv, func(ctx context.Context, m string) departedResult {
		return r.cleanMember(ctx, p, m)
	})
	for _, m := range late {
		dep[m] = lateDeparted(m)
	}
	elapsed := time.Since(p.DeletionTimestamp.Time)
	var keep []string
	var shown []MemberObservation
	for _, m := range inv {
		d := dep[m]
		if d.state == DepartedEmpty {
			if d.deleted > 0 {
				r.event(p, corev1.EventTypeNormal, EventRemoved, "Delete", "removed from cluster %q", m)
			}
			continue
		}
		if elapsed >= r.TombstoneGrace {
			reason := fmt.Sprintf("deleted while cluster %q was not emptied within %s: %s", m, r.TombstoneGrace, d.message)
			if err := writeTombstone(ctx, r.Client, r.TombstoneNamespace, r.FieldManager, p, m, reason); err != nil {
				return ctrl.Result{}, err
			}
			r.tombstonesWritten.Store(TombstoneName(p.UID, m), true)
			r.event(p, corev1.EventTypeWarning, EventTombstoned, "Delete",
				"cluster %q not emptied within %s: tombstone %s/%s will clean it when it answers", m, r.TombstoneGrace, r.TombstoneNamespace, TombstoneName(p.UID, m))
			continue
		}
		keep = append(keep, m)
		phase := urutauv1alpha1.ClusterDeleting
		if d.state == DepartedUnreachable {
			phase = urutauv1alpha1.ClusterUnreachable
		}
		shown = append(shown, MemberObservation{Name: m, Phase: phase, Message: d.message})
	}
	if len(keep) == 0 {
		orig := p.DeepCopy()
		controllerutil.RemoveFinalizer(p, urutauv1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(r.FieldManager)); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		return ctrl.Result{}, nil
	}
	orig := p.DeepCopy()
	p.Status.Inventory = keep
	p.Status.Clusters = computeClusters(p.Status.Clusters, Observation{Now: statusNow(), Members: shown})
	if err := r.patchStatus(ctx, orig, p, false); err != nil {
		return ctrl.Result{}, err
	}
	after := min(r.WaitInterval, r.RetryInterval)
	if left := r.TombstoneGrace - elapsed; left > 0 && left < after {
		after = left
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// deleteTombstoneIfAny deletes the tombstone of pipeline uid in member when there may be one:
// when the hub's cache of tombstones holds it, or when this process wrote it (the cache may not
// show it yet). A member added to a pipeline almost never has a tombstone, and this spares the
// DELETE request that used to precede the first apply to every member. (Were one ever missed, the
// TombstoneReconciler does not replay a tombstone while the pipeline lists its member.)
func (r *CoordinatorReconciler) deleteTombstoneIfAny(ctx context.Context, uid types.UID, member string) error {
	name := TombstoneName(uid, member)
	if _, wrote := r.tombstonesWritten.Load(name); !wrote {
		cm := &corev1.ConfigMap{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.TombstoneNamespace, Name: name}, cm)
		if apierrors.IsNotFound(err) {
			return nil
		}
	}
	if err := deleteTombstone(ctx, r.Client, r.TombstoneNamespace, uid, member); err != nil {
		return err
	}
	r.tombstonesWritten.Delete(name)
	return nil
}

// patchStatus merge-patches the hub status from orig to p, only when it changed (idle is
// quiet). The merge patch carries only what we changed, so fields others write (phase, runId)
// are not clobbered; lock adds a resourceVersion precondition where acting on a stale object
// would be wrong (inventory before a write, clearing a termination).
func (r *CoordinatorReconciler) patchStatus(ctx context.Context, orig, p *urutauv1alpha1.CDCPipeline, lock bool) error {
	if apiequality.Semantic.DeepEqual(orig.Status, p.Status) {
		return nil
	}
	var opts []client.MergeFromOption
	if lock {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	if err := r.writeHub(p, func() error {
		return r.Client.Status().Patch(ctx, p, client.MergeFromWithOptions(orig, opts...), client.FieldOwner(r.FieldManager))
	}); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// writeHub makes one write to pipeline p through write, which updates p with the answer, and
// tells the hub echo filter about it.
func (r *CoordinatorReconciler) writeHub(p *urutauv1alpha1.CDCPipeline, write func() error) error {
	key := hubKey(p)
	r.hubEchoes.begin(key)
	err := write()
	rv := ""
	if err == nil {
		rv = p.ResourceVersion
	}
	if r.hubEchoes.end(key, rv) {
		r.lookAgain.Store(client.ObjectKeyFromObject(p), true)
	}
	return err
}

func hubKey(o client.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// emitEvents reports what changed: writes, and members whose state is new.
func (r *CoordinatorReconciler) emitEvents(p, orig *urutauv1alpha1.CDCPipeline, results map[string]memberResult, dep map[string]departedResult, plan MovePlan) {
	prev := map[string]urutauv1alpha1.ClusterStatus{}
	for _, c := range orig.Status.Clusters {
		prev[c.Name] = c
	}
	// One Applied event per reconcile, naming every member written: events of one object with
	// the same reason and action are merged by client-go into a series that keeps the first
	// note only, and concurrent ones race (the series patch 404s, the retry lands 10 s later, a
	// write long after the reconcile is over).
	var applied []string
	for _, m := range sets.List(sets.KeySet(results)) {
		res := results[m]
		if res.wrote > 0 {
			applied = append(applied, fmt.Sprintf("%d object(s) to cluster %q with field manager %q", res.wrote, m, FieldManagerFor(r.FieldManager, m)))
		}
		if c, ok := prev[m]; res.eventReason != "" && (!ok || c.Phase != res.obs.Phase || c.Message != res.obs.Message) {
			r.event(p, corev1.EventTypeWarning, res.eventReason, "Apply", "cluster %q: %s", m, res.eventMessage)
		}
	}
	if len(applied) > 0 {
		r.event(p, corev1.EventTypeNormal, EventApplied, "Apply", "applied %s", strings.Join(applied, "; "))
	}
	for _, m := range plan.Drop {
		if d, ok := dep[m]; ok && d.state == DepartedEmpty {
			r.event(p, corev1.EventTypeNormal, EventRemoved, "Move", "removed from cluster %q, which the placement no longer selects", m)
		}
	}
	if len(plan.BlockedBy) > 0 && meta.FindStatusCondition(orig.Status.Conditions, ConditionMoveBlocked) == nil {
		r.event(p, corev1.EventTypeWarning, EventMoveBlocked, "Move", "placement move waits on %s, which does not answer; annotate %s once it is gone for good",
			joinNames(plan.BlockedBy), urutauv1alpha1.AnnotationConfirmGone)
	}
}

func (r *CoordinatorReconciler) event(p *urutauv1alpha1.CDCPipeline, eventType, reason, action, note string, args ...any) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(p, nil, eventType, reason, action, note, args...)
}

// fanOutOptions are fanOut's options for p's reconcile: work on a member starts only where none
// of p's runs, a member whose work the reconcile stops waiting for is slow (memberBreaker), and
// late work that ends brings p back, with the pipelines that skipped the member meanwhile.
func (r *CoordinatorReconciler) fanOutOptions(p *urutauv1alpha1.CDCPipeline) fanOutOptions {
	key := client.ObjectKeyFromObject(p)
	return fanOutOptions{
		timeout:  r.MemberTimeout,
		patience: r.MemberTimeout / 2,
		start:    func(m string) bool { return r.late.begin(lateKey{key, m}) },
		stored:   func(m string) (any, bool) { return r.late.take(lateKey{key, m}, p.UID, p.Generation) },
		slow:     r.breaker.markSlow,
		giveUp: func(m string, begun time.Time) bool {
			return r.breaker.isSlow(m) || r.Liveness.silent(r.memberClients.host(m), begun, time.Now()) >= memberSilence
		},
		end: func(m string, late bool, v any) {
			r.late.end(lateKey{key, m}, late, lateResult{uid: p.UID, generation: p.Generation, v: v})
			if late {
				r.requeue(append(r.breaker.settle(m), key)...)
			}
		},
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

// queueSource is a source that only keeps the controller's queue, for requeue.
func (r *CoordinatorReconciler) queueSource() source.TypedSource[mcreconcile.Request] {
	return source.TypedFunc[mcreconcile.Request](func(_ context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) error {
		r.queue.Store(&q)
		return nil
	})
}

func joinNames(s []string) string {
	out := ""
	for i, n := range s {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// memberWatchedKinds are the kinds watched in members. Each is cached there, but only our own
// objects (MemberClusterOptions). ScaledObjects are not watched: a member may lack the CRD.
func memberWatchedKinds() []client.Object {
	return []client.Object{
		&appsv1.StatefulSet{}, &corev1.ConfigMap{}, &corev1.Service{}, &corev1.ServiceAccount{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &policyv1.PodDisruptionBudget{},
	}
}

func memberSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{urutauv1alpha1.LabelManagedBy: urutauv1alpha1.ManagedByFleet})
}

// HubCacheByObject restricts the hub's ConfigMap cache to tombstones in namespace; merge it into
// the manager's cache.Options.ByObject so the hub does not cache every ConfigMap it serves.
func HubCacheByObject(namespace string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{namespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{LabelTombstone: "true"}),
		},
	}
}

// mapMemberObject maps an object in a member to the hub pipeline that wrote it.
func mapMemberObject(_ context.Context, o client.Object) []mcreconcile.Request {
	l := o.GetLabels()
	ns, name := l[urutauv1alpha1.LabelHubNamespace], l[urutauv1alpha1.LabelHubName]
	if ns == "" || name == "" || l[urutauv1alpha1.LabelManagedBy] != urutauv1alpha1.ManagedByFleet {
		return nil
	}
	return []mcreconcile.Request{{
		Request:     reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}},
		ClusterName: mcmanager.LocalCluster,
	}}
}

// memberEventHandler maps member events to the hub pipeline, except the echoes of our own
// applies: an object whose resourceVersion is the one our last apply to it returned holds exactly
// what we wrote, and reconciling it again would find nothing to do. Without this, every object
// applied came back as one more reconcile of its pipeline (8 per member per pipeline), which kept
// the workers busy with no-ops while other pipelines waited for their first apply. Anything
// else, a foreign edit, a deletion, a status change, is not an echo and is reconciled.
func (r *CoordinatorReconciler) memberEventHandler(name multicluster.ClusterName, _ cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	member := string(name)
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request], objs ...client.Object) {
		for _, o := range objs {
			for _, req := range mapMemberObject(ctx, o) {
				q.Add(req)
			}
		}
	}
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			if !r.applier.isEcho(member, e.Object) {
				enqueue(ctx, q, e.Object)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			if !r.applier.isEcho(member, e.ObjectNew) {
				enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			r.applier.forget(member, e.Object)
			enqueue(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// notOurEcho filters the hub watch of CDCPipelines (see echoFilter): the events of our own
// finalizer and status writes. Writes by anyone else (a spec change, a person setting
// status.terminated) carry another resourceVersion and are reconciled.
func (r *CoordinatorReconciler) notOurEcho() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !r.hubEchoes.isEcho(hubKey(e.ObjectNew), e.ObjectNew.GetResourceVersion())
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			r.hubEchoes.forget(hubKey(e.Object))
			return true
		},
	}
}

// inventoryEventHandler re-places every pipeline when a member joins, leaves, or changes its
// labels or annotations (selectors, per-member settings). Any other change of an entry (a new
// kubeconfig, a ClusterProfile's status) can only change how the hub reaches that member: it
// brings back the pipelines placed there, not every pipeline (hack/bench: pointing one member's
// Secret elsewhere queued all 2,000 pipelines of the hub ahead of new ones for 10 s).
func (r *CoordinatorReconciler) inventoryEventHandler(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request], entry client.Object, all bool) {
		// A changed entry is worth trying at once.
		member := entry.GetName()
		r.breaker.forgive(member)
		for _, key := range r.pipelinesFor(ctx, member, all) {
			q.Add(mcreconcile.Request{Request: reconcile.Request{NamespacedName: key}, ClusterName: mcmanager.LocalCluster})
		}
	}
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			enqueue(ctx, q, e.Object, true)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			relabelled := !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
				!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
			enqueue(ctx, q, e.ObjectNew, relabelled)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			enqueue(ctx, q, e.Object, true)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			enqueue(ctx, q, e.Object, true)
		},
	}
}

// pipelinesFor lists the pipelines to reconcile after a change of member's inventory entry:
// every pipeline, or only those whose status.inventory holds member.
func (r *CoordinatorReconciler) pipelinesFor(ctx context.Context, member string, all bool) []types.NamespacedName {
	list := &urutauv1alpha1.CDCPipelineList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing CDCPipelines after an inventory change")
		return nil
	}
	var out []types.NamespacedName
	for _, p := range list.Items {
		if all || slices.Contains(p.Status.Inventory, member) {
			out = append(out, client.ObjectKeyFromObject(&p))
		}
	}
	return out
}

func (r *CoordinatorReconciler) setDefaults(mgr mcmanager.Manager) {
	if r.Manager == nil {
		r.Manager = mgr
	}
	if r.Client == nil {
		r.Client = mgr.GetLocalManager().GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetLocalManager().GetEventRecorder(ControllerName)
	}
	if r.FieldManager == "" {
		r.FieldManager = DefaultFieldManager
	}
	if r.MemberTimeout <= 0 {
		r.MemberTimeout = DefaultMemberTimeout
	}
	if r.TombstoneGrace <= 0 {
		r.TombstoneGrace = DefaultTombstoneGrace
	}
	if r.TombstoneNamespace == "" {
		r.TombstoneNamespace = DefaultTombstoneNamespace
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if r.RetryInterval <= 0 {
		r.RetryInterval = DefaultRetryInterval
	}
	if r.WaitInterval <= 0 {
		r.WaitInterval = DefaultWaitInterval
	}
}

// SetupWithManager registers the controller (hub CDCPipelines, member objects mapped back by
// label, inventory entries) and the TombstoneReconciler.
func (r *CoordinatorReconciler) SetupWithManager(mgr mcmanager.Manager) error {
	if r.Inventory == nil {
		return errors.New("fleet: CoordinatorReconciler needs an Inventory")
	}
	r.setDefaults(mgr)
	b := mcbuilder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&urutauv1alpha1.CDCPipeline{},
			mcbuilder.WithEngageWithLocalCluster(true),
			mcbuilder.WithEngageWithProviderClusters(false),
			mcbuilder.WithPredicates(r.notOurEcho())).
		// A member the provider has not engaged yet must be retried, not dropped.
		WithClusterNotFoundWrapper(false).
		WithOptions(mccontroller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles})
	for _, obj := range memberWatchedKinds() {
		b = b.Watches(obj, r.memberEventHandler,
			mcbuilder.WithEngageWithLocalCluster(false),
			mcbuilder.WithEngageWithProviderClusters(true))
	}
	b = b.WatchesRawSource(r.queueSource())
	b = b.Watches(r.Inventory.EntryType(), r.inventoryEventHandler,
		mcbuilder.WithEngageWithLocalCluster(true),
		mcbuilder.WithEngageWithProviderClusters(false),
		mcbuilder.WithPredicates(predicate.NewPredicateFuncs(r.Inventory.IsEntry)))
	if err := b.Complete(r); err != nil {
		return err
	}
	tr := &TombstoneReconciler{
		Client: r.Client, Manager: r.Manager, Namespace: r.TombstoneNamespace,
		MemberTimeout: r.MemberTimeout, RetryInterval: r.RetryInterval, Recorder: r.Recorder,
	}
	return tr.SetupWithManager(mgr)
}

// SetupWebhookWithManager registers the CDCPipeline validating webhook on the hub.
func (r *CoordinatorReconciler) SetupWebhookWithManager(mgr mcmanager.Manager) error {
	local := mgr.GetLocalManager()
	return webhook.SetupWithManager(local, &webhook.CDCPipelineValidator{Client: local.GetAPIReader()})
}
