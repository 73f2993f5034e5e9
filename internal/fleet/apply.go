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
	"github.com/urutau-io/fleet/internal/lease"
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

// rollout applies a pipeline to the members its placement lets it run on: each member's work is
// a memberwork.ApplyJob, run concurrently (members.FanOut) and spaced by backoff after errors.
type rollout struct {
	members  *members.Set
	fanOut   *fanOut
	book     *memberBook
	render   *renderDefaults
	applier  *ssa.Applier
	shared   *memberwork.SharedReads
	writes   *hubWrites
	leases   *lease.Store
	liveness *members.Liveness
	leader   *memberwork.LeaderFence
	// hub reads the hub's API server itself (stillCurrent); fieldManager is the base manager.
	hub          client.Reader
	fieldManager string
}

// all applies the pipeline to every member the placement lets it run on, concurrently, each on
// its own: a member that is down, slow or backing off after an error is reported as it is and
// not waited for, and the others go on (isolation).
func (ro *rollout) all(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, pl *placed) map[string]memberwork.Result {
	key := client.ObjectKeyFromObject(p)
	done, late := members.FanOut(ctx, ro.fanOut.options(members.PipelineWakeKey(p), "apply"), pl.decision.Run, func(ctx context.Context, m string) memberwork.Result {
		return ro.on(ctx, p, w, pl, m)
	}, func(m string, err error) memberwork.Result {
		res := memberwork.Result{Obs: status.MemberObservation{Name: m}}
		res.Fail(err)
		return res
	})
	for _, m := range late {
		done[m] = lateMember(p, m, ro.members.KnownIdentity(m))
	}
	now := time.Now()
	for m, res := range done {
		k := members.WorkKey{Pipeline: key, Member: m}
		switch {
		case res.BackingOff:
		case res.Err != nil:
			res.RetryIn = ro.book.backoff.Failed(k, res.Obs, now)
			done[m] = res
		default:
			ro.book.backoff.Succeeded(k)
		}
	}
	return done
}

// on is the work on one member: skipped while it is down or backing off, else a memberwork.ApplyJob.
func (ro *rollout) on(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, pl *placed, m string) memberwork.Result {
	if d := w.denied[m]; d != nil {
		return memberwork.Denied(m, w.ids[m], d)
	}
	if obs, left, waiting := ro.book.backoff.Waiting(members.WorkKey{Pipeline: client.ObjectKeyFromObject(p), Member: m}, time.Now()); waiting {
		return memberwork.Result{Obs: obs, BackingOff: true, RetryIn: left}
	}
	if down, msg := ro.members.Down(m); down {
		res := memberwork.Result{Obs: status.MemberObservation{Name: m, ClusterID: w.ids[m]}}
		res.Fail(fmt.Errorf("cluster %q %w: %s", m, members.ErrDown, msg))
		res.Obs.Message, res.EventMessage = msg, msg
		return res
	}
	c, err := ro.members.Conn(ctx, m)
	if err == nil {
		err = ro.members.SameCluster(ctx, c, w.ids[m])
	}
	if err != nil {
		res := memberwork.Result{Obs: status.MemberObservation{Name: m, ClusterID: w.ids[m]}}
		res.Fail(err)
		return res
	}
	job := &memberwork.ApplyJob{
		Pipeline: p, Conn: c, ClusterID: w.ids[m], Settings: ro.render.settingsFor(p, w.inventory[m], w.inline),
		Manager: ssa.FieldManagerFor(ro.fieldManager, m), Applier: ro.applier, Shared: ro.shared,
		Crossed:  func() { ro.writes.crossed(client.ObjectKeyFromObject(p)) },
		Boundary: w.boundary, HubNS: w.hubNS, Member: w.inventory[m], LeaseWritten: pl.wrote, Leader: ro.leader,
		CacheMayLag: ro.liveness.CacheMayLag(ro.members.Host(m), time.Now()),
		Guard:       memberwork.GuardAdoption(p),
	}
	job.MayCreateCoordinator = func(ctx context.Context) error {
		if err := stillCurrent(ctx, ro.hub, p); err != nil || pl.wrote {
			return err
		}
		return ro.leases.MayCreateCoordinator(ctx, w.leaseName, p.UID, m, w.ids[m])
	}
	res := job.Run(ctx)
	if res.TimedOut {
		msg := ro.book.timedOut(m)
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
