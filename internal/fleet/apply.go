package fleet

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fencelease"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/placement"
	"github.com/urutau-io/fleet/internal/spec"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/status"
)

// AnnotationKEDAPrometheusAddress on a member's inventory entry (annotation first, then label)
// overrides the hub's --keda-prometheus-address for that member.
const AnnotationKEDAPrometheusAddress = inventory.KEDAPrometheusAddressKey

// applyAll applies the pipeline to every member the placement lets it run on, concurrently, each
// on its own: a member that is down, slow or backing off after an error is reported as it is and
// not waited for, and the others go on (isolation).
func (r *CoordinatorReconciler) applyAll(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, pl *placed) map[string]memberwork.Result {
	key := client.ObjectKeyFromObject(p)
	done, late := members.FanOut(ctx, r.fanOut.options(members.PipelineWakeKey(p), "apply"), pl.decision.Run, func(ctx context.Context, m string) memberwork.Result {
		return r.applyOn(ctx, p, w, pl, m)
	}, func(m string, err error) memberwork.Result {
		res := memberwork.Result{Obs: status.MemberObservation{Name: m}}
		res.Fail(err)
		return res
	})
	for _, m := range late {
		done[m] = lateMember(p, m, r.members.KnownIdentity(m))
	}
	now := time.Now()
	for m, res := range done {
		k := members.WorkKey{Pipeline: key, Member: m}
		switch {
		case res.BackingOff:
		case res.Err != nil:
			res.RetryIn = r.backoff.Failed(k, res.Obs, now)
			done[m] = res
		default:
			r.backoff.Succeeded(k)
		}
	}
	return done
}

// applyOn is the work on one member: skipped while it is down or backing off, else a memberwork.ApplyJob.
func (r *CoordinatorReconciler) applyOn(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, pl *placed, m string) memberwork.Result {
	if d := w.denied[m]; d != nil {
		return memberwork.Denied(m, w.ids[m], d)
	}
	if obs, left, waiting := r.backoff.Waiting(members.WorkKey{Pipeline: client.ObjectKeyFromObject(p), Member: m}, time.Now()); waiting {
		return memberwork.Result{Obs: obs, BackingOff: true, RetryIn: left}
	}
	if down, msg := r.members.Down(m); down {
		res := memberwork.Result{Obs: status.MemberObservation{Name: m, ClusterID: w.ids[m]}}
		res.Fail(fmt.Errorf("cluster %q %w: %s", m, members.ErrDown, msg))
		res.Obs.Message, res.EventMessage = msg, msg
		return res
	}
	c, err := r.members.Conn(ctx, m)
	if err == nil {
		err = r.members.SameCluster(ctx, c, w.ids[m])
	}
	if err != nil {
		res := memberwork.Result{Obs: status.MemberObservation{Name: m, ClusterID: w.ids[m]}}
		res.Fail(err)
		return res
	}
	job := &memberwork.ApplyJob{
		Pipeline: p, Conn: c, ClusterID: w.ids[m], Settings: r.render.settingsFor(p, w.inventory[m], w.inline),
		Manager: ssa.FieldManagerFor(r.FieldManager, m), Applier: &r.applier, Shared: &r.shared,
		Crossed:  func() { r.lookAgain.Store(client.ObjectKeyFromObject(p), true) },
		Boundary: w.boundary, HubNS: w.hubNS, Member: w.inventory[m], LeaseWritten: pl.wrote, Leader: r.Leader,
		CacheMayLag: r.Liveness.CacheMayLag(r.members.Host(m), time.Now()),
		Guard:       memberwork.GuardAdoption(p),
	}
	job.MayCreateCoordinator = func(ctx context.Context) error {
		if err := stillCurrent(ctx, r.APIReader, p); err != nil || pl.wrote {
			return err
		}
		return r.leases.MayCreateCoordinator(ctx, w.leaseName, p.UID, m, w.ids[m])
	}
	res := job.Run(ctx)
	if res.TimedOut {
		msg := r.markTimedOut(m)
		ctrl.LoggerFrom(ctx).Info("cluster did not answer in time: marked down")
		res.Obs.Message, res.EventMessage = msg, msg
	}
	return res
}

// renderDefaults are the hub's render settings (--coordinator-image, --keda-*,
// --coordinator-network-policy, the fence's), which a member's inventory entry may refine.
type renderDefaults struct {
	image, kedaAddress, kedaThreshold string
	networkPolicy                     bool
	fence                             fencelease.Config
}

// settingsFor are the render settings of member m; parsed is the pipeline's definition, parsed
// once by this reconcile.
func (d renderDefaults) settingsFor(p *urutauv1alpha1.CDCPipeline, m inventory.Member, parsed *spec.Inline) coordinator.Settings {
	addr := d.kedaAddress
	if v := m.Setting(AnnotationKEDAPrometheusAddress); v != "" {
		addr = v
	}
	return coordinator.Settings{
		DefaultImage:          d.image,
		KEDAPrometheusAddress: addr,
		KEDAThreshold:         d.kedaThreshold,
		Override:              placement.OverrideFor(p, m.Name),
		NetworkPolicy:         d.networkPolicy,
		Parsed:                parsed,
		Fence:                 d.fence.Render(p),
	}
}

// lateMember is what a reconcile reports for member m when it stopped waiting for its work there
// (members.FanOut): it does not answer. The message is the same every time, so a member that stays hung
// makes one transition in the status, not one per reconcile.
func lateMember(p *urutauv1alpha1.CDCPipeline, m, id string) memberwork.Result {
	msg := fmt.Sprintf("cluster %q does not answer its requests; the hub goes on with the other clusters and tries it again when it answers", m)
	res := memberwork.Result{Unreachable: true, Obs: status.MemberObservation{Name: m, ClusterID: id, Phase: urutauv1alpha1.ClusterUnreachable, Message: msg}}
	for _, c := range p.Status.Clusters {
		if c.Name == m {
			res.Obs.ReadyReplicas = c.CoordinatorReadyReplicas
		}
	}
	return res
}

// markTimedOut records that member's requests time out: it is down until a health check finds it
// answering (members.Monitor), and the message says so, the same for every request and pipeline.
func (r *CoordinatorReconciler) markTimedOut(member string) string {
	msg := fmt.Sprintf("cluster %q does not answer: its requests time out (--member-timeout %s); the hub checks it every %s and does not wait for it meanwhile", member, r.MemberTimeout, r.HealthInterval)
	if r.members.SetHealth(member, members.Health{Checked: true, Message: msg}) {
		r.requeue(r.lookup.pipelinesOn(context.Background(), member)...)
	}
	return msg
}

// stillCurrent confirms, with a quorum read of the hub, that p is still the pipeline as this reconcile read
// it (same UID and generation, not being deleted) before a coordinator StatefulSet is created:
// that creation starts a reader, and an apply still running after the placement moved away from
// its member (chaos seed 70065: [b,c] then [a] then [b], c's StatefulSet created 0.3 s after c
// left) would start one where the pipeline no longer runs. The next reconcile decides again.
func stillCurrent(ctx context.Context, hub client.Reader, p *urutauv1alpha1.CDCPipeline) error {
	got := &urutauv1alpha1.CDCPipeline{}
	err := hub.Get(ctx, client.ObjectKeyFromObject(p), got)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: it is gone", memberwork.ErrSuperseded)
	case err != nil:
		return fmt.Errorf("confirming CDCPipeline %s/%s before starting its coordinator: %w", p.Namespace, p.Name, err)
	case got.UID != p.UID:
		return fmt.Errorf("%w: it was re-created", memberwork.ErrSuperseded)
	case got.DeletionTimestamp != nil:
		return fmt.Errorf("%w: it is being deleted", memberwork.ErrSuperseded)
	case got.Generation != p.Generation:
		return fmt.Errorf("%w: generation %d is now %d", memberwork.ErrSuperseded, p.Generation, got.Generation)
	}
	return nil
}
