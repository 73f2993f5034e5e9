package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet/inventory"
)

// AnnotationKEDAPrometheusAddress on a member's inventory entry (annotation first, then label)
// overrides the hub's --keda-prometheus-address for that member.
const AnnotationKEDAPrometheusAddress = inventory.KEDAPrometheusAddressKey

// Event reasons on the CDCPipeline. The first three are the single-cluster operator's.
const (
	EventInvalidSpec        = "InvalidSpec"
	EventSecretNotReady     = "SecretNotReady"
	EventInvalidSecret      = "InvalidSecret"
	EventApplied            = "Applied"
	EventClusterUnreachable = "ClusterUnreachable"
	EventApplyFailed        = "ApplyFailed"
	EventRemoved            = "RemovedFromCluster"
	EventMoveBlocked        = "MoveBlocked"
	EventTombstoned         = "Tombstoned"
	EventTerminationCleared = "TerminationCleared"
	EventTerminated         = "Terminated"
)

func mcNameOf(member string) multicluster.ClusterName { return multicluster.ClusterName(member) }

// memberResult is the outcome of one member in one reconcile.
type memberResult struct {
	obs MemberObservation
	// wrote counts objects written (applied or deleted).
	wrote int
	// unreachable: the member did not answer; retry later.
	unreachable bool
	// timedOut: a request to the member ran out of time (memberBreaker).
	timedOut bool
	// retry: waiting for something outside the hub (a Secret); retry later, no backoff.
	retry bool
	// err is a failure the member answered with; the reconcile returns it for backoff.
	err error
	// terminal stops the pipeline (SecretValidationFailed, or an override that cannot render).
	terminal *urutauv1alpha1.Terminated
	// event is the Warning to emit when this member's state is new.
	eventReason, eventMessage string
}

// fail classifies err into the result.
func (res *memberResult) fail(err error) {
	if isUnreachable(err) {
		res.unreachable = true
		res.timedOut = isTimeout(err)
		res.obs.Phase = urutauv1alpha1.ClusterUnreachable
		res.obs.Message = "cluster does not answer: " + err.Error()
		res.eventReason = EventClusterUnreachable
		memberErrors.WithLabelValues(res.obs.Name, "unreachable").Inc()
	} else {
		res.err = err
		res.obs.Phase = urutauv1alpha1.ClusterDegraded
		res.obs.Message = err.Error()
		res.eventReason = EventApplyFailed
		memberErrors.WithLabelValues(res.obs.Name, "error").Inc()
	}
	res.eventMessage = res.obs.Message
}

// settingsFor are the render settings of member m.
func (r *CoordinatorReconciler) settingsFor(p *urutauv1alpha1.CDCPipeline, m inventory.Member) coordinator.Settings {
	addr := r.KEDAPrometheusAddress
	if v := m.Setting(AnnotationKEDAPrometheusAddress); v != "" {
		addr = v
	}
	return coordinator.Settings{
		DefaultImage:          r.Image,
		KEDAPrometheusAddress: addr,
		KEDAThreshold:         r.KEDAThreshold,
		Override:              OverrideFor(p, m.Name),
	}
}

// applyMember renders p for member m and applies it, in the single-cluster operator's order:
// ServiceAccounts, PDB, Role, RoleBinding, Service, ConfigMap, then the Secret check, the
// coordinator StatefulSet, and the ScaledObjects (with pruning).
func (r *CoordinatorReconciler) applyMember(ctx context.Context, p *urutauv1alpha1.CDCPipeline, m inventory.Member) (res memberResult) {
	res.obs = MemberObservation{Name: m.Name}
	start := time.Now()
	defer func() { memberDuration.WithLabelValues(m.Name).Observe(time.Since(start).Seconds()) }()
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", m.Name)

	// Every step from here on waits for the member: one that does not answer, or that the
	// provider has not engaged, is held off (memberBreaker) rather than waited for in every
	// reconcile.
	probe, err := r.breaker.allow(m.Name, client.ObjectKeyFromObject(p), time.Now())
	switch {
	case errors.Is(err, errSlow):
		return lateMember(p, m.Name)
	case err != nil:
		res.fail(fmt.Errorf("cluster %q: %w", m.Name, err))
		res.obs.Message, res.eventMessage = err.Error(), err.Error()
		return res
	}
	notEngaged := false
	defer func() {
		hold := ""
		switch {
		case res.timedOut:
			log.Info("cluster did not answer in time: held off", "error", res.obs.Message, "retryIn", r.RetryInterval)
			hold = r.timeoutMessage(m.Name)
			res.obs.Message, res.eventMessage = hold, hold
		case notEngaged:
			hold = res.obs.Message
		}
		r.requeue(r.breaker.done(m.Name, probe, !res.unreachable, hold, time.Now(), r.RetryInterval)...)
	}()

	cl, err := r.engagedCluster(ctx, m.Name)
	if err != nil {
		// Say what it means for a person: the usual cause of a member that never engages is its
		// inventory entry (found by test/faults with a garbage kubeconfig Secret).
		res.fail(fmt.Errorf("the hub has no connection to cluster %q: its kubeconfig Secret or ClusterProfile gives no working client, or the cluster did not answer when the hub connected (the hub's log says which): %w", m.Name, err))
		notEngaged = res.unreachable
		return res
	}
	w, err := coordinator.Render(p, r.settingsFor(p, m))
	if err != nil {
		// The hub-wide render succeeded, so this is the member's override: terminal.
		msg := fmt.Sprintf("rendering for cluster %q: %v", m.Name, err)
		res.terminal = &urutauv1alpha1.Terminated{Reason: urutauv1alpha1.ReasonInvalidSpec, Cluster: m.Name, Message: msg}
		res.obs.Phase, res.obs.Message = urutauv1alpha1.ClusterTerminated, msg
		res.eventReason, res.eventMessage = EventInvalidSpec, msg
		return res
	}
	manager := FieldManagerFor(r.FieldManager, m.Name)
	mc, err := r.memberClients.get(m.Name, cl)
	if err != nil {
		res.fail(err)
		return res
	}
	// Our objects are read from the member's cache (the applier confirms live before it writes
	// an object it applied before, so a lagging cache never turns a no-op into a write). Secrets
	// and ScaledObjects are read live; the ScaledObject list is made on every reconcile, so a dead
	// member still shows as unreachable rather than as stale success.
	cached, live, writer := mc.cached, mc.live, mc.cached

	// The live reads depend on nothing this reconcile writes, so they run while the applies do
	// rather than after them (hack/bench -concurrency 1 measured the ScaledObject list alone at a
	// median 25 ms of each member's 90 ms). A ScaledObject to prune was written by an earlier
	// reconcile, so a list taken before this one's applies sees it.
	secrets := make([]func() (*corev1.Secret, error), len(w.RequiredSecrets))
	for i, ref := range w.RequiredSecrets {
		secrets[i] = prefetch(func() (*corev1.Secret, error) {
			s := &corev1.Secret{}
			return s, live.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ref.Name}, s)
		})
	}
	scaledObjects := prefetch(func() (*unstructured.UnstructuredList, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(scaledObjectListGVK)
		return list, live.List(ctx, list, client.InNamespace(p.Namespace), client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: string(p.UID)})
	})

	var reqs []*applyRequest
	for _, build := range []func() (*applyRequest, error){
		func() (*applyRequest, error) { return serviceAccountRequest(w.CoordinatorServiceAccount) },
		func() (*applyRequest, error) { return serviceAccountRequest(w.WorkerServiceAccount) },
		func() (*applyRequest, error) { return pdbRequest(w.PodDisruptionBudget) },
		func() (*applyRequest, error) { return roleRequest(w.Role) },
		func() (*applyRequest, error) { return roleBindingRequest(w.RoleBinding) },
		func() (*applyRequest, error) { return serviceRequest(w.Service) },
		func() (*applyRequest, error) { return configMapRequest(w.ConfigMap) },
	} {
		req, err := build()
		if err != nil {
			res.fail(err)
			return res
		}
		reqs = append(reqs, req)
	}
	for _, req := range reqs {
		wrote, err := r.apply(ctx, p, cached, live, writer, m.Name, manager, req)
		if err != nil {
			res.fail(err)
			return res
		}
		if wrote {
			res.wrote++
		}
	}

	// Secrets are read live (never cached: the member cache holds only our objects).
	for i, ref := range w.RequiredSecrets {
		s, err := secrets[i]()
		switch {
		case isUnreachable(err):
			res.fail(fmt.Errorf("reading Secret %s/%s in cluster %q: %w", p.Namespace, ref.Name, m.Name, err))
			return res
		case err != nil:
			// Missing, or unreadable: transient (#504), retried.
			msg := fmt.Sprintf("waiting for Secret %s/%s (key %q): %v", p.Namespace, ref.Name, ref.Key, errMessage(err))
			log.V(1).Info("secret not ready", "secret", ref.Name)
			res.retry = true
			res.obs.Phase, res.obs.Message = urutauv1alpha1.ClusterPending, msg
			res.eventReason, res.eventMessage = EventSecretNotReady, msg
			return res
		case len(s.Data[ref.Key]) == 0:
			// Present but incomplete (#250): retrying cannot fix it.
			msg := fmt.Sprintf("Secret %s/%s in cluster %q has no key %q", p.Namespace, ref.Name, m.Name, ref.Key)
			res.terminal = &urutauv1alpha1.Terminated{Reason: urutauv1alpha1.ReasonSecretValidationFailed, Cluster: m.Name, Message: msg}
			res.obs.Phase, res.obs.Message = urutauv1alpha1.ClusterTerminated, msg
			res.eventReason, res.eventMessage = EventInvalidSecret, msg
			return res
		}
	}

	sts, err := statefulSetRequest(w.StatefulSet)
	if err != nil {
		res.fail(err)
		return res
	}
	wrote, err := r.apply(ctx, p, cached, live, writer, m.Name, manager, sts)
	if err != nil {
		res.fail(err)
		return res
	}
	// Readiness comes from the StatefulSet as the member holds it: the cached one, or the apply's
	// answer when we wrote it. A write that changed the template moved its generation past what
	// its controller observed, so it reads not ready until that controller's status update, whose
	// watch event brings the hub back; a write that left the spec alone reads ready at once, so
	// the write's own echo needs no reconcile.
	current := sts.live.(*appsv1.StatefulSet)
	if wrote {
		res.wrote++
		if current, err = appliedStatefulSet(sts.desired); err != nil {
			res.fail(err)
			return res
		}
	}
	res.obs.ReadyReplicas = current.Status.ReadyReplicas
	coordinatorIsReady := coordinatorReady(current)

	kedaMsg, n, err := r.applyScaledObjects(ctx, live, writer, p, m.Name, manager, w, scaledObjects)
	if err != nil {
		res.fail(err)
		return res
	}
	res.wrote += n

	res.obs.AppliedGeneration = p.Generation
	res.obs.Phase = urutauv1alpha1.ClusterApplied
	if coordinatorIsReady {
		res.obs.Phase = urutauv1alpha1.ClusterReady
	}
	res.obs.Message = kedaMsg
	if res.wrote > 0 {
		log.Info("applied", "objects", res.wrote, "fieldManager", manager)
	}
	return res
}

// apply applies one object of p to member (applier.apply), and has p reconciled again when a
// change by someone else crossed the write.
func (r *CoordinatorReconciler) apply(ctx context.Context, p *urutauv1alpha1.CDCPipeline, cached, live client.Reader, writer client.Client, member, manager string, req *applyRequest) (bool, error) {
	wrote, err := r.applier.apply(ctx, cached, live, writer, member, manager, req)
	if req.crossed {
		r.lookAgain.Store(client.ObjectKeyFromObject(p), true)
	}
	return wrote, err
}

// applyScaledObjects applies the desired ScaledObjects and prunes the ones of this pipeline (by
// UID label) no longer desired, from listed (made before the applies). A member without KEDA's
// CRD skips them and says so.
func (r *CoordinatorReconciler) applyScaledObjects(ctx context.Context, live client.Reader, writer client.Client, p *urutauv1alpha1.CDCPipeline, member, manager string, w *coordinator.Workload, listed func() (*unstructured.UnstructuredList, error)) (string, int, error) {
	const noKEDA = "KEDA's ScaledObject CRD is not installed in this cluster: worker autoscaling skipped"
	wrote := 0
	want := sets.New[string]()
	for _, so := range w.ScaledObjects {
		want.Insert(so.Name)
		req, err := unstructuredRequest("ScaledObject", so)
		if err != nil {
			return "", wrote, err
		}
		ok, err := r.apply(ctx, p, live, live, writer, member, manager, req)
		if err != nil {
			if kedaMissing(err) {
				return noKEDA, wrote, nil
			}
			return "", wrote, err
		}
		if ok {
			wrote++
		}
	}
	list, err := listed()
	if err != nil {
		if kedaMissing(err) {
			if len(w.ScaledObjects) > 0 {
				return noKEDA, wrote, nil
			}
			return "", wrote, nil
		}
		return "", wrote, fmt.Errorf("listing ScaledObjects in cluster %q: %w", member, err)
	}
	for i := range list.Items {
		so := &list.Items[i]
		if want.Has(so.GetName()) || so.GetDeletionTimestamp() != nil {
			continue
		}
		uid, rv := so.GetUID(), so.GetResourceVersion()
		if err := writer.Delete(ctx, so, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return "", wrote, fmt.Errorf("pruning ScaledObject %s/%s in cluster %q: %w", p.Namespace, so.GetName(), member, err)
		}
		wrote++
	}
	return "", wrote, nil
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

// departedResult is the outcome of cleaning a member that is no longer selected, or of a
// pipeline being deleted.
type departedResult struct {
	state   DepartedState
	deleted int
	message string
	err     error
}

// cleanMember empties member of p's objects and reports what is left.
func (r *CoordinatorReconciler) cleanMember(ctx context.Context, p *urutauv1alpha1.CDCPipeline, member string) departedResult {
	start := time.Now()
	defer func() { memberDuration.WithLabelValues(member).Observe(time.Since(start).Seconds()) }()
	probe, err := r.breaker.allow(member, client.ObjectKeyFromObject(p), time.Now())
	switch {
	case errors.Is(err, errSlow):
		return lateDeparted(member)
	case err != nil:
		memberErrors.WithLabelValues(member, "unreachable").Inc()
		return departedResult{state: DepartedUnreachable, message: err.Error()}
	}
	// Every way out tells the breaker how the member fared.
	answered, hold := false, ""
	defer func() {
		r.requeue(r.breaker.done(member, probe, answered, hold, time.Now(), r.RetryInterval)...)
	}()
	cl, err := r.engagedCluster(ctx, member)
	if err != nil {
		memberErrors.WithLabelValues(member, "unreachable").Inc()
		hold = "cluster is not engaged: " + err.Error()
		return departedResult{state: DepartedUnreachable, message: hold}
	}
	mc, err := r.memberClients.get(member, cl)
	if err != nil {
		memberErrors.WithLabelValues(member, "error").Inc()
		return departedResult{state: DepartedHolding, message: err.Error(), err: err}
	}
	res, err := cleanupMember(ctx, mc.live, mc.cached, p.Namespace, p.UID, p.Name)
	timedOut := isUnreachable(err) && isTimeout(err)
	answered = !isUnreachable(err)
	if timedOut {
		hold = r.timeoutMessage(member)
	}
	switch {
	case timedOut:
		memberErrors.WithLabelValues(member, "unreachable").Inc()
		ctrl.LoggerFrom(ctx).Info("cluster did not answer in time: held off", "error", err.Error(), "retryIn", r.RetryInterval)
		return departedResult{state: DepartedUnreachable, deleted: res.deleted, message: hold}
	case isUnreachable(err):
		memberErrors.WithLabelValues(member, "unreachable").Inc()
		return departedResult{state: DepartedUnreachable, deleted: res.deleted, message: "cluster does not answer: " + err.Error()}
	case err != nil:
		memberErrors.WithLabelValues(member, "error").Inc()
		return departedResult{state: DepartedHolding, deleted: res.deleted, message: err.Error(), err: err}
	}
	out := departedResult{state: res.state(), deleted: res.deleted}
	switch out.state {
	case DepartedHolding:
		out.message = fmt.Sprintf("removing: waiting for %d coordinator StatefulSet(s)/pod(s) to go", res.coordinator)
	case DepartedDraining:
		out.message = fmt.Sprintf("removing: %d object(s) left", res.others)
	}
	return out
}

// lateMember is what a reconcile reports for member m of p when it did not wait for its work
// there (fanOut, memberBreaker): what status said, when it was about this generation, or Pending.
// The pipeline is reconciled again when that work ends.
func lateMember(p *urutauv1alpha1.CDCPipeline, m string) memberResult {
	res := memberResult{retry: true, obs: MemberObservation{Name: m, Phase: urutauv1alpha1.ClusterPending,
		Message: fmt.Sprintf("waiting for cluster %q to answer; the hub goes on with the other clusters meanwhile", m)}}
	for _, c := range p.Status.Clusters {
		if c.Name == m && c.ObservedGeneration == p.Generation && c.Phase != "" {
			res.obs.Phase, res.obs.Message, res.obs.ReadyReplicas = c.Phase, c.Message, c.CoordinatorReadyReplicas
		}
	}
	return res
}

// lateDeparted is what a reconcile reports for a departed member whose cleanup it did not wait
// for: still removing, so nothing starts elsewhere meanwhile (stop before start).
func lateDeparted(m string) departedResult {
	return departedResult{state: DepartedHolding, message: fmt.Sprintf("removing: waiting for cluster %q to answer", m)}
}

func errMessage(err error) string {
	if apierrors.IsNotFound(err) {
		return "not found"
	}
	return err.Error()
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// nowRFC3339 is a terminated.at value.
func nowRFC3339() string { return time.Now().UTC().Format(time.RFC3339) }

// statusNow is a status timestamp; whole seconds, as the API server stores them, so a value
// read back compares equal.
func statusNow() metav1.Time { return metav1.Now().Rfc3339Copy() }

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

// appliedStatefulSet reads the API server's answer to a StatefulSet apply (the client fills the
// apply configuration with it).
func appliedStatefulSet(desired runtime.ApplyConfiguration) (*appsv1.StatefulSet, error) {
	ac, ok := desired.(*appsv1ac.StatefulSetApplyConfiguration)
	if !ok {
		return nil, fmt.Errorf("internal error: StatefulSet apply configuration is a %T", desired)
	}
	b, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("reading the applied StatefulSet: %w", err)
	}
	out := &appsv1.StatefulSet{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("reading the applied StatefulSet: %w", err)
	}
	return out, nil
}

// kedaMissing tells whether err says the member serves no ScaledObjects. Where the client has not
// mapped the kind yet that is a NoMatch error; where the CRD was removed after it was mapped, the
// API server answers 404 to the apply (which would otherwise create the object) and to the list.
func kedaMissing(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err)
}
