// Package fencelease is the hub's side of the fence of fenced placements (docs/failover.md): it
// renews the fence Lease of each placement the hub holds, and tells when a placement it stopped
// renewing is drained by the fence alone.
//
//	renewer.go  Renewer: the renewals (leader only), and when a placement it stopped renewing is
//	            drained (DrainedAt), counting what a previous leader may have sent
//	hub.go      Hub: what the pipeline controller needs of the fence before lease.Plan decides
//	            (Prepare) and after the lease is written (AfterLeaseWritten); a renewal written
//	            as the hub writes anything to a member
//
// For each ReaderLease entry of a fenced placement that is Active and Renewing, the hub renews the
// pipeline's fence Lease in that member every FenceTTL/4; the coordinator there runs only while it
// sees renewals (cmd/fence). Once the pipeline leaves the member, the hub stops renewing and the
// bound starts: every renewal the hub ever sent was written no later than when it was
// acknowledged, or, for one that got no answer, members.WriteLanding after it was sent; so
// FenceTTL+FenceGrace after the latest of those instants, plus a margin, no coordinator of that
// placement runs there, whether or not the hub can reach the member. All instants are on the hub's
// monotonic clock: nothing here compares a clock of the hub with one of the member.
package fencelease

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
)

// Config is the fence as the hub renders and renews it.
type Config struct {
	Image              string
	TTL, Grace, Margin time.Duration
}

// Bound is how long a fenced coordinator may run after the last renewal it saw.
func (c Config) Bound() time.Duration { return c.TTL + c.Grace }

// Every is how often a fence Lease is renewed: four renewals per ttl, so one or two lost
// requests do not stop a coordinator.
func (c Config) Every() time.Duration { return c.TTL / 4 }

// Render is the coordinator.Fence of a fenced placement, nil for an unfenced one.
func (c Config) Render(p *urutauv1alpha1.CDCPipeline) *coordinator.Fence {
	if !p.Spec.Placement.Fenced {
		return nil
	}
	return &coordinator.Fence{Image: c.Image, TTL: c.TTL, Grace: c.Grace}
}

// Target is one fence Lease to renew: pipeline's, in its namespace on member.
type Target struct {
	Member, ClusterID string
	Pipeline          urutauv1alpha1.PipelineRef
}

// targetOf is the fence Lease of entry e.
func targetOf(e urutauv1alpha1.LeaseMember) Target {
	return Target{Member: e.Cluster, ClusterID: e.ClusterID,
		Pipeline: urutauv1alpha1.PipelineRef{Namespace: e.PipelineNamespace, Name: e.PipelineName, UID: e.PipelineUID}}
}

// record is what the hub knows of its renewals of one fence Lease.
type record struct {
	target   Target
	renewing bool
	// landed is the latest instant at which a renewal the hub sent may have been written.
	landed time.Time
	// inflight is when the renewal in flight was sent; zero when none is.
	inflight time.Time
}

// mayLandUntil is landed, counting the renewal in flight as one that gets no answer.
func (f *record) mayLandUntil() time.Time {
	if !f.inflight.IsZero() {
		return latest(f.landed, f.inflight.Add(members.WriteLanding))
	}
	return f.landed
}

// Renewer renews the fence Leases of the placements the hub holds, and tells when a
// placement it stopped renewing is drained by the fence alone. Its records are the state kept
// between reconciles (internal/fleet/doc.go): in memory only.
//
// What a previous leader (or this hub before a restart) sent is not in memory: every entry with
// a fence that the ReaderLeases hold when the renewer starts counts as renewed until
// members.WriteLanding after that. An entry first seen later was written by this leader, and it
// sends a renewal only after writing the entry, so none was sent before its record exists. Until
// the renewer has read the leases, a record first seen counts as renewed members.WriteLanding from
// then.
type Renewer struct {
	cfg Config
	// Renew writes one renewal; Down tells a member known not to answer (not tried).
	Renew func(ctx context.Context, t Target) error
	Down  func(member string) bool
	// Bootstrap lists the entries of the ReaderLeases that have a fence, read live when the hub
	// starts leading; the Active, Renewing ones are renewed before their pipelines are reconciled.
	Bootstrap func(ctx context.Context) ([]urutauv1alpha1.LeaseMember, error)
	// Timeout bounds one renewal (and Config.Every does).
	Timeout time.Duration
	now     func() time.Time

	mu      sync.Mutex
	records map[lease.Key]*record
	// bootstrapped: the leases were read; records first seen from then on start with no renewal.
	bootstrapped bool
	kick         chan struct{}
}

// NewRenewer is a Renewer of fences configured as cfg; set its hooks before it starts.
func NewRenewer(cfg Config) *Renewer {
	return &Renewer{cfg: cfg, now: time.Now, records: map[lease.Key]*record{}, kick: make(chan struct{}, 1)}
}

// recordOf returns the record of k; one made before the leases were read counts as renewed until
// members.WriteLanding from now.
func (f *Renewer) recordOf(k lease.Key, t Target) *record {
	rec := f.records[k]
	if rec == nil {
		rec = &record{target: t}
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
func (f *Renewer) adopt(entries []urutauv1alpha1.LeaseMember) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range entries {
		rec := f.recordOf(lease.KeyOf(e), targetOf(e))
		rec.landed = latest(rec.landed, f.now().Add(members.WriteLanding))
		if e.State == urutauv1alpha1.LeaseMemberActive && e.Fence.Renewing {
			rec.renewing = true
		}
	}
	f.bootstrapped = true
}

// Hold has the hub renew the fence Lease of entry e (the pipeline is placed there), at once and
// then every cfg.Every().
func (f *Renewer) Hold(e urutauv1alpha1.LeaseMember) {
	f.mu.Lock()
	rec := f.recordOf(lease.KeyOf(e), targetOf(e))
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

// Release stops the renewals of entry e's fence Lease: from now on no renewal is sent, and the
// bound runs from the last one that may land. It must come before the lease records the entry
// as no longer Renewing, and before DrainedAt is asked.
func (f *Renewer) Release(e urutauv1alpha1.LeaseMember) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordOf(lease.KeyOf(e), targetOf(e)).renewing = false
}

// DrainedAt is when no coordinator of entry e can run any more, by the fence alone: the bound
// recorded in the entry plus the margin after the last renewal that may land. ok is false while
// the hub renews it.
func (f *Renewer) DrainedAt(e urutauv1alpha1.LeaseMember) (at time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.recordOf(lease.KeyOf(e), targetOf(e))
	if rec.renewing || e.Fence == nil {
		return time.Time{}, false
	}
	bound := time.Duration(e.Fence.BoundSeconds) * time.Second
	return rec.mayLandUntil().Add(bound + f.cfg.Margin), true
}

// Forget drops what is kept about an entry that no longer exists.
func (f *Renewer) Forget(k lease.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rec := f.records[k]; rec != nil && !rec.renewing && rec.inflight.IsZero() {
		delete(f.records, k)
	}
}

// Start renews until ctx ends (a manager Runnable, on the leader only).
func (f *Renewer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("fence")
	if f.Bootstrap != nil {
		entries, err := f.Bootstrap(ctx)
		if err != nil {
			// Every record then counts as renewed until members.WriteLanding after it is first seen.
			log.Error(err, "Reading the fenced placements to renew; they are renewed once their pipelines are reconciled")
		} else {
			f.adopt(entries)
		}
	}
	tick := time.NewTicker(f.cfg.Every())
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
func (f *Renewer) NeedLeaderElection() bool { return true }

// round sends one renewal to each fence Lease the hub holds, each in its own goroutine, skipping
// members known not to answer and those whose last renewal is still in flight.
func (f *Renewer) round(ctx context.Context) {
	f.mu.Lock()
	var due []lease.Key
	for k, rec := range f.records {
		if rec.renewing && rec.inflight.IsZero() && (f.Down == nil || !f.Down(rec.target.Member)) {
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
func (f *Renewer) renewOne(ctx context.Context, k lease.Key) {
	f.mu.Lock()
	rec := f.records[k]
	t, sent := rec.target, rec.inflight
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, min(f.Timeout, f.cfg.Every()))
	defer cancel()
	err := f.Renew(ctx, t)
	f.mu.Lock()
	defer f.mu.Unlock()
	rec.inflight = time.Time{}
	switch {
	case err == nil:
		rec.landed = latest(rec.landed, f.now())
		renewals.WithLabelValues(t.Member, "renewed").Inc()
	case renewalMayLand(err):
		rec.landed = latest(rec.landed, sent.Add(members.WriteLanding))
		renewals.WithLabelValues(t.Member, "unanswered").Inc()
	default:
		renewals.WithLabelValues(t.Member, "refused").Inc()
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("renewing a fence Lease failed", "cluster", t.Member, "pipeline", t.Pipeline.Namespace+"/"+t.Pipeline.Name, "error", err.Error())
	}
}

// renewalMayLand tells whether a renewal that failed with err may still be written: anything but
// a refused connection (nothing was sent), an answer the hub refused before sending (not the
// leader, another cluster), or an error the API server answered with that says it wrote nothing.
func renewalMayLand(err error) bool {
	if members.Unsent(err) || errors.Is(err, ErrNotSent) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == 0 || code >= 500 || code == 408
	}
	return true
}

// ErrNotSent is a renewal given up before it was sent: not the leader, no connection, the
// member answers as another cluster.
var ErrNotSent = errors.New("renewal not sent")

// StopRenewing releases every fence Lease of pipeline uid (it is being deleted).
func (f *Renewer) StopRenewing(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, rec := range f.records {
		if k.Pipeline == uid {
			rec.renewing = false
		}
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Config is the fence the renewer renews.
func (f *Renewer) Config() Config { return f.cfg }
