package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/ssa"
)

// The hub's side of the fence (docs/failover.md). For each ReaderLease entry of a fenced
// placement that is Active and Renewing, the hub renews the pipeline's fence Lease in that member
// every FenceTTL/4; the coordinator there runs only while it sees renewals (cmd/fence). Once the
// pipeline leaves the member, the hub stops renewing and the bound starts: every renewal the hub
// ever sent was written no later than when it was acknowledged, or, for one that got no answer,
// members.WriteLanding after it was sent; so FenceTTL+FenceGrace after the latest of those
// instants, plus a margin, no coordinator of that placement runs there, whether or not the hub
// can reach the member. All instants are on the hub's monotonic clock: nothing here compares a
// clock of the hub with one of the member.

// Defaults of the fence.
const (
	// DefaultFenceTTL is how long a fenced coordinator runs after the last renewal it saw.
	DefaultFenceTTL = 30 * time.Second
	// DefaultFenceGrace is how long it has between SIGTERM and SIGKILL.
	DefaultFenceGrace = 15 * time.Second
	// DefaultFenceMargin is what the hub waits beyond the fence's bound: the drift between the
	// hub's and the pod's clock rates over the bound, the fence's loop, and a process's death.
	DefaultFenceMargin = 10 * time.Second
)

// fenceConfig is the fence as the hub renders and renews it.
type fenceConfig struct {
	image              string
	ttl, grace, margin time.Duration
}

func (c fenceConfig) bound() time.Duration { return c.ttl + c.grace }

// every is how often a fence Lease is renewed: four renewals per ttl, so one or two lost
// requests do not stop a coordinator.
func (c fenceConfig) every() time.Duration { return c.ttl / 4 }

// render is the coordinator.Fence of a fenced placement, nil for an unfenced one.
func (c fenceConfig) render(p *urutauv1alpha1.CDCPipeline) *coordinator.Fence {
	if !p.Spec.Placement.Fenced {
		return nil
	}
	return &coordinator.Fence{Image: c.image, TTL: c.ttl, Grace: c.grace}
}

// fenceTarget is one fence Lease to renew: pipeline's, in its namespace on member.
type fenceTarget struct {
	member, clusterID string
	pipeline          urutauv1alpha1.PipelineRef
}

func targetOf(e urutauv1alpha1.LeaseMember) fenceTarget {
	return fenceTarget{member: e.Cluster, clusterID: e.ClusterID,
		pipeline: urutauv1alpha1.PipelineRef{Namespace: e.PipelineNamespace, Name: e.PipelineName, UID: e.PipelineUID}}
}

// fenceRecord is what the hub knows of its renewals of one fence Lease.
type fenceRecord struct {
	target   fenceTarget
	renewing bool
	// landed is the latest instant at which a renewal the hub sent may have been written.
	landed time.Time
	// inflight is when the renewal in flight was sent; zero when none is.
	inflight time.Time
}

// mayLandUntil is landed, counting the renewal in flight as one that gets no answer.
func (f *fenceRecord) mayLandUntil() time.Time {
	if !f.inflight.IsZero() {
		return latest(f.landed, f.inflight.Add(members.WriteLanding))
	}
	return f.landed
}

// fenceRenewer renews the fence Leases of the placements the hub holds, and tells when a
// placement it stopped renewing is drained by the fence alone. Its records are the state kept
// between reconciles (doc.go): in memory only.
//
// What a previous leader (or this hub before a restart) sent is not in memory: every entry with
// a fence that the ReaderLeases hold when the renewer starts counts as renewed until
// members.WriteLanding after that. An entry first seen later was written by this leader, and it
// sends a renewal only after writing the entry, so none was sent before its record exists. Until
// the renewer has read the leases, a record first seen counts as renewed members.WriteLanding from
// then.
type fenceRenewer struct {
	cfg fenceConfig
	// renew writes one renewal; down tells a member known not to answer (not tried).
	renew func(ctx context.Context, t fenceTarget) error
	down  func(member string) bool
	// bootstrap lists the entries of the ReaderLeases that have a fence, read live when the hub
	// starts leading; the Active, Renewing ones are renewed before their pipelines are reconciled.
	bootstrap func(ctx context.Context) ([]urutauv1alpha1.LeaseMember, error)
	timeout   time.Duration
	now       func() time.Time

	mu      sync.Mutex
	records map[lease.Key]*fenceRecord
	// bootstrapped: the leases were read; records first seen from then on start with no renewal.
	bootstrapped bool
	kick         chan struct{}
}

func newFenceRenewer(cfg fenceConfig) *fenceRenewer {
	return &fenceRenewer{cfg: cfg, now: time.Now, records: map[lease.Key]*fenceRecord{}, kick: make(chan struct{}, 1)}
}

// record returns the record of k; one made before the leases were read counts as renewed until
// members.WriteLanding from now.
func (f *fenceRenewer) record(k lease.Key, t fenceTarget) *fenceRecord {
	rec := f.records[k]
	if rec == nil {
		rec = &fenceRecord{target: t}
		if !f.bootstrapped {
			rec.landed = f.now().Add(members.WriteLanding)
		}
		f.records[k] = rec
	}
	return rec
}

// adopt records what the ReaderLeases say when the renewer starts: each entry with a fence may
// have been renewed by a previous leader until members.WriteLanding from now, and is renewed from
// now on when Active and Renewing.
func (f *fenceRenewer) adopt(entries []urutauv1alpha1.LeaseMember) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range entries {
		rec := f.record(lease.KeyOf(e), targetOf(e))
		rec.landed = latest(rec.landed, f.now().Add(members.WriteLanding))
		if e.State == urutauv1alpha1.LeaseMemberActive && e.Fence.Renewing {
			rec.renewing = true
		}
	}
	f.bootstrapped = true
}

// hold has the hub renew the fence Lease of entry e (the pipeline is placed there), at once and
// then every cfg.every().
func (f *fenceRenewer) hold(e urutauv1alpha1.LeaseMember) {
	f.mu.Lock()
	rec := f.record(lease.KeyOf(e), targetOf(e))
	was := rec.renewing
	rec.renewing, rec.target = true, targetOf(e)
	f.mu.Unlock()
	if !was {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
}

// release stops the renewals of entry e's fence Lease: from now on no renewal is sent, and the
// bound runs from the last one that may land. It must come before the lease records the entry
// as no longer Renewing, and before drainedAt is asked.
func (f *fenceRenewer) release(e urutauv1alpha1.LeaseMember) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(lease.KeyOf(e), targetOf(e)).renewing = false
}

// drainedAt is when no coordinator of entry e can run any more, by the fence alone: the bound
// recorded in the entry plus the margin after the last renewal that may land. ok is false while
// the hub renews it.
func (f *fenceRenewer) drainedAt(e urutauv1alpha1.LeaseMember) (at time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.record(lease.KeyOf(e), targetOf(e))
	if rec.renewing || e.Fence == nil {
		return time.Time{}, false
	}
	bound := time.Duration(e.Fence.BoundSeconds) * time.Second
	return rec.mayLandUntil().Add(bound + f.cfg.margin), true
}

// forget drops what is kept about an entry that no longer exists.
func (f *fenceRenewer) forget(k lease.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rec := f.records[k]; rec != nil && !rec.renewing && rec.inflight.IsZero() {
		delete(f.records, k)
	}
}

// Start renews until ctx ends (a manager Runnable, on the leader only).
func (f *fenceRenewer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("fence")
	if f.bootstrap != nil {
		entries, err := f.bootstrap(ctx)
		if err != nil {
			// Every record then counts as renewed until members.WriteLanding after it is first seen.
			log.Error(err, "Reading the fenced placements to renew; they are renewed once their pipelines are reconciled")
		} else {
			f.adopt(entries)
		}
	}
	tick := time.NewTicker(f.cfg.every())
	defer tick.Stop()
	for {
		f.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-f.kick:
		}
	}
}

// NeedLeaderElection: only the leader renews.
func (f *fenceRenewer) NeedLeaderElection() bool { return true }

// round sends one renewal to each fence Lease the hub holds, each in its own goroutine, skipping
// members known not to answer and those whose last renewal is still in flight.
func (f *fenceRenewer) round(ctx context.Context) {
	f.mu.Lock()
	var due []lease.Key
	for k, rec := range f.records {
		if rec.renewing && rec.inflight.IsZero() && (f.down == nil || !f.down(rec.target.member)) {
			rec.inflight = f.now()
			due = append(due, k)
		}
	}
	f.mu.Unlock()
	for _, k := range due {
		go f.renewOne(ctx, k)
	}
}

// renewOne sends the renewal marked in flight for k and records how it ended.
func (f *fenceRenewer) renewOne(ctx context.Context, k lease.Key) {
	f.mu.Lock()
	rec := f.records[k]
	t, sent := rec.target, rec.inflight
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, min(f.timeout, f.cfg.every()))
	defer cancel()
	err := f.renew(ctx, t)
	f.mu.Lock()
	defer f.mu.Unlock()
	rec.inflight = time.Time{}
	switch {
	case err == nil:
		rec.landed = latest(rec.landed, f.now())
		fenceRenewals.WithLabelValues(t.member, "renewed").Inc()
	case renewalMayLand(err):
		rec.landed = latest(rec.landed, sent.Add(members.WriteLanding))
		fenceRenewals.WithLabelValues(t.member, "unanswered").Inc()
	default:
		fenceRenewals.WithLabelValues(t.member, "refused").Inc()
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("renewing a fence Lease failed", "cluster", t.member, "pipeline", t.pipeline.Namespace+"/"+t.pipeline.Name, "error", err.Error())
	}
}

// renewalMayLand tells whether a renewal that failed with err may still be written: anything but
// a refused connection (nothing was sent), an answer the hub refused before sending (not the
// leader, another cluster), or an error the API server answered with that says it wrote nothing.
func renewalMayLand(err error) bool {
	if members.Unsent(err) || errors.Is(err, errRenewalNotSent) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == 0 || code >= 500 || code == 408
	}
	return true
}

// errRenewalNotSent is a renewal given up before it was sent: not the leader, no connection, the
// member answers as another cluster.
var errRenewalNotSent = errors.New("renewal not sent")

// renewFence writes one renewal of t's fence Lease, as the hub writes anything to a member: as
// the leader, to the cluster the entry names, with the member's field manager.
func (r *CoordinatorReconciler) renewFence(ctx context.Context, t fenceTarget) error {
	if err := r.Leader.Fresh(time.Now()); err != nil {
		return fmt.Errorf("%w: %w", errRenewalNotSent, err)
	}
	c, err := r.members.Conn(ctx, t.member)
	if err != nil {
		return fmt.Errorf("%w: %w", errRenewalNotSent, err)
	}
	if err := r.members.SameCluster(ctx, c, t.clusterID); err != nil {
		return fmt.Errorf("%w: %w", errRenewalNotSent, err)
	}
	p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: t.pipeline.Namespace, Name: t.pipeline.Name, UID: t.pipeline.UID}}
	fl := coordinator.FenceLease(p, r.fence.cfg.ttl, metav1.NowMicro())
	return c.Cached.Apply(ctx, fl, client.FieldOwner(ssa.FieldManagerFor(r.FieldManager, t.member)), client.ForceOwnership)
}

// fencedEntries are the entries with a fence when the hub starts leading, read live (the cache
// may not be synced yet).
func (r *CoordinatorReconciler) fencedEntries(ctx context.Context) ([]urutauv1alpha1.LeaseMember, error) {
	var list urutauv1alpha1.ReaderLeaseList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(r.LeaseNamespace)); err != nil {
		return nil, fmt.Errorf("listing ReaderLeases: %w", err)
	}
	var out []urutauv1alpha1.LeaseMember
	for _, l := range list.Items {
		for _, e := range l.Spec.Members {
			if e.Fence != nil {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// stopRenewing releases every fence Lease of pipeline uid (it is being deleted).
func (f *fenceRenewer) stopRenewing(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, rec := range f.records {
		if k.Pipeline == uid {
			rec.renewing = false
		}
	}
}

// fenceInputs is what place needs of the fence before lease.Plan decides.
type fenceInputs struct {
	fence    *urutauv1alpha1.LeaseMemberFence
	verified sets.Set[string]
	drained  map[lease.Key]string
}

// prepareFence stops the renewals of every member the pipeline left (before anything is decided
// from them), tells which departed members the fence has drained (their bound passed) and until
// when the others wait (in departed), and checks the pods of targets whose fence is not verified.
func (r *CoordinatorReconciler) prepareFence(ctx context.Context, p *urutauv1alpha1.CDCPipeline, current *urutauv1alpha1.ReaderLease, targets map[string]string, departed map[lease.Key]memberwork.Departed) fenceInputs {
	in := fenceInputs{verified: sets.New[string](), drained: map[lease.Key]string{}}
	if p.Spec.Placement.Fenced {
		in.fence = &urutauv1alpha1.LeaseMemberFence{BoundSeconds: int32(r.fence.cfg.bound() / time.Second)}
	}
	now := time.Now()
	for _, e := range ownEntries(current, p.UID) {
		if targets[e.Cluster] == e.ClusterID {
			if in.fence != nil && e.State == urutauv1alpha1.LeaseMemberActive && (e.Fence == nil || !e.Fence.Verified) && r.podsFenced(ctx, p, e.Cluster) {
				in.verified.Insert(e.Cluster)
			}
			continue
		}
		r.fence.release(e)
		d, ok := departed[lease.KeyOf(e)]
		if !ok || d.State != lease.Unreachable || e.State != urutauv1alpha1.LeaseMemberActive || e.Fence == nil || !e.Fence.Verified {
			continue
		}
		at, ok := r.fence.drainedAt(e)
		switch {
		case !ok:
		case !now.Before(at):
			in.drained[lease.KeyOf(e)] = fmt.Sprintf("fenced: the hub stopped renewing its fence Lease, and the fence's bound (%ds) plus %s has passed since the last renewal that may have been written: no coordinator of the pipeline runs there", e.Fence.BoundSeconds, r.fence.cfg.margin)
		default:
			d.FencedUntil = at
			departed[lease.KeyOf(e)] = d
		}
	}
	return in
}

// afterLeaseWritten has the renewer renew the fence Leases of the members the pipeline runs on
// under a fenced placement, as the lease now records, and forget those of entries that are gone.
func (r *CoordinatorReconciler) afterLeaseWritten(p *urutauv1alpha1.CDCPipeline, l *urutauv1alpha1.ReaderLease, d lease.Decision) {
	run := sets.New(d.Run...)
	for _, e := range ownEntries(l, p.UID) {
		switch {
		case e.State == urutauv1alpha1.LeaseMemberActive && run.Has(e.Cluster) && e.Fence != nil && e.Fence.Renewing:
			r.fence.hold(e)
		case e.State == urutauv1alpha1.LeaseMemberGone:
			r.fence.forget(lease.KeyOf(e))
		}
	}
}

// podsFenced tells whether every coordinator pod of p on member runs under the fence, and the
// StatefulSet can create no other: its template is fenced and its controller has rolled it out.
// A member that does not answer in time is not (yet) known fenced.
func (r *CoordinatorReconciler) podsFenced(ctx context.Context, p *urutauv1alpha1.CDCPipeline, member string) bool {
	if down, _ := r.members.Down(member); down {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, r.MemberTimeout/2)
	defer cancel()
	c, err := r.members.Conn(ctx, member)
	if err != nil {
		return false
	}
	sts := &appsv1.StatefulSet{}
	if err := c.Live.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: coordinator.CoordinatorName(p.Name)}, sts); err != nil {
		return false
	}
	if !fencedPod(sts.Spec.Template.Spec) || sts.Status.ObservedGeneration < sts.Generation || sts.Status.CurrentRevision != sts.Status.UpdateRevision {
		return false
	}
	pods := &corev1.PodList{}
	if err := c.Live.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels(coordinator.SelectorLabels(p.Name))); err != nil {
		return false
	}
	for _, pod := range pods.Items {
		if !fencedPod(pod.Spec) {
			return false
		}
	}
	return true
}

func fencedPod(s corev1.PodSpec) bool {
	return slices.ContainsFunc(s.InitContainers, func(c corev1.Container) bool { return c.Name == coordinator.FenceInitContainer })
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
