package fleet

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/status"
)

// gate stops a reconcile that must write nothing to any member, and sets the status that says
// why: a termination in force (set by a person, or here for a spec that cannot render), or a
// source identity that changed while another identity's lease still records the pipeline.
func (r *CoordinatorReconciler) gate(p *urutauv1alpha1.CDCPipeline, w *world) (stop bool) {
	terminal := p.Status.Terminated != nil || w.specErr != nil
	if terminal && r.running.Busy(client.ObjectKeyFromObject(p)) {
		// Work an earlier reconcile started on a member (a slow member's apply or cleanup) is
		// still in flight: acknowledging the termination now would promise no more member writes
		// while it still writes. Its end brings the pipeline back (fanOut.options, End).
		return true
	}
	switch {
	case p.Status.Terminated == nil && w.specErr != nil:
		terminate(r.event, p, w, &urutauv1alpha1.Terminated{Reason: urutauv1alpha1.ReasonInvalidSpec, Message: w.specErr.Error()}, EventInvalidSpec)
	case p.Status.Terminated != nil:
		showTerminated(r.event, p, w)
	case len(w.elsewhere) > 0:
		showSourceChanged(p, w)
	case p.Spec.Placement.Fenced && r.FenceImage == "":
		showNoFenceImage(p, w)
	default:
		return false
	}
	return true
}

// clearPassedTermination removes a termination the spec moved past (the single-cluster
// operator's rule, its issue #248). It is the one status write outside a reconcile's own, and
// locked: acting on a stale read here would clear a termination set since.
func (r *CoordinatorReconciler) clearPassedTermination(ctx context.Context, p *urutauv1alpha1.CDCPipeline) error {
	t := p.Status.Terminated
	if t == nil || t.ObservedGeneration == 0 || p.Generation <= t.ObservedGeneration {
		return nil
	}
	orig := p.DeepCopy()
	p.Status.Terminated = nil
	if err := r.writes.status(ctx, orig, p, true); err != nil {
		return err
	}
	r.event(p, corev1.EventTypeNormal, EventTerminationCleared, "Reconcile",
		"the spec changed (generation %d > %d): termination %q cleared", p.Generation, t.ObservedGeneration, t.Reason)
	return nil
}

// terminate records a hub-side termination and reports it.
func terminate(emit emitFunc, p *urutauv1alpha1.CDCPipeline, w *world, t *urutauv1alpha1.Terminated, reason string) {
	t.At = nowRFC3339()
	t.ObservedGeneration = p.Generation
	emit(p, corev1.EventTypeWarning, reason, "Reconcile", "%s", t.Message)
	p.Status.Terminated = t
	showTerminated(emit, p, w)
}

// showTerminated sets the status of a terminated pipeline (hub writes only).
func showTerminated(emit emitFunc, p *urutauv1alpha1.CDCPipeline, w *world) {
	nt := p.Status.Terminated.DeepCopy()
	if nt.ObservedGeneration == 0 {
		// A person set it without a generation: it applies to the current one. Said once, when
		// the hub first sees it (hub-set terminations have their own event).
		nt.ObservedGeneration = p.Generation
		emit(p, corev1.EventTypeWarning, EventTerminated, "Reconcile",
			"terminated (%s): no member is written until status.terminated is removed or the spec changes", nt.Reason)
	}
	obs := frozenObservation(p, w, urutauv1alpha1.ClusterTerminated,
		"terminated: the hub writes nothing here until status.terminated is removed or the spec changes")
	obs.Terminated = nt
	p.Status = status.Compute(p.Status, obs)
}

// showSourceChanged stalls a pipeline whose reader identity changed while a lease of the old one
// still records it: running the new identity next to the old one's readers would break the
// one-reader rule, and the old readers were never stopped.
func showSourceChanged(p *urutauv1alpha1.CDCPipeline, w *world) {
	obs := frozenObservation(p, w, urutauv1alpha1.ClusterPending, "the source identity changed: nothing is applied until it is changed back")
	obs.SourceChanged = fmt.Sprintf("the source's reader identity changed while ReaderLease(s) %s still record this pipeline's readers: change the source back, or create a new CDCPipeline for the new source and delete this one",
		strings.Join(w.elsewhere, ", "))
	p.Status = status.Compute(p.Status, obs)
}

// showNoFenceImage stalls a fenced pipeline on a hub that has no --fence-image: its coordinator
// cannot be rendered under the fence, and running it without would break the promise the fence
// makes (a move away from an unreachable member completing by itself).
func showNoFenceImage(p *urutauv1alpha1.CDCPipeline, w *world) {
	obs := frozenObservation(p, w, urutauv1alpha1.ClusterPending, "fenced, and the hub has no --fence-image: nothing is applied")
	obs.HubMisconfigured = "spec.placement.fenced is true, but the hub runs without --fence-image (the image that holds /fence, the hub's own): nothing is applied until the hub is started with it, or the placement is no longer fenced"
	p.Status = status.Compute(p.Status, obs)
}

// frozenObservation shows every member the pipeline is placed on or recorded in with one phase
// and message, keeping what was known of its coordinator: nothing was asked of the members.
func frozenObservation(p *urutauv1alpha1.CDCPipeline, w *world, phase urutauv1alpha1.ClusterPhase, msg string) status.Observation {
	shown := sets.New(w.selected...).Insert(p.Status.Inventory...)
	for _, e := range lease.OwnEntries(w.lease, p.UID) {
		shown.Insert(e.Cluster)
	}
	prev := map[string]urutauv1alpha1.ClusterStatus{}
	for _, c := range p.Status.Clusters {
		prev[c.Name] = c
	}
	obs := status.Observation{
		Generation: p.Generation, Now: status.Now(), Selected: w.selected, Unknown: w.unknown,
		Inventory: p.Status.Inventory, LeaseName: p.Status.ReaderLease, SpecHash: w.specHash,
	}
	for _, n := range sets.List(shown) {
		obs.Members = append(obs.Members, status.MemberObservation{
			Name: n, Phase: phase, Message: msg,
			ReadyReplicas: prev[n].CoordinatorReadyReplicas, ClusterID: prev[n].ClusterID,
		})
	}
	return obs
}
