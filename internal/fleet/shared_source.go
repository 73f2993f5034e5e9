package fleet

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/sourcedb"
	"github.com/urutau-io/fleet/internal/status"
)

// A pipeline placed on several members runs one coordinator per member, all with the same
// serverId or slot: safe only where each member's source is another database. The hub does not
// take that on faith: it reads, on each member, which database the source points at
// (internal/sourcedb), and two members that read one database are one reader, as in a move: the
// one that runs keeps running, the other waits (held) until the placement leaves one of them. A
// member whose database cannot be told never starts beside another; one already running is
// stopped only on evidence (both endpoints known and equal).

// endpointResult is what reading one member's source endpoint found: an endpoint, or why not;
// none when the pipeline names no source at all there (no Secret, no inline URI or host): its
// coordinator has nothing to connect to, so it reads no database.
type endpointResult struct {
	endpoint *sourcedb.Endpoint
	why      string
	none     bool
}

// readEndpoints reads the source endpoint of the pipeline on each member, concurrently; a member
// that does not answer in time has none.
func (r *CoordinatorReconciler) readEndpoints(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, names []string) map[string]endpointResult {
	opts := r.fanOutOptions(members.PipelineWakeKey(p), "source endpoint")
	opts.Patience = min(opts.Patience, identityPatience)
	found, late := members.FanOut(ctx, opts, names, func(ctx context.Context, m string) endpointResult {
		return r.readEndpoint(ctx, p, w, m)
	}, func(_ string, err error) endpointResult {
		return endpointResult{why: "its source could not be read: " + err.Error()}
	})
	for _, m := range late {
		found[m] = endpointResult{why: fmt.Sprintf("cluster %q did not answer in time", m)}
	}
	return found
}

// readEndpoint is the database the pipeline's source reads on member m, as the coordinator
// connects: the inline source.postgres fields; else the uri of the member's source Secret, read
// live (and only when that Secret is open to the fleet), which the coordinator takes over an
// inline source.uri; else that inline source.uri.
func (r *CoordinatorReconciler) readEndpoint(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, m string) endpointResult {
	src := w.inline.Source
	id := w.ids[m]
	if pg := src.Postgres; pg != nil && pg.Host != "" {
		via := ""
		if pg.SSH != nil {
			via = fmt.Sprintf("%s:%d", pg.SSH.Host, pg.SSH.Port)
		}
		return endpointOf(sourcedb.FromFields(src.Kind, pg.Host, pg.Port, pg.Database, via, id))
	}
	name := p.Spec.Secrets.Source
	switch {
	case name == "" && src.URI != "":
		return endpointOf(sourcedb.FromURI(src.Kind, src.URI, id))
	case name == "":
		return endpointResult{none: true, why: "the pipeline names no source (no spec.secrets.source, no source.uri)"}
	}
	c, err := r.members.Conn(ctx, m)
	if err != nil {
		return endpointResult{why: err.Error()}
	}
	s := &corev1.Secret{}
	if err := c.Live.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, s); err != nil {
		return endpointResult{why: fmt.Sprintf("Secret %s/%s: %s", p.Namespace, name, memberwork.ErrMessage(err))}
	}
	if s.Labels[urutauv1alpha1.LabelFleetSecret] != "true" {
		return endpointResult{why: fmt.Sprintf("Secret %s/%s is not open to the fleet", p.Namespace, name)}
	}
	e, err := sourcedb.FromURI(src.Kind, string(s.Data["uri"]), id)
	if err != nil {
		return endpointResult{why: fmt.Sprintf("Secret %s/%s: %v", p.Namespace, name, err)}
	}
	return endpointResult{endpoint: e}
}

func endpointOf(e *sourcedb.Endpoint, err error) endpointResult {
	if err != nil {
		return endpointResult{why: err.Error()}
	}
	return endpointResult{endpoint: e}
}

// sharedInput is what holdShared decides from.
type sharedInput struct {
	Self urutauv1alpha1.PipelineRef
	// Source is the reader identity the members share.
	Source *urutauv1alpha1.SourceIdentity
	// Current is the lease (after renames): which targets run already, and since when.
	Current *urutauv1alpha1.ReaderLease
	// Targets are the members the pipeline is to run on, with their identity.
	Targets map[string]string
	// Endpoints are what reading each target's source found.
	Endpoints map[string]endpointResult
}

// holdShared returns the targets that must not run because another target reads the same
// database, each with why. Targets already running come first, oldest first, and keep running
// unless a running one before them is known to read the same database; the others start only
// where no kept target may read the same database (an unknown endpoint may be any).
func holdShared(in sharedInput) map[string]string {
	held := map[string]string{}
	running, waiting := splitRunning(in)
	var kept []string
	keep := func(m string, evidence bool) {
		for _, k := range kept {
			a, b := in.Endpoints[k].endpoint, in.Endpoints[m].endpoint
			if in.Endpoints[k].none || in.Endpoints[m].none || (evidence && (a == nil || b == nil)) {
				continue
			}
			if sourcedb.Same(a, b) {
				held[m] = sharedMessage(in, m, k)
				return
			}
		}
		kept = append(kept, m)
	}
	for _, m := range running {
		keep(m, true)
	}
	for _, m := range waiting {
		keep(m, false)
	}
	return held
}

// splitRunning orders the targets: those with an Active entry of Self, oldest first, then the
// others by name.
func splitRunning(in sharedInput) (running, waiting []string) {
	since := map[string]int64{}
	for _, e := range ownEntries(in.Current, in.Self.UID) {
		if e.State == urutauv1alpha1.LeaseMemberActive && in.Targets[e.Cluster] == e.ClusterID {
			since[e.Cluster] = e.Since.Unix()
		}
	}
	for _, m := range sortedKeys(in.Targets) {
		if _, ok := since[m]; ok {
			running = append(running, m)
		} else {
			waiting = append(waiting, m)
		}
	}
	slices.SortStableFunc(running, func(a, b string) int { return int(since[a] - since[b]) })
	return running, waiting
}

// sharedMessage says why member m waits for k.
func sharedMessage(in sharedInput, m, k string) string {
	id := status.DescribeSource(in.Source)
	mine, theirs := in.Endpoints[m], in.Endpoints[k]
	switch {
	case mine.endpoint == nil:
		return fmt.Sprintf("not started: the hub cannot tell which database the source reads here (%s), so it may be the one cluster %q reads with %s; one reader per source", mine.why, k, id)
	case theirs.endpoint == nil:
		return fmt.Sprintf("not started: the hub cannot tell which database cluster %q reads (%s), so it may be this one (%s) with %s; one reader per source", k, theirs.why, mine.endpoint, id)
	}
	return fmt.Sprintf("not started: reads the same database as cluster %q (%s) with %s, and one source has one reader: narrow the placement to one of them, or point each member's source Secret at its own database",
		k, mine.endpoint, id)
}

// holdSharedReaders removes from targets the members that read the database another target
// reads, and returns them with why. It reads endpoints only for a pipeline with a reader
// identity placed on two or more members: a single target shares with nothing (a move already
// waits for the member it leaves).
func (r *CoordinatorReconciler) holdSharedReaders(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, current *urutauv1alpha1.ReaderLease, targets map[string]string) map[string]string {
	if w.source == nil || w.inline == nil || len(targets) < 2 {
		return nil
	}
	held := holdShared(sharedInput{
		Self:   urutauv1alpha1.PipelineRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Source: w.source, Current: current, Targets: targets,
		Endpoints: r.readEndpoints(ctx, p, w, sortedKeys(targets)),
	})
	for m := range held {
		delete(targets, m)
	}
	return held
}
