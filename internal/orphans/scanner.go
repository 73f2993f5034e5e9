// Package orphans scans each member for what the hub's records do not account for there: its
// objects of pipelines no ReaderLease records (orphans: reported, deleted where allowed), a live
// pipeline's objects where it is not placed (strays: handed to the reconciler), and coordinator
// pods no StatefulSet controls (deleted). Scanner runs it; the health checks start it.
package orphans

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/membercache"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
)

// Scanner finds, in each member, what the hub's records do not account for there:
//   - orphans: objects the hub wrote (the managed-by label) for a pipeline UID that no ReaderLease
//     records in that member and no live pipeline has. A member restored from a backup holds
//     them, and so would any path that lost track of a member. They are reported (an event on the
//     member's inventory entry, the urutau_fleet_orphans gauge, a log line), never deleted unless
//     the platform admin allows it (--delete-orphans, or the inventory entry's
//     urutau.io/delete-orphans: "true").
//   - strays of a live pipeline: its objects in a member no entry of it names (a restore, a
//     re-applied export). A coordinator there is a second reader: they are recorded in the
//     pipeline's ReaderLease as an Active entry, and its reconcile removes them like a member it
//     left (the Stray hook: the reconciler's, which may write the lease).
//   - stray reader pods: pods with a pipeline's coordinator labels that no StatefulSet controls
//     (made by hand, or left by a StatefulSet deleted with --cascade=orphan), in the namespaces of
//     live pipelines: deleted (pods.go).
//
// The object scan reads the member's cache (every object of the kinds the hub writes): it costs
// the member nothing; the pod scan lists the coordinator pods of each such namespace once. An
// object counts as unaccounted for only when two scans in a row find it so, which leaves time for
// a new pipeline's lease to reach the cache, and the member itself still holds it (confirmLive).
type Scanner struct {
	Hub client.Client
	// LeaseNamespace holds the ReaderLeases.
	LeaseNamespace string
	// Identity is a member's identity as last read ("" when unknown).
	Identity func(member string) string
	// MayLag tells whether the cache of the member at host may lag (members.Liveness): the scan
	// then lists the member itself, or an object created while it did not answer would go
	// unseen until its informers' backoff ends.
	MayLag func(host string) bool
	// Present tells whether member is in the inventory still.
	Present func(ctx context.Context, member string) bool
	// Stray records a live pipeline's objects found in a member no entry of it names; false
	// when they are not the pipeline's to record (reported as orphans instead).
	Stray    func(ctx context.Context, m inventory.Member, c *members.Conn, p *urutauv1alpha1.CDCPipeline, g *Group) bool
	Recorder events.EventRecorder
	// EntryKind is the kind of the inventory entries, which events about a member regard.
	EntryKind schema.GroupVersionKind
	Interval  time.Duration
	// Timeout bounds one scan of one member, every request of it included (ScanTimeout).
	Timeout time.Duration
	// DeleteAll is --delete-orphans.
	DeleteAll bool
	// Patience is how long a coordinator StatefulSet's controller may take to see a scale to
	// zero before the cleanup deletes it anyway (memberwork.CleanupMember).
	Patience time.Duration

	mu sync.Mutex
	// suspects are the groups the last scan of each member found orphaned; last when it ran.
	suspects map[string]sets.Set[key]
	last     map[string]time.Time
	// running are the members a scan runs on.
	running sets.Set[string]
}

// key names a group: a pipeline UID in one member namespace. A pipeline's objects found
// in two namespaces (a restore into another one) are two groups, each recounted and removed in
// its own namespace.
type key struct {
	uid       types.UID
	namespace string
}

// Group is what a member holds of one pipeline UID in one namespace.
type Group struct {
	UID       types.UID
	Namespace string
	Name      string
	Objects   int
}

// Start scans member m in a goroutine of its own, bounded by the scan's timeout, when its last
// scan is older than the interval and none runs. The health check that found m answering calls
// it: a scan that recounts many groups neither delays the next check nor runs out of the
// check's deadline, whose cut requests would count as the member leaving them unanswered.
func (o *Scanner) Start(ctx context.Context, m inventory.Member, c *members.Conn) {
	if !o.dueAt(m.Name, time.Now()) {
		return
	}
	go func() {
		defer o.finished(m.Name)
		ctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		o.scan(ctx, m, c)
	}()
}

// scan looks for orphans in member m.
func (o *Scanner) scan(ctx context.Context, m inventory.Member, c *members.Conn) {
	found, err := o.ours(ctx, c)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("orphan scan failed", "cluster", m.Name, "error", err.Error())
		return
	}
	rec, err := o.recorded(ctx, m.Name, o.Identity(m.Name))
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("orphan scan failed", "cluster", m.Name, "error", err.Error())
		return
	}
	// Stray reader pods first: the recounts below may use up the scan's deadline on a member
	// holding many suspect groups, and a second reader must not wait behind them.
	o.strayPods(ctx, m.Name, c, rec)
	var lost []*Group
	for _, g := range o.confirm(m.Name, found, rec.known) {
		if !confirmLive(ctx, c.Live, g) {
			continue
		}
		if p := rec.strayOf(g); p != nil && o.Stray(ctx, m, c, p, g) {
			// A live pipeline's objects where no entry of it says so (a restore, a re-applied
			// export), where the hub could have placed it: recorded, and removed like a member
			// it left.
			continue
		}
		lost = append(lost, g)
	}
	if o.Present != nil && !o.Present(ctx, m.Name) {
		return // the member left while the scan ran: its gauge series went with it, and stays gone
	}
	orphansFound.WithLabelValues(m.Name).Set(float64(len(lost)))
	for _, g := range lost {
		o.report(ctx, m, c, g)
	}
}

// dueAt tells whether member's scan should start now, and marks it running.
func (o *Scanner) dueAt(member string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if now.Sub(o.last[member]) < o.Interval || o.running.Has(member) {
		return false
	}
	if o.last == nil {
		o.last = map[string]time.Time{}
	}
	if o.running == nil {
		o.running = sets.New[string]()
	}
	o.last[member] = now
	o.running.Insert(member)
	return true
}

// finished marks member's scan done.
func (o *Scanner) finished(member string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running.Delete(member)
}

// ours groups the hub's objects in the member's cache (in the member, while it may lag) by
// pipeline UID and namespace.
func (o *Scanner) ours(ctx context.Context, c *members.Conn) (map[key]*Group, error) {
	out := map[key]*Group{}
	var from client.Reader = c.Cached
	lists := membercache.Lists()
	if o.MayLag != nil && o.MayLag(c.Host()) {
		// From the member itself: metadata only, which is all a group is made of.
		from, lists = c.Live, membercache.MetadataLists()
	}
	for _, list := range lists {
		if err := from.List(ctx, list, client.HasLabels{urutauv1alpha1.LabelHubPipelineUID}); err != nil {
			return nil, fmt.Errorf("listing %T in the member cache: %w", list, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			obj, ok := it.(client.Object)
			if !ok {
				continue
			}
			l := obj.GetLabels()
			k := key{uid: types.UID(l[urutauv1alpha1.LabelHubPipelineUID]), namespace: obj.GetNamespace()}
			g := out[k]
			if g == nil {
				g = &Group{UID: k.uid, Namespace: k.namespace, Name: l[urutauv1alpha1.LabelHubName]}
				out[k] = g
			}
			g.Objects++
		}
	}
	return out, nil
}

// records is what the hub accounts for in one member.
type records struct {
	// known are the (pipeline UID, member namespace) pairs an entry records in the member (by
	// name or identity): a pipeline placed there is no licence for its objects in another
	// namespace of it.
	known sets.Set[key]
	// live are the pipelines on the hub, by UID.
	live map[types.UID]*urutauv1alpha1.CDCPipeline
	// placed are the (namespace, pipeline name) pairs an Active entry records in the member, with
	// the pipeline's UID: their coordinator pods are checked for strays.
	placed map[types.NamespacedName]types.UID
}

// recorded reads what the hub accounts for in member, whose identity is id ("" when unknown).
func (o *Scanner) recorded(ctx context.Context, member, id string) (records, error) {
	rec := records{known: sets.New[key](), live: map[types.UID]*urutauv1alpha1.CDCPipeline{}, placed: map[types.NamespacedName]types.UID{}}
	leases := &urutauv1alpha1.ReaderLeaseList{}
	if err := o.Hub.List(ctx, leases, client.InNamespace(o.LeaseNamespace)); err != nil {
		return rec, err
	}
	for _, l := range leases.Items {
		for _, e := range l.Spec.Members {
			if e.Cluster != member && (id == "" || e.ClusterID != id) {
				continue
			}
			rec.known.Insert(key{uid: e.PipelineUID, namespace: e.Namespace})
			if e.State == urutauv1alpha1.LeaseMemberActive {
				rec.placed[types.NamespacedName{Namespace: e.Namespace, Name: e.PipelineName}] = e.PipelineUID
			}
		}
	}
	pipelines := &urutauv1alpha1.CDCPipelineList{}
	if err := o.Hub.List(ctx, pipelines); err != nil {
		return rec, err
	}
	for i := range pipelines.Items {
		rec.live[pipelines.Items[i].UID] = &pipelines.Items[i]
	}
	return rec, nil
}

// strayOf is the live pipeline group g belongs to, when g is in that pipeline's namespace, the
// only member namespace the hub places it in; nil otherwise. Objects that carry a live pipeline's
// UID label in another namespace (a restore into a renamed namespace, or labels copied by anyone
// who may write there) are reported as orphans instead: recording them in the pipeline's lease
// would let whoever can label objects in some member namespace hold that pipeline's moves.
func (rec records) strayOf(g *Group) *urutauv1alpha1.CDCPipeline {
	if p := rec.live[g.UID]; p != nil && p.Namespace == g.Namespace {
		return p
	}
	return nil
}

// confirm keeps the groups this scan and the one before both found unaccounted for.
func (o *Scanner) confirm(member string, found map[key]*Group, known sets.Set[key]) []*Group {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := sets.New[key]()
	var out []*Group
	for k, g := range found {
		if known.Has(k) {
			continue
		}
		now.Insert(k)
		if o.suspects[member].Has(k) {
			out = append(out, g)
		}
	}
	if o.suspects == nil {
		o.suspects = map[string]sets.Set[key]{}
	}
	o.suspects[member] = now
	return out
}

// confirmLive recounts group g in the member itself before the scan acts on it, and reports
// whether the member still holds any of it. The scan reads the member's cache, which lags for up
// to a minute after the member was down (memberCacheRecovery): it would show objects the hub has
// since deleted, record them as strays every scan, and have the pipeline reconciled for nothing.
// A member that cannot be listed is not acted on: the next scan asks again. The cost, a list per
// kind in one namespace, is paid only for groups two scans in a row found unaccounted for.
func confirmLive(ctx context.Context, live client.Reader, g *Group) bool {
	n := 0
	for _, list := range membercache.Lists() {
		err := live.List(ctx, list, client.InNamespace(g.Namespace), client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: string(g.UID)})
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("orphan scan: recounting in the member failed; not acted on", "namespace", g.Namespace, "pipelineUID", g.UID, "error", err.Error())
			return false
		}
		n += meta.LenList(list)
	}
	g.Objects = n
	return n > 0
}

// report tells of one orphan group, and deletes it when allowed.
func (o *Scanner) report(ctx context.Context, m inventory.Member, c *members.Conn, g *Group) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", m.Name, "namespace", g.Namespace, "pipelineUID", g.UID)
	entry := entryObject(o.EntryKind, m)
	if !o.DeleteAll && m.Annotations[urutauv1alpha1.AnnotationDeleteOrphans] != "true" {
		log.Info("orphans found: objects of a pipeline the hub has no record of; not deleted", "objects", g.Objects, "pipeline", g.Name)
		o.Recorder.Eventf(entry, nil, corev1.EventTypeWarning, EventFound, "Scan",
			"cluster %q holds %d object(s) of pipeline %s/%s (uid %s) that no ReaderLease records: delete them by label %s=%s, or let the hub do it (annotation %s=\"true\" on this entry)",
			m.Name, g.Objects, g.Namespace, g.Name, g.UID, urutauv1alpha1.LabelHubPipelineUID, g.UID, urutauv1alpha1.AnnotationDeleteOrphans)
		return
	}
	e := urutauv1alpha1.LeaseMember{PipelineUID: g.UID, PipelineName: g.Name, Namespace: g.Namespace}
	res, err := memberwork.CleanupMember(ctx, c.Live, c.Cached, e, o.Patience)
	if err != nil {
		log.Info("deleting orphans failed", "error", err.Error())
		return
	}
	log.Info("orphans deleted", "deleted", res.Deleted, "scaledToZero", res.Scaled)
	o.Recorder.Eventf(entry, nil, corev1.EventTypeNormal, EventDeleted, "Scan",
		"deleted %d orphaned object(s) of pipeline %s/%s (uid %s) in cluster %q%s", res.Deleted, g.Namespace, g.Name, g.UID, m.Name, scaledNote(res.Scaled))
}

// scaledNote tells of coordinator StatefulSets a pass scaled to zero rather than deleted.
func scaledNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d coordinator StatefulSet(s) scaled to zero, deleted by a later scan once their controller has seen the scale", n)
}

// entryObject is a reference to the member's inventory entry, for events.
func entryObject(kind schema.GroupVersionKind, m inventory.Member) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID}}
	p.SetGroupVersionKind(kind)
	return p
}

// ScanTimeout bounds one scan of one member: a few member timeouts, for the lists, the
// stray pod lists of each namespace and the recounts (each request also bounded by its own).
func ScanTimeout(memberTimeout time.Duration) time.Duration {
	return 6 * memberTimeout
}
