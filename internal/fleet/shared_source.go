package fleet

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/lease"
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

// memberReads are the reads a reconcile makes of its members before it decides where the
// pipeline runs: each member's identity (observe.go) and the database its source points at.
type memberReads struct {
	members *members.Set
	fanOut  *fanOut
}

// endpoints reads the source endpoint of the pipeline on each member, concurrently; a member
// that does not answer in time has none.
func (rd memberReads) endpoints(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, names []string) map[string]sourcedb.Read {
	opts := rd.fanOut.options(members.PipelineWakeKey(p), "source endpoint")
	opts.Patience = min(opts.Patience, identityPatience)
	found, late := members.FanOut(ctx, opts, names, func(ctx context.Context, m string) sourcedb.Read {
		return rd.endpoint(ctx, p, w, m)
	}, func(_ string, err error) sourcedb.Read {
		return sourcedb.Read{Why: "its source could not be read: " + err.Error()}
	})
	for _, m := range late {
		found[m] = sourcedb.Read{Why: fmt.Sprintf("cluster %q did not answer in time", m)}
	}
	return found
}

// endpoint is the database the pipeline's source reads on member m, as the coordinator
// connects: the inline source.postgres fields; else the uri of the member's source Secret, read
// live (and only when that Secret is open to the fleet), which the coordinator takes over an
// inline source.uri; else that inline source.uri.
func (rd memberReads) endpoint(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, m string) sourcedb.Read {
	src := w.inline.Source
	id := w.ids[m]
	if pg := src.Postgres; pg != nil && pg.Host != "" {
		via := ""
		if pg.SSH != nil {
			via = fmt.Sprintf("%s:%d", pg.SSH.Host, pg.SSH.Port)
		}
		return sourcedb.ReadOf(sourcedb.FromFields(src.Kind, pg.Host, pg.Port, pg.Database, via, id))
	}
	name := p.Spec.Secrets.Source
	switch {
	case name == "" && src.URI != "":
		return sourcedb.ReadOf(sourcedb.FromURI(src.Kind, src.URI, id))
	case name == "":
		return sourcedb.Read{None: true, Why: "the pipeline names no source (no spec.secrets.source, no source.uri)"}
	}
	c, err := rd.members.Conn(ctx, m)
	if err != nil {
		return sourcedb.Read{Why: err.Error()}
	}
	s := &corev1.Secret{}
	if err := c.Live.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, s); err != nil {
		return sourcedb.Read{Why: fmt.Sprintf("Secret %s/%s: %s", p.Namespace, name, memberwork.ErrMessage(err))}
	}
	if s.Labels[urutauv1alpha1.LabelFleetSecret] != "true" {
		return sourcedb.Read{Why: fmt.Sprintf("Secret %s/%s is not open to the fleet", p.Namespace, name)}
	}
	e, err := sourcedb.FromURI(src.Kind, string(s.Data["uri"]), id)
	if err != nil {
		return sourcedb.Read{Why: fmt.Sprintf("Secret %s/%s: %v", p.Namespace, name, err)}
	}
	return sourcedb.Read{Endpoint: e}
}

// holdSharedReaders removes from targets the members that read the database another target
// reads, and returns them with why. It reads endpoints only for a pipeline with a reader
// identity placed on two or more members: a single target shares with nothing (a move already
// waits for the member it leaves).
func (rd memberReads) holdSharedReaders(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world, current *urutauv1alpha1.ReaderLease, targets map[string]string) map[string]string {
	if w.source == nil || w.inline == nil || len(targets) < 2 {
		return nil
	}
	running, waiting := splitRunning(current, p.UID, targets)
	held := sourcedb.Hold(running, waiting, rd.endpoints(ctx, p, w, sortedKeys(targets)), status.DescribeSource(w.source))
	for m := range held {
		delete(targets, m)
	}
	return held
}

// splitRunning orders targets: those on which an Active entry of pipeline self runs already,
// oldest first, then the others by name.
func splitRunning(current *urutauv1alpha1.ReaderLease, self types.UID, targets map[string]string) (running, waiting []string) {
	since := map[string]int64{}
	for _, e := range lease.OwnEntries(current, self) {
		if e.State == urutauv1alpha1.LeaseMemberActive && targets[e.Cluster] == e.ClusterID {
			since[e.Cluster] = e.Since.Unix()
		}
	}
	for _, m := range sortedKeys(targets) {
		if _, ok := since[m]; ok {
			running = append(running, m)
		} else {
			waiting = append(waiting, m)
		}
	}
	slices.SortStableFunc(running, func(a, b string) int { return int(since[a] - since[b]) })
	return running, waiting
}
