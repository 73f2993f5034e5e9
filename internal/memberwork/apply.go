package memberwork

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/adopt"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/status"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// Result is the outcome of one member in one reconcile.
type Result struct {
	Obs status.MemberObservation
	// Wrote counts objects written (applied or deleted).
	Wrote int
	// Unreachable: the member did not answer; TimedOut: a request to it ran out of time.
	Unreachable, TimedOut bool
	// Retry: waiting for something outside the hub (a Secret); retry later, no backoff.
	Retry bool
	// Err is a failure the member answered with: that member backs off (members.Backoff).
	Err error
	// Terminal stops the pipeline (SecretValidationFailed, or an override that cannot render).
	Terminal *urutauv1alpha1.Terminated
	// EventReason and EventMessage are the Warning to emit when this member's state is new.
	EventReason, EventMessage string
	// BackingOff: the member was not contacted, it waits out an earlier failure; RetryIn is when
	// it is tried again (members.Backoff).
	BackingOff bool
	RetryIn    time.Duration
}

// ErrSuperseded is an apply whose decision a newer change of the pipeline overtook.
var ErrSuperseded = errors.New("the pipeline changed since this reconcile placed it")

// Fail classifies err into the result.
func (res *Result) Fail(err error) {
	if members.IsUnreachable(err) {
		res.Unreachable = true
		res.TimedOut = members.IsTimeout(err)
		res.Obs.Phase = urutauv1alpha1.ClusterUnreachable
		res.Obs.Message = "cluster does not answer: " + err.Error()
		res.EventReason = EventClusterUnreachable
		memberErrors.WithLabelValues(res.Obs.Name, "unreachable").Inc()
	} else {
		res.Err = err
		res.Obs.Phase = urutauv1alpha1.ClusterDegraded
		res.Obs.Message = err.Error()
		res.EventReason = EventApplyFailed
		memberErrors.WithLabelValues(res.Obs.Name, "error").Inc()
	}
	res.EventMessage = res.Obs.Message
}

// ApplyJob applies one pipeline's workload to one member, in the single-cluster operator's
// order: ServiceAccounts, PDB, Role, RoleBinding, Service, ConfigMap, then the Secret check, the
// coordinator StatefulSet, and the ScaledObjects (with pruning).
type ApplyJob struct {
	Pipeline  *urutauv1alpha1.CDCPipeline
	Conn      *members.Conn
	ClusterID string
	Settings  coordinator.Settings
	Manager   string
	Applier   *ssa.Applier
	// Crossed is called when a change by someone else crossed one of the job's writes.
	Crossed func()
	// MayCreateCoordinator (required) confirms the pipeline (stillCurrent) and the reader lease
	// (lease.Store.MayCreateCoordinator) before the coordinator StatefulSet is created.
	MayCreateCoordinator func(context.Context) error
	// LeaseWritten: this reconcile wrote the reader lease, so MayCreateCoordinator only confirms
	// the pipeline, which is harmless for a coordinator that exists: no member read before it.
	LeaseWritten bool
	// CacheMayLag: the member left a request unanswered lately, so its cache may miss objects or
	// still show deleted ones (Liveness.CacheMayLag): every object is read from the member.
	CacheMayLag bool
	// Guard refuses to write over an object this pipeline does not own (adoption rules).
	Guard func(kind string, existing client.Object) error
	// Boundary is the tenancy boundary; nsCheck its check of the member namespace, made before
	// the job's first write; HubNS and Member are what that check decides from besides.
	Boundary tenancy.Boundary
	HubNS    *corev1.Namespace
	Member   inventory.Member
	nsCheck  namespaceCheck
	// Shared shares the namespace reads of the checks with the member's other jobs (nil: this
	// job reads for itself).
	Shared *SharedReads
	// Leader refuses every write once this replica may no longer lead (nil: no leader election).
	Leader *LeaderFence
}

// reader is where the job reads what it decides on besides the objects it applies (those go
// through the applier): the member itself while its cache may lag, which may miss an object
// created while the member did not answer, or still show one deleted then.
func (j *ApplyJob) reader() client.Reader {
	if j.CacheMayLag {
		return j.Conn.Live
	}
	return j.Conn.Cached
}

func (j *ApplyJob) Run(ctx context.Context) (res Result) {
	res.Obs = status.MemberObservation{Name: j.Conn.Name, ClusterID: j.ClusterID}
	start := time.Now()
	defer func() { memberDuration.WithLabelValues(j.Conn.Name).Observe(time.Since(start).Seconds()) }()
	w, err := coordinator.Render(j.Pipeline, j.Settings)
	if err != nil {
		// The hub-wide render succeeded, so this is the member's override: terminal.
		msg := fmt.Sprintf("rendering for cluster %q: %v", j.Conn.Name, err)
		res.terminate(urutauv1alpha1.ReasonInvalidSpec, j.Conn.Name, msg, EventInvalidSpec)
		return res
	}
	reads := j.prefetch(ctx, w)
	if !j.applySupporting(ctx, &res, w) || !j.secretsReady(ctx, &res, w, reads) {
		return res
	}
	current, ok := j.applyCoordinator(ctx, &res, w)
	if !ok {
		return res
	}
	kedaMsg, n, err := j.applyScaledObjects(ctx, w, reads.scaledObjects)
	if !j.boundaryAllows(&res, err) {
		return res
	}
	res.Wrote += n
	res.Obs.AppliedGeneration = j.Pipeline.Generation
	res.Obs.ReadyReplicas = current.Status.ReadyReplicas
	res.Obs.Phase = urutauv1alpha1.ClusterApplied
	if coordinatorReady(current) {
		res.Obs.Phase = urutauv1alpha1.ClusterReady
	}
	res.Obs.Message = kedaMsg
	if res.Wrote > 0 {
		ctrl.LoggerFrom(ctx).Info("applied", "objects", res.Wrote, "fieldManager", j.Manager)
	}
	return res
}

// terminate makes the result terminal: the pipeline is written nowhere until a person acts.
func (res *Result) terminate(reason, cluster, msg, event string) {
	res.Terminal = &urutauv1alpha1.Terminated{Reason: reason, Cluster: cluster, Message: msg}
	res.Obs.Phase, res.Obs.Message = urutauv1alpha1.ClusterTerminated, msg
	res.EventReason, res.EventMessage = event, msg
}

// memberReads are the live reads of one apply, started before the applies: they depend on
// nothing the applies write (hack/bench -concurrency 1 measured the ScaledObject list alone at a
// median 25 ms of each member's 90 ms). A ScaledObject to prune was written by an earlier
// reconcile, so a list taken before this one's applies sees it.
type memberReads struct {
	secrets       []func() (*corev1.Secret, error)
	scaledObjects func() (*unstructured.UnstructuredList, error)
}

func (j *ApplyJob) prefetch(ctx context.Context, w *coordinator.Workload) memberReads {
	var r memberReads
	for _, ref := range w.RequiredSecrets {
		r.secrets = append(r.secrets, prefetch(func() (*corev1.Secret, error) {
			s := &corev1.Secret{}
			return s, j.Conn.Live.Get(ctx, client.ObjectKey{Namespace: j.Pipeline.Namespace, Name: ref.Name}, s)
		}))
	}
	if !j.mayHaveStaleScaledObjects(w) {
		return r
	}
	r.scaledObjects = prefetch(func() (*unstructured.UnstructuredList, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(scaledObjectListGVK)
		return list, j.Conn.Live.List(ctx, list, client.InNamespace(j.Pipeline.Namespace), client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: string(j.Pipeline.UID)})
	})
	return r
}

// mayHaveStaleScaledObjects tells whether the member may hold ScaledObjects of the pipeline that
// are no longer wanted, so that they must be listed to be pruned: not on the pipeline's first
// placement there (nothing of it exists yet), nor when this process already pruned there for the
// same wanted set; after a restart, once. The list is the one read of an apply, and a reconcile
// that changes nothing makes none.
func (j *ApplyJob) mayHaveStaleScaledObjects(w *coordinator.Workload) bool {
	placed := false
	for _, c := range j.Pipeline.Status.Clusters {
		placed = placed || (c.Name == j.Conn.Name && c.ObservedGeneration > 0)
	}
	if !placed {
		// Nothing of the pipeline is there yet: nothing can be stale after this apply.
		j.Applier.RecordPruned(j.Conn.Name, j.Pipeline.UID, scaledObjectSet(w))
		return false
	}
	return !j.Applier.PrunedFor(j.Conn.Name, j.Pipeline.UID, scaledObjectSet(w))
}

// scaledObjectSet names the wanted ScaledObjects, as the prune record keeps them.
func scaledObjectSet(w *coordinator.Workload) string {
	var names []string
	for _, so := range w.ScaledObjects {
		names = append(names, so.Name)
	}
	return strings.Join(names, ",")
}

// applySupporting applies everything the coordinator needs before it starts.
func (j *ApplyJob) applySupporting(ctx context.Context, res *Result, w *coordinator.Workload) bool {
	if !j.boundaryAllows(res, j.workerNamesFree(ctx, w)) {
		return false
	}
	for _, build := range []func() (*ssa.Request, error){
		func() (*ssa.Request, error) { return ssa.ServiceAccount(w.CoordinatorServiceAccount) },
		func() (*ssa.Request, error) { return ssa.ServiceAccount(w.WorkerServiceAccount) },
		func() (*ssa.Request, error) { return ssa.PodDisruptionBudget(w.PodDisruptionBudget) },
		func() (*ssa.Request, error) { return ssa.Role(w.Role) },
		func() (*ssa.Request, error) { return ssa.RoleBinding(w.RoleBinding) },
		func() (*ssa.Request, error) { return ssa.Service(w.Service) },
		func() (*ssa.Request, error) { return ssa.ConfigMap(w.ConfigMap) },
	} {
		req, err := build()
		if err == nil {
			err = j.apply(ctx, res, req, j.Conn.Cached)
		}
		if !j.boundaryAllows(res, err) {
			return false
		}
	}
	return j.boundaryAllows(res, j.applyNetworkPolicy(ctx, res, w))
}

// applyNetworkPolicy applies the coordinator's NetworkPolicy when the hub renders one, and
// removes the pipeline's when it no longer does (--coordinator-network-policy turned off); the
// member cache tells whether there is one, so this costs no request when there is none.
func (j *ApplyJob) applyNetworkPolicy(ctx context.Context, res *Result, w *coordinator.Workload) error {
	if w.NetworkPolicy != nil {
		req, err := ssa.NetworkPolicy(w.NetworkPolicy)
		if err != nil {
			return err
		}
		return j.apply(ctx, res, req, j.Conn.Cached)
	}
	np := &networkingv1.NetworkPolicy{}
	err := j.reader().Get(ctx, client.ObjectKey{Namespace: j.Pipeline.Namespace, Name: coordinator.CoordinatorName(j.Pipeline.Name)}, np)
	if apierrors.IsNotFound(err) || (err == nil && np.Labels[urutauv1alpha1.LabelHubPipelineUID] != string(j.Pipeline.UID)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading NetworkPolicy %s/%s in cluster %q: %w", j.Pipeline.Namespace, np.Name, j.Conn.Name, err)
	}
	uid, rv := np.UID, np.ResourceVersion
	if err := j.Conn.Cached.Delete(ctx, np, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting NetworkPolicy %s/%s in cluster %q: %w", j.Pipeline.Namespace, np.Name, j.Conn.Name, err)
	}
	res.Wrote++
	return nil
}

// apply applies one object (applier.apply) and counts the write.
func (j *ApplyJob) apply(ctx context.Context, res *Result, req *ssa.Request, cached client.Reader) error {
	req.Guard, req.CacheMayLag = j.Guard, j.CacheMayLag
	req.BeforeWrite = func(ctx context.Context) error {
		if err := j.nsCheck.check(ctx, j); err != nil {
			return err
		}
		return j.Leader.Fresh(time.Now())
	}
	wrote, err := j.Applier.Apply(ctx, cached, j.Conn.Live, j.Conn.Cached, j.Conn.Name, j.Manager, req)
	if req.Crossed() && j.Crossed != nil {
		j.Crossed()
	}
	if wrote {
		res.Wrote++
	}
	return err
}

// secretsReady checks the Secrets the coordinator mounts, read live (the member cache holds no
// Secrets). A missing one is waited for (#504); one without its key is terminal (#250).
func (j *ApplyJob) secretsReady(ctx context.Context, res *Result, w *coordinator.Workload, reads memberReads) bool {
	read := map[string]*corev1.Secret{}
	for i, ref := range w.RequiredSecrets {
		s, err := reads.secrets[i]()
		switch {
		case members.IsUnreachable(err):
			res.Fail(fmt.Errorf("reading Secret %s/%s in cluster %q: %w", j.Pipeline.Namespace, ref.Name, j.Conn.Name, err))
			return false
		case err != nil:
			msg := fmt.Sprintf("waiting for Secret %s/%s (key %q): %v", j.Pipeline.Namespace, ref.Name, ref.Key, ErrMessage(err))
			res.Retry = true
			res.Obs.Phase, res.Obs.Message = urutauv1alpha1.ClusterPending, msg
			res.EventReason, res.EventMessage = EventSecretNotReady, msg
			return false
		case len(s.Data[ref.Key]) == 0:
			msg := fmt.Sprintf("Secret %s/%s in cluster %q has no key %q", j.Pipeline.Namespace, ref.Name, j.Conn.Name, ref.Key)
			res.terminate(urutauv1alpha1.ReasonSecretValidationFailed, j.Conn.Name, msg, EventInvalidSecret)
			return false
		}
		read[ref.Name] = s
	}
	err := j.secretsOpen(ctx, read)
	var d *tenancy.Denial
	switch {
	case errors.Is(err, errSecretMissing):
		res.Retry = true
		res.Obs.Phase, res.Obs.Message = urutauv1alpha1.ClusterPending, "waiting: "+err.Error()
		res.EventReason, res.EventMessage = EventSecretNotReady, res.Obs.Message
		return false
	case errors.As(err, &d):
		*res = Denied(j.Conn.Name, j.ClusterID, d)
		j.stopCoordinator(ctx, res, w)
		return false
	}
	return j.boundaryAllows(res, err)
}

// boundaryAllows reports a refusal of the tenancy boundary (a *tenancy.Denial) as the member's
// state, and any other error as a failure; it tells whether the apply may go on.
func (j *ApplyJob) boundaryAllows(res *Result, err error) bool {
	var d *tenancy.Denial
	var c *adopt.Conflict
	switch {
	case errors.As(err, &d):
		*res = Denied(j.Conn.Name, j.ClusterID, d)
		return false
	case errors.Is(err, errNotLeading):
		// Not a failure of the member: this replica is about to stop, another one leads.
		res.Retry = true
		res.Obs.Phase, res.Obs.Message = urutauv1alpha1.ClusterPending, "not applied: "+err.Error()
		return false
	case errors.Is(err, ErrSuperseded):
		// Not a failure: the reconcile of the newer change decides again, at once.
		res.Retry = true
		res.Obs.Phase, res.Obs.Message = urutauv1alpha1.ClusterPending, "coordinator not started: "+err.Error()
		if j.Crossed != nil {
			j.Crossed()
		}
		return false
	case errors.As(err, &c):
		// Waiting for a person (the object's owner hands it over, or it goes): not a failure to
		// back off from; a change of the object brings the pipeline back (foreignObjectRequests).
		res.Retry = true
		res.Obs.Phase, res.Obs.Message = urutauv1alpha1.ClusterDegraded, "not applied: "+c.Message
		res.EventReason, res.EventMessage = EventAdoptionConflict, res.Obs.Message
		return false
	case err != nil:
		res.Fail(err)
		return false
	}
	return true
}

// applyCoordinator applies the coordinator StatefulSet and returns it as the member holds it:
// the cached one, or the apply's answer when it was written. A write that changed the template
// moved its generation past what its controller observed, so it reads not ready until that
// controller's status update, whose watch event brings the hub back.
func (j *ApplyJob) applyCoordinator(ctx context.Context, res *Result, w *coordinator.Workload) (*appsv1.StatefulSet, bool) {
	req, err := ssa.StatefulSet(w.StatefulSet)
	if err != nil {
		res.Fail(err)
		return nil, false
	}
	req.BeforeCreate = func(ctx context.Context) error {
		if err := j.scalersOf(ctx, coordinator.CoordinatorName(j.Pipeline.Name)); err != nil {
			return err
		}
		return j.MayCreateCoordinator(ctx)
	}
	req.ConfirmAbsent = !j.LeaseWritten
	before := res.Wrote
	if err := j.apply(ctx, res, req, j.Conn.Cached); !j.boundaryAllows(res, err) {
		return nil, false
	}
	if res.Wrote == before {
		return req.Live().(*appsv1.StatefulSet), true
	}
	current, err := req.AppliedStatefulSet()
	if err != nil {
		res.Fail(err)
		return nil, false
	}
	return current, true
}

// applyScaledObjects applies the desired ScaledObjects and prunes the ones of this pipeline (by
// UID label) no longer desired, from listed. A member without KEDA's CRD skips them and says so.
func (j *ApplyJob) applyScaledObjects(ctx context.Context, w *coordinator.Workload, listed func() (*unstructured.UnstructuredList, error)) (string, int, error) {
	const noKEDA = "KEDA's ScaledObject CRD is not installed in this cluster: worker autoscaling skipped"
	var res Result
	want := sets.New[string]()
	for _, so := range w.ScaledObjects {
		want.Insert(so.Name)
		req, err := ssa.Unstructured("ScaledObject", so)
		if err == nil {
			err = j.apply(ctx, &res, req, j.Conn.Live)
		}
		switch {
		case err != nil && kedaMissing(err):
			return noKEDA, res.Wrote, nil
		case err != nil:
			return "", res.Wrote, err
		}
	}
	if listed == nil {
		return "", res.Wrote, nil
	}
	list, err := listed()
	switch {
	case err != nil && kedaMissing(err) && len(w.ScaledObjects) > 0:
		return noKEDA, res.Wrote, nil
	case err != nil && kedaMissing(err):
		return "", res.Wrote, nil
	case err != nil:
		return "", res.Wrote, fmt.Errorf("listing ScaledObjects in cluster %q: %w", j.Conn.Name, err)
	}
	pruned, err := pruneScaledObjects(ctx, j.Conn.Cached, list, want)
	if err != nil {
		return "", res.Wrote + pruned, fmt.Errorf("pruning ScaledObjects in cluster %q: %w", j.Conn.Name, err)
	}
	j.Applier.RecordPruned(j.Conn.Name, j.Pipeline.UID, scaledObjectSet(w))
	return "", res.Wrote + pruned, nil
}

// pruneScaledObjects deletes the listed ScaledObjects not wanted, each with a UID and
// resourceVersion precondition.
func pruneScaledObjects(ctx context.Context, writer client.Client, list *unstructured.UnstructuredList, want sets.Set[string]) (int, error) {
	n := 0
	for i := range list.Items {
		so := &list.Items[i]
		if want.Has(so.GetName()) || so.GetDeletionTimestamp() != nil {
			continue
		}
		uid, rv := so.GetUID(), so.GetResourceVersion()
		if err := writer.Delete(ctx, so, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return n, fmt.Errorf("ScaledObject %s: %w", so.GetName(), err)
		}
		n++
	}
	return n, nil
}

// prefetch starts read in the background and returns what waits for its result.
func prefetch[T any](read func() (T, error)) func() (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := read()
		done <- result{v, err}
	}()
	return func() (T, error) {
		r := <-done
		done <- r // a second wait gets the same answer
		return r.v, r.err
	}
}

func ErrMessage(err error) string {
	if apierrors.IsNotFound(err) {
		return "not found"
	}
	return err.Error()
}

// coordinatorReady tells whether the coordinator StatefulSet runs a ready pod of its current
// template: its controller has observed the latest spec and the updated pod is ready. A
// StatefulSet not yet observed still reports the readiness of the old pods.
func coordinatorReady(sts *appsv1.StatefulSet) bool {
	st := sts.Status
	if st.ObservedGeneration < sts.Generation || st.ReadyReplicas < 1 || st.UpdatedReplicas < 1 {
		return false
	}
	return st.UpdateRevision == "" || st.CurrentRevision == "" || st.UpdateRevision == st.CurrentRevision
}

// kedaMissing tells whether err says the member serves no ScaledObjects. Where the client has not
// mapped the kind yet that is a NoMatch error; where the CRD was removed after it was mapped, the
// API server answers 404 to the apply (which would otherwise create the object) and to the list.
func kedaMissing(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err)
}
