package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/localfleet"
)

// env is the running chaos fleet.
type env struct {
	opts localfleet.Options
	// sup keep each member's control plane running, or its ports bound while it is stopped.
	sup     map[string]*localfleet.Supervisor
	hub     client.Client
	members map[string]client.Client
	dyn     map[string]dynamic.Interface
	hubs    *hubs
	bounds  Bounds
	logf    func(format string, args ...any)
	// entries are the members' kubeconfig Secrets as last removed (or as the fleet made them),
	// for Register.
	entries map[string]*corev1.Secret
	// proxies carry the hub's connections to each member (proxy.go).
	proxies map[string]*proxy
	// holder serves the slow admission webhook (slow.go), once a history asked for one.
	holder *holder
}

// executor plays one history in namespace ns of the fleet and records every op.
type executor struct {
	env *env
	// nss are the history's namespaces (historyNamespaces).
	nss []string
	// n numbers the history (serverIds).
	n   int
	rec *recorder
	ops []OpRecord
	// hammers stop when their context ends.
	hammers sync.WaitGroup
	stopAll context.CancelFunc
	// touched collects the member objects the running op writes by hand (OpRecord.Touched).
	touched []string
	// exports are what Export saved, by member and pipeline name.
	exports map[string]exportedSet
	// edits numbers EditSTS's template edits, so each is a change.
	edits int
}

// run plays the ops one after another; an op that fails is recorded and the history goes on.
func (x *executor) run(ctx context.Context, h History) {
	hctx, cancel := context.WithCancel(ctx)
	x.stopAll = cancel
	defer func() {
		cancel()
		x.hammers.Wait()
	}()
	for i, o := range h.Ops {
		if ctx.Err() != nil {
			return
		}
		r := OpRecord{Index: i, Op: o, HubsBefore: x.env.hubs.state(), Start: x.rec.now()}
		x.touched = nil
		refs, err := x.do(hctx, o)
		r.End, r.Pipelines, r.HubsAfter, r.Touched = x.rec.now(), refs, x.env.hubs.state(), x.touched
		if err != nil {
			r.Err = err.Error()
		}
		if _, quiet := o.(Wait); !quiet {
			x.env.logf("#%02d %s [%s..%s]%s", i, o, stampString(r.Start), stampString(r.End), errSuffix(r.Err))
		}
		x.ops = append(x.ops, r)
	}
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// do gives op o its effect.
func (x *executor) do(ctx context.Context, o Op) ([]PipelineRef, error) {
	switch o := o.(type) {
	case Create:
		ref, err := x.createRetrying(ctx, o)
		return refs(ref), err
	case CreateRace:
		return x.race(ctx, o)
	case Place:
		ref, err := x.place(ctx, o)
		return refs(ref), err
	case Delete:
		ref, err := x.delete(ctx, o.Name)
		return refs(ref), err
	case Respec:
		ref, err := x.respec(ctx, o)
		return refs(ref), err
	case Terminate:
		ref, err := x.terminate(ctx, o.Name, true)
		return refs(ref), err
	case Clear:
		ref, err := x.terminate(ctx, o.Name, false)
		return refs(ref), err
	case DeleteAll:
		return x.deleteAll(ctx)
	}
	if ok, err := x.doHand(ctx, o); ok {
		return nil, err
	}
	return nil, x.doFleet(ctx, o)
}

// doFleet runs the ops that touch processes, members and pacing rather than pipelines.
func (x *executor) doFleet(ctx context.Context, o Op) error {
	e := x.env
	switch o := o.(type) {
	case StopMember:
		return e.stopMember(ctx, o.Member)
	case StartMember:
		return e.startMember(ctx, o.Member)
	case Partition:
		return e.partition(o.Member, o.Hang, false)
	case Reconnect:
		return e.partition(o.Member, false, true)
	case SlowPath:
		return e.proxies[o.Member].setSlow(ms(o.Millis))
	case SlowAdmission:
		return x.slowAdmission(ctx, o)
	case DropAdmission:
		return dropWebhook(ctx, e.members[o.Member])
	case PauseKubelet:
		return localfleet.PauseKubelet(e.opts, o.Member)
	case ResumeKubelet:
		return localfleet.ResumeKubelet(e.opts, o.Member)
	case KillHub:
		return e.hubs.kill(ctx, o.Hub)
	case StartHub:
		return e.hubs.start(ctx, o.Hub)
	case Failover:
		return x.failover(ctx)
	case FreezeHub:
		return x.freezeLeader(ctx, o)
	case Hold:
		return x.hold(ctx, o)
	case Release:
		return x.release(ctx, o.Member, 1)
	case Hammer:
		x.hammer(ctx, o)
		return nil
	case Wait:
		sleep(ctx, ms(o.Millis))
		return nil
	case Await:
		ok, err := x.await(ctx, o.Cond, o.Name, o.Member, ms(o.Millis), 100*time.Millisecond)
		if err == nil && !ok {
			err = fmt.Errorf("%s %s %s not met within %s", o.Cond, o.Name, o.Member, ms(o.Millis))
		}
		return err
	case KillHubWhen:
		return x.killHubWhen(ctx, o)
	case Heal:
		return x.heal(ctx)
	}
	return fmt.Errorf("op %s has no executor", o.Kind())
}

func refs(r *PipelineRef) []PipelineRef {
	if r == nil || r.UID == "" {
		return nil
	}
	return []PipelineRef{*r}
}

func refOf(p *urutauv1alpha1.CDCPipeline) *PipelineRef {
	rv, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
	ref := &PipelineRef{Name: p.Name, UID: string(p.UID), Placement: sortedCopy(p.Spec.Placement.Clusters),
		Generation: p.Generation, RV: rv, Selector: p.Spec.Placement.ClusterSelector != nil}
	if p.Spec.Definition.Inline != nil {
		ref.Identity = identityOf(p.Spec.Definition.Inline.Raw)
	}
	ref.Fenced = p.Spec.Placement.Fenced
	if fo := p.Spec.Placement.Failover; fo != nil {
		ref.Failover = &FailoverSpec{Candidates: slices.Clone(fo.Candidates), CandidateSelector: fo.CandidateSelector != nil}
		if fo.Threshold != nil {
			ref.Failover.ThresholdMillis = int(fo.Threshold.Milliseconds())
		}
	}
	return ref
}

func (x *executor) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: x.ns(name), Name: name}
}

// ns is the namespace of pipeline name (and of its objects in members).
func (x *executor) ns(name string) string { return namespaceOf(x.nss, name) }

func (x *executor) get(ctx context.Context, name string) (*urutauv1alpha1.CDCPipeline, error) {
	p := &urutauv1alpha1.CDCPipeline{}
	return p, x.env.hub.Get(ctx, x.key(name), p)
}

// create submits a pipeline. When the answer is lost (an error other than a refusal), the
// pipeline is read back: it may have been created all the same.
func (x *executor) create(ctx context.Context, o Create) (*PipelineRef, error) {
	name := o.Name
	kind, identity := sourceOf(x.n, o.Identity, o.Padded)
	p := newPipeline(x.ns(name), name, kind, identity, o.Placement, o.Selector, o.Bypass)
	withFence(p, o)
	start := time.Now()
	err := x.env.hub.Create(ctx, p)
	if err == nil {
		return refOf(p), nil
	}
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		if got, gerr := x.get(ctx, name); gerr == nil && got.CreationTimestamp.After(start.Add(-time.Second)) {
			return refOf(got), err
		}
	}
	return nil, err
}

// createRetrying creates, and tries again for o.RetryMillis while a pipeline of that name is
// still being deleted.
func (x *executor) createRetrying(ctx context.Context, o Create) (*PipelineRef, error) {
	deadline := time.Now().Add(ms(o.RetryMillis))
	for {
		ref, err := x.create(ctx, o)
		if !apierrors.IsAlreadyExists(err) || time.Now().After(deadline) {
			return ref, err
		}
		if old, gerr := x.get(ctx, o.Name); gerr == nil && old.DeletionTimestamp == nil {
			return ref, err
		}
		sleep(ctx, 250*time.Millisecond)
	}
}

// race creates two pipelines from two goroutines released at the same instant.
func (x *executor) race(ctx context.Context, o CreateRace) ([]PipelineRef, error) {
	var wg sync.WaitGroup
	go1 := make(chan struct{})
	out := make([]*PipelineRef, len(o.Names))
	errs := make([]error, len(o.Names))
	for i, name := range o.Names {
		var pl []string
		if i < len(o.Placements) {
			pl = o.Placements[i]
		}
		wg.Go(func() {
			<-go1
			out[i], errs[i] = x.create(ctx, Create{Name: name, Identity: o.Identity, Placement: pl, Bypass: o.Bypass, Padded: o.Padded && i == 1})
		})
	}
	close(go1)
	wg.Wait()
	var rs []PipelineRef
	for _, r := range out {
		rs = append(rs, refs(r)...)
	}
	return rs, errors.Join(errs...)
}

// place changes the placement (and writes the confirm annotation when given) with a merge patch,
// as `kubectl patch` or a GitOps tool does: no resourceVersion, so a concurrent writer (Hammer)
// cannot make it fail.
func (x *executor) place(ctx context.Context, o Place) (*PipelineRef, error) {
	var selector any // null removes it
	if o.Selector {
		selector = map[string]any{"matchLabels": map[string]string{selectorKey: selectorValue}}
	}
	doc := map[string]any{"spec": map[string]any{"placement": map[string]any{"clusters": sortedCopy(o.Placement), "clusterSelector": selector}}}
	if len(o.ConfirmGone) > 0 {
		doc["metadata"] = map[string]any{"annotations": map[string]any{urutauv1alpha1.AnnotationConfirmGone: strings.Join(o.ConfirmGone, ",")}}
	}
	ref, err := x.patch(ctx, o.Name, doc)
	if err != nil {
		return nil, err
	}
	ref.ConfirmGone = o.ConfirmGone
	return ref, nil
}

// patch merge-patches pipeline name with doc, and tells whether that moved its generation.
func (x *executor) patch(ctx context.Context, name string, doc map[string]any) (*PipelineRef, error) {
	p, err := x.get(ctx, name)
	if err != nil {
		return nil, err
	}
	gen := p.Generation
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if err := x.env.hub.Patch(ctx, p, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(fieldOwner)); err != nil {
		return nil, err
	}
	ref := refOf(p)
	ref.SpecChanged = p.Generation > gen
	return ref, nil
}

// respec sets the pipeline's spec.logLevel (a merge patch; "" removes it).
func (x *executor) respec(ctx context.Context, o Respec) (*PipelineRef, error) {
	var level any // null removes it
	if o.LogLevel != "" {
		level = o.LogLevel
	}
	return x.patch(ctx, o.Name, map[string]any{"spec": map[string]any{"logLevel": level}})
}

func (x *executor) delete(ctx context.Context, name string) (*PipelineRef, error) {
	p, err := x.get(ctx, name)
	if err != nil {
		return nil, err
	}
	uid := p.UID
	if err := x.env.hub.Delete(ctx, p, client.Preconditions{UID: &uid}); err != nil {
		return nil, err
	}
	return refOf(p), nil
}

// terminate sets (on) or removes status.terminated through the status subresource, as a person
// with kubectl does: a merge patch of that field only.
func (x *executor) terminate(ctx context.Context, name string, on bool) (*PipelineRef, error) {
	p, err := x.get(ctx, name)
	if err != nil {
		return nil, err
	}
	patch := []byte(`{"status":{"terminated":null}}`)
	if on {
		patch = []byte(`{"status":{"terminated":{"reason":"ManualStop","message":"stopped by the chaos suite"}}}`)
	}
	if err := x.env.hub.Status().Patch(ctx, p, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldOwner)); err != nil {
		return nil, err
	}
	return refOf(p), nil
}

func (x *executor) deleteAll(ctx context.Context) ([]PipelineRef, error) {
	list := &urutauv1alpha1.CDCPipelineList{}
	for _, ns := range x.nss {
		l := &urutauv1alpha1.CDCPipelineList{}
		if err := x.env.hub.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		list.Items = append(list.Items, l.Items...)
	}
	var out []PipelineRef
	var errs []error
	for i := range list.Items {
		p := &list.Items[i]
		if err := x.env.hub.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		out = append(out, *refOf(p))
	}
	return out, errors.Join(errs...)
}

// failover makes sure both hubs run, waits for one to lead, and kills that one.
func (x *executor) failover(ctx context.Context) error {
	l, err := x.bothUp(ctx)
	if err != nil {
		return err
	}
	return x.env.hubs.kill(ctx, l)
}

// bothUp starts both hubs and returns the one that leads.
func (x *executor) bothUp(ctx context.Context) (int, error) {
	h := x.env.hubs
	for i := range 2 {
		if err := h.start(ctx, i); err != nil {
			return -1, err
		}
	}
	l := h.awaitLeader(ctx, 30*time.Second)
	if l < 0 {
		return -1, errors.New("no hub took the lead within 30s")
	}
	return l, nil
}

// freezeLeader freezes the leading hub for o.Millis, with both started so that the other replica
// takes the lead meanwhile.
func (x *executor) freezeLeader(ctx context.Context, o FreezeHub) error {
	l, err := x.bothUp(ctx)
	if err != nil {
		return err
	}
	return x.env.hubs.freeze(ctx, l, ms(o.Millis))
}

// killHubWhen polls tightly for the condition and kills the leader the moment it holds.
func (x *executor) killHubWhen(ctx context.Context, o KillHubWhen) error {
	ok, err := x.await(ctx, o.Cond, o.Name, o.Member, ms(o.Millis), 2*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("condition %s not met: %w", o.Cond, err)
	}
	l := x.env.hubs.leader()
	if l < 0 {
		return errors.New("no hub leads")
	}
	return x.env.hubs.kill(ctx, l)
}

// hammerWriters is how many writers a Hammer runs at once: enough that the pipeline's
// resourceVersion moves every few milliseconds, so that the hub's writes with a resourceVersion
// precondition meet conflicts.
const hammerWriters = 3

// hammer merge-patches an annotation of the pipeline in a loop for o.Millis, in the background.
func (x *executor) hammer(ctx context.Context, o Hammer) {
	for w := range hammerWriters {
		x.hammers.Go(func() {
			hctx, cancel := context.WithTimeout(ctx, ms(o.Millis))
			defer cancel()
			p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: x.ns(o.Name), Name: o.Name}}
			for i := 0; hctx.Err() == nil; i++ {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d-%d"}}}`, hammerAnnotation, w, i)
				if err := x.env.hub.Patch(hctx, p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					sleep(hctx, 50*time.Millisecond)
				}
			}
		})
	}
}

// heal brings the fleet back to health for the end of a history.
func (x *executor) heal(ctx context.Context) error {
	e := x.env
	errs := append(e.membersUp(ctx), e.inventoryBack(ctx, false)...)
	errs = append(errs, e.pathsOpen()...)
	errs = append(errs, e.webhooksGone(ctx)...)
	errs = append(errs, e.aliasesGone(ctx)...)
	if err := x.release(ctx, "", 40); err != nil {
		errs = append(errs, err)
	}
	if !e.hubs.running(0) {
		if err := e.hubs.start(ctx, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopMember kills the member's API server; its supervisor keeps its ports while it is down.
// The hub's path refuses first, as the API server's own port does once it is stopped.
func (e *env) stopMember(ctx context.Context, m string) error {
	if err := e.proxies[m].setDown(true); err != nil {
		return err
	}
	return e.sup[m].StopAPIServer(ctx)
}

// startMember starts the member's API server again; it returns once it answers.
func (e *env) startMember(ctx context.Context, m string) error {
	err := e.sup[m].StartAPIServer(ctx)
	return errors.Join(err, e.proxies[m].setDown(e.sup[m].Down()))
}

// memberObject finds the object of kind (a memberObjectKinds key without the plural) of pipeline
// name in member.
func (x *executor) memberObject(ctx context.Context, member, name, kind string) (*unstructured.Unstructured, error) {
	p, err := x.get(ctx, name)
	if err != nil {
		return nil, err
	}
	gvr, ok := memberObjectKinds[kind+"s"]
	if !ok {
		return nil, fmt.Errorf("hold: unknown object kind %q", kind)
	}
	list, err := x.env.dyn[member].Resource(gvr).Namespace(p.Namespace).List(ctx, listOpts(urutauv1alpha1.LabelHubPipelineUID+"="+string(p.UID)))
	if err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no %s of %s in %s", kind, name, member)
	}
	slices.SortFunc(list.Items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return &list.Items[0], nil
}

// hold adds the foreign finalizer to one object of the pipeline in the member.
func (x *executor) hold(ctx context.Context, o Hold) error {
	u, err := x.memberObject(ctx, o.Member, o.Name, o.Object)
	if err != nil {
		return err
	}
	if slices.Contains(u.GetFinalizers(), holdFinalizer) {
		return nil
	}
	u.SetFinalizers(append(u.GetFinalizers(), holdFinalizer))
	gvr := memberObjectKinds[o.Object+"s"]
	_, err = x.env.dyn[o.Member].Resource(gvr).Namespace(u.GetNamespace()).Update(ctx, u, updateOpts())
	return err
}

// release removes the foreign finalizer from every object of the namespace in member (every
// member when empty), in up to attempts rounds (a member that does not answer is left for the
// next round; the Release op tries once, Heal waits for members that just came back).
func (x *executor) release(ctx context.Context, member string, attempts int) error {
	ms := Members
	if member != "" {
		ms = []string{member}
	}
	var errs []error
	for _, m := range ms {
		for _, ns := range x.nss {
			for _, kind := range sortedKinds() {
				if err := x.releaseKind(ctx, m, ns, kind, attempts); err != nil {
					errs = append(errs, fmt.Errorf("%s in %s/%s: %w", kind, m, ns, err))
					break
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (x *executor) releaseKind(ctx context.Context, member, ns, kind string, attempts int) error {
	res := x.env.dyn[member].Resource(memberObjectKinds[kind]).Namespace(ns)
	var last error
	for attempt := 0; attempt < attempts; attempt++ {
		list, err := res.List(ctx, listOpts(urutauv1alpha1.LabelHubPipelineUID))
		if err != nil {
			last = err
			sleep(ctx, 250*time.Millisecond)
			continue
		}
		last = nil
		for i := range list.Items {
			u := &list.Items[i]
			if !slices.Contains(u.GetFinalizers(), holdFinalizer) {
				continue
			}
			u.SetFinalizers(slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return f == holdFinalizer }))
			if _, err := res.Update(ctx, u, updateOpts()); err != nil && !apierrors.IsNotFound(err) {
				last = err
			}
		}
		if last == nil {
			return nil
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return last
}

// await polls until cond holds or timeout passes; it reports whether it held.
func (x *executor) await(ctx context.Context, cond, name, member string, timeout, every time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := x.holds(ctx, cond, name, member)
		if err == nil && ok {
			return true, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, err
		}
		sleep(ctx, every)
	}
}

func (x *executor) holds(ctx context.Context, cond, name, member string) (bool, error) {
	switch cond {
	case CondRunning, CondNoPods:
		n, running, err := x.pods(ctx, name, member)
		if cond == CondRunning {
			return running > 0, err
		}
		return n == 0, err
	case CondTombstone, CondNoTombstone:
		n, err := x.tombstones(ctx, name, member)
		return (n > 0) == (cond == CondTombstone), err
	case CondGone:
		_, err := x.get(ctx, name)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	case CondOneReader:
		return x.oneReader(ctx, name, member)
	case CondClean:
		return x.clean(ctx, name, member)
	case CondFailoverOn:
		p, err := x.get(ctx, name)
		return err == nil && p.Status.Failover != nil && p.Status.Failover.Member == member, err
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// oneReader: the coordinator StatefulSet of name in member asks for one replica, and exactly one
// coordinator pod of name is there, Running.
func (x *executor) oneReader(ctx context.Context, name, member string) (bool, error) {
	sts, err := x.coordinatorSTS(ctx, member, name)
	if err != nil {
		return false, err
	}
	replicas, found, _ := unstructured.NestedInt64(sts.Object, "spec", "replicas")
	n, running, err := x.pods(ctx, name, member)
	return found && replicas == 1 && n == 1 && running == 1, err
}

// clean: no coordinator pod of name in member, and no object there with the live pipeline's UID.
func (x *executor) clean(ctx context.Context, name, member string) (bool, error) {
	n, _, err := x.pods(ctx, name, member)
	if err != nil || n > 0 {
		return false, err
	}
	p, err := x.get(ctx, name)
	if err != nil {
		return false, err
	}
	for _, kind := range sortedKinds() {
		list, err := x.env.dyn[member].Resource(memberObjectKinds[kind]).Namespace(p.Namespace).List(ctx, listOpts(urutauv1alpha1.LabelHubPipelineUID+"="+string(p.UID)))
		if err != nil || len(list.Items) > 0 {
			return false, err
		}
	}
	return true, nil
}

// pods counts the coordinator pods of name in member (every member when empty), and how many
// are Running.
func (x *executor) pods(ctx context.Context, name, member string) (int, int, error) {
	ms := Members
	if member != "" {
		ms = []string{member}
	}
	n, running := 0, 0
	for _, m := range ms {
		list := &corev1.PodList{}
		if err := x.env.members[m].List(ctx, list, client.InNamespace(x.ns(name)),
			client.MatchingLabels{urutauv1alpha1.LabelApp: "urutau-coordinator", urutauv1alpha1.LabelPipeline: name}); err != nil {
			return 0, 0, err
		}
		for _, p := range list.Items {
			n++
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
	}
	return n, running, nil
}

// tombstones counts the tombstones of pipeline name (any UID) for member (any when empty): the
// ReaderLease entries the hub must still empty without the member's say-so: those of a pipeline
// whose CR is gone from the hub, and those a person confirmed gone (state Gone) of a live one.
func (x *executor) tombstones(ctx context.Context, name, member string) (int, error) {
	live, err := x.get(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return 0, err
	}
	list := &urutauv1alpha1.ReaderLeaseList{}
	if err := x.env.hub.List(ctx, list, client.InNamespace(localfleet.HubNamespace)); err != nil {
		return 0, err
	}
	n := 0
	for _, l := range list.Items {
		for _, e := range l.Spec.Members {
			if e.PipelineNamespace == x.ns(name) && e.PipelineName == name && (member == "" || e.Cluster == member) &&
				(live == nil || e.PipelineUID != live.UID || e.State == urutauv1alpha1.LeaseMemberGone) {
				n++
			}
		}
	}
	return n, nil
}
