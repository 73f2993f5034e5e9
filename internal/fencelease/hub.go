package fencelease

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/ssa"
)

// Hub is the hub's side of the fence for the pipeline controller: its Renewer renews the fence
// Leases; Hub says what it renews and how, which placements a move may complete (Prepare), and
// whether the pods of a placement run under the fence.
type Hub struct {
	*Renewer
	members *members.Set
	// leader, fieldManager: a renewal is written as the hub writes anything to a member.
	leader       *memberwork.LeaderFence
	fieldManager string
	// memberTimeout bounds the work on one member in one reconcile.
	memberTimeout time.Duration
	// leases reads the ReaderLeases live, in leaseNamespace.
	leases         client.Reader
	leaseNamespace string
}

// HubOptions are what a Hub needs: the fence's Config, the member connections, the leader
// election lock and the base field manager (a renewal is written as the hub writes anything to a
// member), the member timeout, and a live reader of the ReaderLeases in LeaseNamespace.
type HubOptions struct {
	Config         Config
	Members        *members.Set
	Leader         *memberwork.LeaderFence
	FieldManager   string
	MemberTimeout  time.Duration
	Leases         client.Reader
	LeaseNamespace string
}

// NewHub builds a Hub, its Renewer included.
func NewHub(o HubOptions) *Hub {
	f := &Hub{
		Renewer: NewRenewer(o.Config),
		members: o.Members, leader: o.Leader, fieldManager: o.FieldManager, memberTimeout: o.MemberTimeout,
		leases: o.Leases, leaseNamespace: o.LeaseNamespace,
	}
	f.Renew, f.Bootstrap, f.Timeout = f.renew, f.fencedEntries, o.MemberTimeout
	f.Down = func(m string) bool { down, _ := f.members.Down(m); return down }
	return f
}

// renew writes one renewal of t's fence Lease, as the hub writes anything to a member: as
// the leader, to the cluster the entry names, with the member's field manager.
func (f *Hub) renew(ctx context.Context, t Target) error {
	if err := f.leader.Fresh(time.Now()); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	c, err := f.members.Conn(ctx, t.Member)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	if err := f.members.SameCluster(ctx, c, t.ClusterID); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: t.Pipeline.Namespace, Name: t.Pipeline.Name, UID: t.Pipeline.UID}}
	fl := coordinator.FenceLease(p, f.Config().TTL, metav1.NowMicro())
	return c.Cached.Apply(ctx, fl, client.FieldOwner(ssa.FieldManagerFor(f.fieldManager, t.Member)), client.ForceOwnership)
}

// fencedEntries are the entries with a fence when the hub starts leading, read live (the cache
// may not be synced yet).
func (f *Hub) fencedEntries(ctx context.Context) ([]urutauv1alpha1.LeaseMember, error) {
	var list urutauv1alpha1.ReaderLeaseList
	if err := f.leases.List(ctx, &list, client.InNamespace(f.leaseNamespace)); err != nil {
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

// Inputs is what a placement needs of the fence before lease.Plan decides: the fence of a fenced
// placement, the targets whose pods run under it, and the departed entries it drained.
type Inputs struct {
	Fence    *urutauv1alpha1.LeaseMemberFence
	Verified sets.Set[string]
	Drained  map[lease.Key]string
}

// Prepare stops the renewals of every member the pipeline left (before anything is decided
// from them), tells which departed members the fence has drained (their bound passed) and until
// when the others wait (in departed), and checks the pods of targets whose fence is not verified.
func (f *Hub) Prepare(ctx context.Context, p *urutauv1alpha1.CDCPipeline, current *urutauv1alpha1.ReaderLease, targets map[string]string, departed map[lease.Key]memberwork.Departed) Inputs {
	in := Inputs{Verified: sets.New[string](), Drained: map[lease.Key]string{}}
	if p.Spec.Placement.Fenced {
		in.Fence = &urutauv1alpha1.LeaseMemberFence{BoundSeconds: int32(f.Config().Bound() / time.Second)}
	}
	now := time.Now()
	for _, e := range lease.OwnEntries(current, p.UID) {
		if targets[e.Cluster] == e.ClusterID {
			if in.Fence != nil && e.State == urutauv1alpha1.LeaseMemberActive && (e.Fence == nil || !e.Fence.Verified) && f.podsFenced(ctx, p, e.Cluster) {
				in.Verified.Insert(e.Cluster)
			}
			continue
		}
		f.Release(e)
		d, ok := departed[lease.KeyOf(e)]
		if !ok || d.State != lease.Unreachable || e.State != urutauv1alpha1.LeaseMemberActive || e.Fence == nil || !e.Fence.Verified {
			continue
		}
		at, ok := f.DrainedAt(e)
		switch {
		case !ok:
		case !now.Before(at):
			in.Drained[lease.KeyOf(e)] = fmt.Sprintf("fenced: the hub stopped renewing its fence Lease, and the fence's bound (%ds) plus %s has passed since the last renewal that may have been written: no coordinator of the pipeline runs there", e.Fence.BoundSeconds, f.Config().Margin)
		default:
			d.FencedUntil = at
			departed[lease.KeyOf(e)] = d
		}
	}
	return in
}

// AfterLeaseWritten has the renewer renew the fence Leases of the members the pipeline runs on
// under a fenced placement, as the lease now records, and forget those of entries that are gone.
func (f *Hub) AfterLeaseWritten(p *urutauv1alpha1.CDCPipeline, l *urutauv1alpha1.ReaderLease, d lease.Decision) {
	run := sets.New(d.Run...)
	for _, e := range lease.OwnEntries(l, p.UID) {
		switch {
		case e.State == urutauv1alpha1.LeaseMemberActive && run.Has(e.Cluster) && e.Fence != nil && e.Fence.Renewing:
			f.Hold(e)
		case e.State == urutauv1alpha1.LeaseMemberGone:
			f.Forget(lease.KeyOf(e))
		}
	}
}

// podsFenced tells whether every coordinator pod of p on member runs under the fence, and the
// StatefulSet can create no other: its template is fenced and its controller has rolled it out.
// A member that does not answer in time is not (yet) known fenced.
func (f *Hub) podsFenced(ctx context.Context, p *urutauv1alpha1.CDCPipeline, member string) bool {
	if down, _ := f.members.Down(member); down {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, f.memberTimeout/2)
	defer cancel()
	c, err := f.members.Conn(ctx, member)
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
