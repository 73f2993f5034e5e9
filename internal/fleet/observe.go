package fleet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/failover"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/placement"
	"github.com/urutau-io/fleet/internal/spec"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// world is what one reconcile of a live pipeline knows before it decides: the cluster inventory,
// the placement, the identity of each member involved, and the pipeline's reader lease.
type world struct {
	// inventory is every member of the cluster inventory, by name.
	inventory map[string]inventory.Member
	// selected are the members the placement selects (in the inventory); unknown the names it
	// gives that the inventory lacks.
	selected, unknown []string
	// specErr is a placement that cannot be resolved, or a spec that does not render: terminal.
	specErr error
	// specHash is the hash rendered for a member without override.
	specHash string
	// ids are the identities read from members (registered, answering), by name.
	ids map[string]string
	// refused are selected members the pipeline must not run on until a person acts, with why
	// (identity changed, identity not the one pinned); unidentified those whose identity could not
	// be read yet, with why (they are retried).
	refused      map[string]string
	unidentified map[string]error
	// denied are selected members the tenancy boundary refuses to the pipeline; boundary is that
	// boundary and hubNS the pipeline's hub namespace, for the checks made in the member.
	denied   map[string]*tenancy.Denial
	boundary tenancy.Boundary
	hubNS    *corev1.Namespace
	// accepted are member names whose new identity a person accepted (AnnotationClusterID): the
	// pipeline's entries for the old identity there count as gone.
	accepted sets.Set[string]
	// source is the pipeline's reader identity (nil when its source has none); leaseName the
	// name of its ReaderLease; lease that lease as read (nil when none).
	source    *urutauv1alpha1.SourceIdentity
	leaseName string
	lease     *urutauv1alpha1.ReaderLease
	// holderGone: the lease's holder is another pipeline that is gone.
	holderGone bool
	// elsewhere are leases of other identities that record the pipeline: its source changed.
	elsewhere []string
	// self is the pipeline's UID.
	self types.UID
	// inline is the pipeline's definition, parsed once per reconcile (nil when it has none).
	inline *spec.Inline
	// held are targets that do not run because another target reads the same database, with why
	// (shared_source.go).
	held map[string]string
	// failover is what a failover placement decided (internal/failover, failover.go); nil for other placements.
	failover *failover.View
}

// observe reads the world for p. Reading a member's identity contacts it (once per connection);
// everything else comes from the hub's cache.
func (r *CoordinatorReconciler) observe(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (*world, error) {
	members, err := r.Inventory.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the cluster inventory: %w", err)
	}
	w := &world{self: p.UID, inventory: map[string]inventory.Member{}, ids: map[string]string{}, refused: map[string]string{}, unidentified: map[string]error{}, denied: map[string]*tenancy.Denial{}, accepted: sets.New[string]()}
	for _, m := range members {
		w.inventory[m.Name] = m
	}
	w.unknown = placement.UnknownClusters(p, members)
	if w.selected, err = placement.SelectMembers(p, members); err != nil {
		w.specErr = err
		return w, nil
	}
	// The definition is parsed once per reconcile (up to 128 KiB): every render reuses it.
	w.inline = parseInline(p)
	base, err := coordinator.Render(p, coordinator.Settings{DefaultImage: r.render.image, KEDAPrometheusAddress: r.render.kedaAddress, KEDAThreshold: r.render.kedaThreshold, Parsed: w.inline})
	if err != nil {
		w.specErr = err
		return w, nil
	}
	w.specHash = base.SpecHash
	w.source = sourceIdentity(w.inline)
	w.leaseName = lease.Name(w.source, p.UID)
	if err := r.observeLease(ctx, p, w); err != nil {
		return nil, err
	}
	if p.Spec.Placement.Failover != nil {
		if err := observeFailover(p, members, r.members.Health, w); err != nil {
			w.specErr = err
			return w, nil
		}
	}
	if err := r.tenancy.observe(ctx, p, w); err != nil {
		return nil, err
	}
	r.reads.identities(ctx, p, w)
	return w, nil
}

// parseInline is the pipeline's definition, nil when it has none or it does not parse (Render
// reported that first).
func parseInline(p *urutauv1alpha1.CDCPipeline) *spec.Inline {
	if p.Spec.Definition.Inline == nil {
		return nil
	}
	in, errs := spec.Parse(p.Spec.Definition.Inline.Raw)
	if len(errs) > 0 {
		return nil
	}
	return in
}

// sourceIdentity is the pipeline's reader identity as the lease records it, nil when its source
// has none.
func sourceIdentity(in *spec.Inline) *urutauv1alpha1.SourceIdentity {
	if in == nil {
		return nil
	}
	id, ok := in.Identity()
	if !ok {
		return nil
	}
	return &urutauv1alpha1.SourceIdentity{Kind: id.Kind, Field: id.Field, Value: id.Value}
}

// observeLease reads the pipeline's lease, whether its holder is gone, and the leases of other
// identities that still record the pipeline.
func (r *CoordinatorReconciler) observeLease(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world) error {
	var err error
	if w.lease, err = r.leases.Get(ctx, w.leaseName); err != nil {
		return err
	}
	if w.lease != nil && w.lease.Spec.Holder.UID != p.UID {
		if w.holderGone, err = r.pipelineGone(ctx, w.lease.Spec.Holder); err != nil {
			return err
		}
	}
	others, err := r.leases.Of(ctx, p.UID)
	if err != nil {
		return err
	}
	for _, l := range others {
		if l.Name != w.leaseName && lease.Records(&l, p.UID) {
			w.elsewhere = append(w.elsewhere, l.Name)
		}
	}
	return nil
}

// pipelineGone tells whether ref no longer names a live pipeline: deleted, being deleted, or
// re-created under another UID. A cache that lags says "live" a little longer: the safe side.
func (r *CoordinatorReconciler) pipelineGone(ctx context.Context, ref urutauv1alpha1.PipelineRef) (bool, error) {
	p := &urutauv1alpha1.CDCPipeline{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, p)
	switch {
	case client.IgnoreNotFound(err) != nil:
		return false, fmt.Errorf("reading the holder %s/%s of a reader lease: %w", ref.Namespace, ref.Name, err)
	case err != nil:
		return true, nil
	}
	return p.UID != ref.UID || !p.DeletionTimestamp.IsZero(), nil
}

// identities reads the identity of every selected member and of every member an entry of
// the pipeline names, and decides which selected members the pipeline may run on.
func (rd memberReads) identities(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world) {
	names := sets.New(w.selected...)
	for _, e := range lease.OwnEntries(w.lease, p.UID) {
		if _, ok := w.inventory[e.Cluster]; ok {
			names.Insert(e.Cluster)
		}
	}
	// Reading an identity is one GET, and most reconciles find it known already: a member that
	// takes longer (not engaged yet, or not answering) is not waited for; its late answer brings
	// the pipeline back.
	opts := rd.fanOut.options(members.PipelineWakeKey(p), "identity")
	opts.Patience = min(opts.Patience, identityPatience)
	found, _ := members.FanOut(ctx, opts, sets.List(names), func(ctx context.Context, m string) identityResult {
		return rd.identity(ctx, m)
	}, func(_ string, err error) identityResult { return identityResult{err: err} })
	// The identities the health checks read of the other members: where a renamed entry went.
	for m := range w.inventory {
		if id := rd.members.KnownIdentity(m); id != "" && !names.Has(m) {
			w.ids[m] = id
		}
	}
	for m, res := range found {
		if res.err == nil {
			w.ids[m] = res.id
		}
	}
	first := map[string]string{}
	for _, m := range w.selected {
		switch res, ok := found[m]; {
		case ok && res.err == nil && first[res.id] != "":
			// One cluster registered under two names: one set of objects, applied once.
			w.refused[m] = fmt.Sprintf("cluster %q is the same cluster as %q (identity %s): the pipeline runs there once, as %q", m, first[res.id], res.id, first[res.id])
			continue
		case ok && res.err == nil:
			first[res.id] = m
		}
		switch res, ok := found[m]; {
		case !ok || res.err != nil:
			// It does not answer: the pipeline still runs there if its objects went there (its
			// entry says which cluster); the apply finds it down, and checks the identity
			// before it writes anything.
			if id := lease.OwnIdentity(w.lease, p.UID, m); id != "" {
				w.ids[m] = id
				continue
			}
			if !ok {
				res.err = fmt.Errorf("cluster %q %w: its identity could not be read in time", m, members.ErrDown)
			}
			w.unidentified[m] = res.err
		default:
			if why := identityProblem(m, w.inventory[m], res.id, lease.OwnEntries(w.lease, p.UID), w.ids); why != "" {
				w.refused[m] = why
			} else if w.inventory[m].Annotations[urutauv1alpha1.AnnotationClusterID] != "" {
				w.accepted.Insert(m)
			}
		}
	}
}

// identityPatience bounds the wait for the members' identities in one reconcile.
const identityPatience = 500 * time.Millisecond

type identityResult struct {
	id  string
	err error
}

// identity is the identity of member's current connection (read once per connection), or
// why it is not known: not engaged, or not answering.
func (rd memberReads) identity(ctx context.Context, member string) identityResult {
	if down, msg := rd.members.Down(member); down {
		return identityResult{err: fmt.Errorf("cluster %q %w: %s", member, members.ErrDown, msg)}
	}
	c, err := rd.members.Conn(ctx, member)
	if err != nil {
		return identityResult{err: err}
	}
	id, err := rd.members.Identity(ctx, c)
	return identityResult{id: id, err: err}
}

// identityProblem says why pipeline entries (own) forbid running on member m, whose identity
// reads id: "" when nothing does. A member pinned to another identity is refused outright; a
// member that answers as another cluster than the one the pipeline's objects went to (its
// kubeconfig was pointed elsewhere) waits until a person accepts the new identity, unless the old
// one is now registered under another name (a renamed entry: the pipeline follows it there).
func identityProblem(m string, entry inventory.Member, id string, own []urutauv1alpha1.LeaseMember, ids map[string]string) string {
	pinned := entry.Annotations[urutauv1alpha1.AnnotationClusterID]
	switch {
	case pinned != "" && pinned != id:
		return fmt.Sprintf("cluster %q answers as identity %s, but its inventory entry is pinned to %s (annotation %s): nothing is applied there", m, id, pinned, urutauv1alpha1.AnnotationClusterID)
	case pinned == id:
		return ""
	}
	registered := sets.New[string]()
	for _, v := range ids {
		registered.Insert(v)
	}
	for _, e := range own {
		if e.Cluster == m && e.ClusterID != id && !registered.Has(e.ClusterID) {
			return fmt.Sprintf("cluster %q now answers as identity %s, not %s, where this pipeline's objects were placed: its inventory entry points at another cluster. Nothing is applied there until a person accepts the new cluster (annotate the inventory entry %s=%s; the old cluster is then treated as gone)",
				m, id, e.ClusterID, urutauv1alpha1.AnnotationClusterID, id)
		}
	}
	return ""
}

// placedOn tells whether the pipeline's lease records it Active on member m as it is now.
func (w *world) placedOn(m string) bool {
	if w.lease == nil {
		return false
	}
	for _, e := range w.lease.Spec.Members {
		if e.Cluster == m && e.ClusterID == w.ids[m] && e.State == urutauv1alpha1.LeaseMemberActive && e.PipelineUID == w.self {
			return true
		}
	}
	return false
}

// targets are the selected members the pipeline is to run on, with their identity.
func (w *world) targets() map[string]string {
	out := map[string]string{}
	for _, m := range w.selected {
		_, refused := w.refused[m]
		_, unidentified := w.unidentified[m]
		// A member the boundary refuses stays a target only where the pipeline runs already:
		// nothing is written there, and nothing is removed either.
		_, denied := w.denied[m]
		if !refused && !unidentified && (!denied || w.placedOn(m)) {
			out[m] = w.ids[m]
		}
	}
	return out
}

// unidentifiedNames are the registered members whose identity this reconcile does not know.
func (w *world) unidentifiedNames() sets.Set[string] {
	out := sets.New[string]()
	for m := range w.inventory {
		if w.ids[m] == "" {
			out.Insert(m)
		}
	}
	return out
}
