package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet"
)

// Kinds the recorder names its streams by.
const (
	kindPods      = "pods"
	kindPipelines = "cdcpipelines"
	kindLeases    = "readerleases"
	// kindFences are the Leases of members' namespaces: those the hub renews for fenced
	// placements and any other a fence may read.
	kindFences = "fenceleases"
)

// hubCluster names the hub in samples and events.
const hubCluster = "hub"

// stream is one watched resource of one cluster.
type stream struct {
	kind string
	gvr  schema.GroupVersionResource
	// nss are the namespaces listed and watched: one is asked by itself; several are asked for
	// across all namespaces and what is in none of them dropped (a list across two namespaces
	// is one consistent read, where two lists would be two); none is the whole cluster.
	nss      []string
	selector string
	// optional: the resource may not be served (the ReaderLease CRD before it exists): "not
	// found" is "none", and the stream looks again later.
	optional bool
}

// memberObjectKinds are the kinds the hub writes into a member (docs/architecture.md), watched
// for I3 and listed for I2.
var memberObjectKinds = map[string]schema.GroupVersionResource{
	"statefulsets":         {Group: "apps", Version: "v1", Resource: "statefulsets"},
	"configmaps":           {Version: "v1", Resource: "configmaps"},
	"services":             {Version: "v1", Resource: "services"},
	"serviceaccounts":      {Version: "v1", Resource: "serviceaccounts"},
	"roles":                {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"rolebindings":         {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"poddisruptionbudgets": {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
}

var (
	podsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pipelinesGVR = urutauv1alpha1.GroupVersion.WithResource("cdcpipelines")
	leasesGVR    = urutauv1alpha1.GroupVersion.WithResource("readerleases")
	fencesGVR    = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// coordinatorSelector selects coordinator pods: what reads a source is a pod.
const coordinatorSelector = urutauv1alpha1.LabelApp + "=urutau-coordinator"

// memberStreams are what the recorder watches in a member. Every Lease, labelled or not: a fence
// reads its Lease by name, so a renewal written by hand counts as much as the hub's.
func memberStreams(nss []string) []stream {
	out := []stream{{kind: kindPods, gvr: podsGVR, nss: nss, selector: coordinatorSelector},
		{kind: kindFences, gvr: fencesGVR, nss: nss}}
	for _, k := range sortedKinds() {
		out = append(out, stream{kind: k, gvr: memberObjectKinds[k], nss: nss, selector: urutauv1alpha1.LabelHubPipelineUID})
	}
	return out
}

func hubStreams(nss []string) []stream {
	return []stream{
		{kind: kindPipelines, gvr: pipelinesGVR, nss: nss},
		{kind: kindLeases, gvr: leasesGVR, optional: true},
	}
}

func sortedKinds() []string {
	out := make([]string, 0, len(memberObjectKinds))
	for k := range memberObjectKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// dynamicFor is a client of the cluster behind kubeconfig with short request timeouts (a stopped
// member must fail fast, not hang the recorder).
func dynamicFor(kubeconfig string) (dynamic.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return dynamic.NewForConfig(cfg)
}

// watcher records every cluster of the fleet while a history runs.
type watcher struct {
	rec *recorder
	// clients by cluster name (hub and members).
	clients map[string]dynamic.Interface
	nss     []string
	kicks   map[string]chan struct{}
	wg      sync.WaitGroup
}

func newWatcher(rec *recorder, clients map[string]dynamic.Interface, nss []string) *watcher {
	w := &watcher{rec: rec, clients: clients, nss: nss, kicks: map[string]chan struct{}{}}
	for name := range clients {
		w.kicks[name] = make(chan struct{}, 1)
	}
	return w
}

// start runs the streams and pollers until ctx ends; wait waits for them.
func (w *watcher) start(ctx context.Context) {
	for name, dyn := range w.clients {
		streams := memberStreams(w.nss)
		poll := stream{kind: kindPods, gvr: podsGVR, nss: w.nss, selector: coordinatorSelector}
		if name == hubCluster {
			streams = hubStreams(w.nss)
			poll = stream{kind: kindPipelines, gvr: pipelinesGVR, nss: w.nss}
		}
		for _, s := range streams {
			w.wg.Go(func() { w.watchLoop(ctx, name, dyn, s) })
		}
		w.wg.Go(func() { w.pollLoop(ctx, name, dyn, poll) })
	}
}

func (w *watcher) wait() { w.wg.Wait() }

// kickAll makes every member poll now: a pod appeared or went somewhere, and the clocks of the
// other members must be read close to that moment.
func (w *watcher) kickAll() {
	for name, k := range w.kicks {
		if name == hubCluster {
			continue
		}
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

// pollInterval is how often each cluster's clock is read when nothing happens.
const pollInterval = 200 * time.Millisecond

// pollLoop reads the cluster's clock: a consistent list every pollInterval, or at once when
// kicked (at most every 50ms).
func (w *watcher) pollLoop(ctx context.Context, cluster string, dyn dynamic.Interface, s stream) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if _, err := w.list(ctx, cluster, dyn, s); err != nil && ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kicks[cluster]:
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// list lists the stream once and records it as a sample.
func (w *watcher) list(ctx context.Context, cluster string, dyn dynamic.Interface, s stream) (*unstructured.UnstructuredList, error) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := w.rec.now()
	list, err := resource(dyn, s).List(lctx, metav1.ListOptions{LabelSelector: s.selector})
	end := w.rec.now()
	if err != nil {
		return nil, err
	}
	rv, err := parseRV(list.GetResourceVersion())
	if err != nil {
		return nil, err
	}
	s.kept(list)
	smp := Sample{Cluster: cluster, Kind: s.kind, Start: start, End: end, RV: rv}
	for i := range list.Items {
		smp.Present = append(smp.Present, string(list.Items[i].GetUID()))
	}
	w.rec.sample(smp)
	return list, nil
}

func resource(dyn dynamic.Interface, s stream) dynamic.ResourceInterface {
	if len(s.nss) != 1 {
		return dyn.Resource(s.gvr)
	}
	return dyn.Resource(s.gvr).Namespace(s.nss[0])
}

// keep tells whether an object the stream's request returned is in one of its namespaces.
func (s stream) keep(u *unstructured.Unstructured) bool {
	return len(s.nss) == 0 || slices.Contains(s.nss, u.GetNamespace())
}

// kept drops from list what is in none of the stream's namespaces.
func (s stream) kept(list *unstructured.UnstructuredList) {
	list.Items = slices.DeleteFunc(list.Items, func(u unstructured.Unstructured) bool { return !s.keep(&u) })
}

// watchLoop lists, then watches from the list's revision; when the watch breaks (a member
// stopped, a timeout) it lists again and records what changed in between as range events.
func (w *watcher) watchLoop(ctx context.Context, cluster string, dyn dynamic.Interface, s stream) {
	st := &streamState{cluster: cluster, kind: s.kind, known: map[string]ObjInfo{}}
	for ctx.Err() == nil {
		list, err := w.list(ctx, cluster, dyn, s)
		if err != nil {
			wait := 200 * time.Millisecond
			if s.optional && apierrors.IsNotFound(err) {
				wait = 2 * time.Second
			}
			sleep(ctx, wait)
			continue
		}
		listRV, _ := parseRV(list.GetResourceVersion())
		for _, e := range st.relist(list.Items, listRV, w.rec.now()) {
			w.record(e)
		}
		w.follow(ctx, dyn, s, st)
	}
}

// follow consumes one watch until it ends.
func (w *watcher) follow(ctx context.Context, dyn dynamic.Interface, s stream, st *streamState) {
	wi, err := resource(dyn, s).Watch(ctx, metav1.ListOptions{
		LabelSelector: s.selector, ResourceVersion: strconv.FormatInt(st.lastRV, 10),
		AllowWatchBookmarks: true, TimeoutSeconds: ptrInt64(120),
	})
	if err != nil {
		sleep(ctx, 200*time.Millisecond)
		return
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Error {
			return
		}
		rv, err := parseRV(u.GetResourceVersion())
		if err != nil {
			return
		}
		if ev.Type == watch.Bookmark {
			st.lastRV = rv
			continue
		}
		if !s.keep(u) {
			st.lastRV = max(st.lastRV, rv)
			continue
		}
		if e, ok := st.apply(string(ev.Type), u, rv, w.rec.now()); ok {
			w.record(e)
		}
	}
}

func (w *watcher) record(e Event) {
	w.rec.event(e)
	if e.Kind == kindPods && e.Cluster != hubCluster {
		w.kickAll()
	}
}

// streamState is what one stream knows: the last version of every object and the revision its
// view is complete up to.
type streamState struct {
	cluster, kind string
	known         map[string]ObjInfo
	lastRV        int64
	listed        bool
}

// apply records one watch event.
func (st *streamState) apply(typ string, u *unstructured.Unstructured, rv int64, now Stamp) (Event, bool) {
	info := infoOf(st.kind, u)
	prev, had := st.known[info.UID]
	e := Event{Cluster: st.cluster, Kind: st.kind, Type: typ, Recv: now, RVLo: rv, RVHi: rv, Obj: info}
	e.HubWrite = isMemberObject(st.kind) && hubWrite(typ, prev, had, info)
	if typ == Deleted {
		delete(st.known, info.UID)
	} else {
		st.known[info.UID] = info
	}
	st.lastRV = max(st.lastRV, rv)
	return e, true
}

// relist turns a fresh list into the events the broken watch missed: objects that appeared,
// changed or went since lastRV, each at a range of revisions.
func (st *streamState) relist(items []unstructured.Unstructured, listRV int64, now Stamp) []Event {
	var out []Event
	lo := st.lastRV + 1
	if !st.listed {
		lo = 0
	}
	seen := map[string]bool{}
	for i := range items {
		info := infoOf(st.kind, &items[i])
		seen[info.UID] = true
		prev, had := st.known[info.UID]
		if had && prev.RV == info.RV {
			continue
		}
		typ := Added
		if had {
			typ = Modified
		}
		e := Event{Cluster: st.cluster, Kind: st.kind, Type: typ, Recv: now, RVLo: min(lo, info.RV), RVHi: info.RV, Obj: info}
		e.HubWrite = isMemberObject(st.kind) && hubWrite(typ, prev, had, info)
		out = append(out, e)
		st.known[info.UID] = info
	}
	for uid, prev := range st.known {
		if seen[uid] {
			continue
		}
		e := Event{Cluster: st.cluster, Kind: st.kind, Type: Deleted, Recv: now, RVLo: min(lo, listRV), RVHi: listRV, Obj: prev}
		e.HubWrite = isMemberObject(st.kind) && !prev.Deleting
		out = append(out, e)
		delete(st.known, uid)
	}
	st.lastRV, st.listed = listRV, true
	return out
}

func isMemberObject(kind string) bool {
	_, ok := memberObjectKinds[kind]
	return ok
}

// hubWrite tells whether the version info (of event typ, after prev) is a write by the hub: a
// creation, a change of content or of the hub's managed fields, or the start of a deletion. A
// status update, our own finalizer or the end of a deletion someone else holds is not.
func hubWrite(typ string, prev ObjInfo, had bool, info ObjInfo) bool {
	switch {
	case typ == Added:
		return true
	case typ == Deleted:
		return !had || !prev.Deleting
	case !had:
		return true
	}
	return prev.Sig != info.Sig || (!prev.Deleting && info.Deleting)
}

// infoOf extracts what the checker needs of u.
func infoOf(kind string, u *unstructured.Unstructured) ObjInfo {
	rv, _ := parseRV(u.GetResourceVersion())
	info := ObjInfo{
		UID: string(u.GetUID()), Namespace: u.GetNamespace(), Name: u.GetName(), RV: rv,
		PipelineUID: u.GetLabels()[urutauv1alpha1.LabelHubPipelineUID],
		Deleting:    u.GetDeletionTimestamp() != nil,
	}
	if refs := u.GetOwnerReferences(); len(refs) > 0 {
		info.Owner = string(refs[0].UID)
	}
	switch {
	case kind == kindPods:
		info.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
		info.PipelineName = u.GetLabels()[urutauv1alpha1.LabelPipeline]
		if cmd := podCommand(u); len(cmd) > 0 && cmd[0] == coordinator.FenceBinary {
			info.Fenced, info.Command = true, cmd
		}
	case kind == kindFences:
		info.Holder, _, _ = unstructured.NestedString(u.Object, "spec", "holderIdentity")
		info.Renew, _, _ = unstructured.NestedString(u.Object, "spec", "renewTime")
	case isMemberObject(kind):
		info.Sig = hubSig(u)
	case kind == kindPipelines:
		info.Pipeline = pipelineInfo(u)
	case kind == kindLeases:
		info.Holder, info.Entries = leaseEntries(u)
		for _, f := range []string{"spec", "status", "metadata"} {
			info.Mentions = append(info.Mentions, stringsIn(u.Object[f])...)
		}
	}
	return info
}

// podCommand is the command line of a pod's first container (command, then args; nil when it
// sets no command: the image's is unknown): a fenced coordinator's starts with the fence's, as
// the hub renders it.
func podCommand(u *unstructured.Unstructured) []string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
	if len(cs) == 0 {
		return nil
	}
	c, _ := cs[0].(map[string]any)
	cmd, _, _ := unstructured.NestedStringSlice(c, "command")
	if len(cmd) == 0 {
		return nil
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	return append(cmd, args...)
}

// leaseEntries reads a reader lease's holder UID and member entries.
func leaseEntries(u *unstructured.Unstructured) (string, []LeaseEntry) {
	holder, _, _ := unstructured.NestedString(u.Object, "spec", "holder", "uid")
	members, _, _ := unstructured.NestedSlice(u.Object, "spec", "members")
	out := make([]LeaseEntry, 0, len(members))
	for _, m := range members {
		e, ok := m.(map[string]interface{})
		if !ok {
			continue
		}
		str := func(k string) string { v, _ := e[k].(string); return v }
		out = append(out, LeaseEntry{Lease: u.GetName(), Cluster: str("cluster"), PipelineUID: str("pipelineUID"),
			PipelineNamespace: str("pipelineNamespace"), PipelineName: str("pipelineName"), State: str("state")})
	}
	return holder, out
}

// hubSig digests a member object's content (everything but status and server-set metadata) and
// the fields the hub's field managers own: what changes when the hub writes it.
func hubSig(u *unstructured.Unstructured) string {
	c := u.DeepCopy().Object
	delete(c, "status")
	meta, _ := c["metadata"].(map[string]any)
	var owned []any
	if meta != nil {
		for _, mf := range u.GetManagedFields() {
			if strings.HasPrefix(mf.Manager, fleet.DefaultFieldManager) && mf.Subresource == "" && mf.FieldsV1 != nil {
				owned = append(owned, mf.Manager+" "+string(mf.Operation)+" "+mf.FieldsV1.GetRawString())
			}
		}
		for _, k := range []string{"resourceVersion", "managedFields", "finalizers", "generation", "creationTimestamp",
			"uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
			delete(meta, k)
		}
	}
	raw, _ := json.Marshal([]any{c, owned})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

func pipelineInfo(u *unstructured.Unstructured) *PipelineInfo {
	p := &PipelineInfo{Generation: u.GetGeneration(), ConfirmGone: u.GetAnnotations()[urutauv1alpha1.AnnotationConfirmGone]}
	p.FailoverMember, _, _ = unstructured.NestedString(u.Object, "status", "failover", "member")
	p.Placement, _, _ = unstructured.NestedStringSlice(u.Object, "spec", "placement", "clusters")
	if inline, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "definition", "inline"); ok {
		if raw, err := json.Marshal(inline); err == nil {
			p.Identity = identityOf(raw)
		}
	}
	if t, ok, _ := unstructured.NestedMap(u.Object, "status", "terminated"); ok && t != nil {
		p.Terminated = true
		p.TermGeneration, _, _ = unstructured.NestedInt64(t, "observedGeneration")
	}
	p.Inventory, _, _ = unstructured.NestedStringSlice(u.Object, "status", "inventory")
	return p
}

// stringsIn is every string value under v.
func stringsIn(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, stringsIn(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, stringsIn(e)...)
		}
		return out
	}
	return nil
}

func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty resourceVersion")
	}
	return strconv.ParseInt(s, 10, 64)
}

func ptrInt64(n int64) *int64 { return &n }

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
