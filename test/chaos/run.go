package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// settleTimeout bounds how long a history waits, once its ops are done, for the fleet to clean
// up: the tombstone grace, the late-write fence (a member a hub write got no answer from counts
// as holding for 70 s: members.WriteLanding), two retries of a member that came back, and
// a margin.
const settleTimeout = tombstoneGrace + lateWriteFence + 2*retryInterval + 20*time.Second

// lateWriteFence is members.WriteLanding.
const lateWriteFence = 70 * time.Second

// Run plays history h (numbered n: its namespace and serverIds) on the fleet and returns what
// was recorded; Check judges it.
func (f *Fleet) Run(ctx context.Context, h History, n int) (*Recording, error) {
	e := f.env
	if err := f.reset(ctx); err != nil {
		return nil, fmt.Errorf("resetting the fleet: %w", err)
	}
	nss := historyNamespaces(n)
	for _, ns := range nss {
		if err := e.prepare(ctx, ns); err != nil {
			return nil, fmt.Errorf("preparing namespace %s: %w", ns, err)
		}
		defer e.cleanup(context.WithoutCancel(ctx), ns)
	}

	rec := newRecorder()
	w := newWatcher(rec, e.dyn, nss)
	wctx, stop := context.WithCancel(ctx)
	w.start(wctx)
	defer func() { stop(); w.wait() }()
	time.Sleep(time.Second) // every stream listed once

	x := &executor{env: e, nss: nss, n: n, rec: rec, exports: map[string]exportedSet{}}
	x.run(ctx, h)
	start := rec.now()
	if x.settle(ctx, settleTimeout) {
		e.logf("settled in %s", (rec.now() - start).Round(time.Millisecond))
	} else {
		e.logf("not settled after %s: the hubs print their goroutines to their logs (SIGQUIT)", settleTimeout)
		if err := e.hubs.dumpStacks(ctx); err != nil {
			e.logf("dumping the hubs' goroutines: %v", err)
		}
	}
	final := x.final(ctx)
	settled := rec.now()
	// A few more polls, so that every clock runs past the final reads.
	time.Sleep(3 * pollInterval)
	stop()
	w.wait()
	samples, events := rec.snapshot()
	return &Recording{
		History: h, Namespace: nss[0], Namespaces: nss, Ops: x.ops, Samples: samples, Events: events,
		Final: final, Settled: settled, Bounds: e.bounds,
	}, nil
}

// settle waits until the namespace is empty everywhere (the history ends by deleting every
// pipeline) and nothing of it is left on the hub, then a quiet moment; or until timeout. It
// tells whether that happened.
func (x *executor) settle(ctx context.Context, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		f := x.final(ctx)
		if f.empty() {
			sleep(ctx, 2*time.Second)
			if x.final(ctx).empty() {
				return true
			}
		}
		sleep(ctx, time.Second)
	}
	return false
}

func (f Final) empty() bool {
	for _, objs := range f.MemberObjects {
		if len(objs) > 0 {
			return false
		}
	}
	for _, pods := range f.Pods {
		if len(pods) > 0 {
			return false
		}
	}
	return len(f.Pipelines) == 0 && len(f.Tombstones) == 0 && len(f.Leases) == 0 && len(f.Unreachable) == 0
}

// final reads the state I2 judges.
func (x *executor) final(ctx context.Context) Final {
	f := Final{MemberObjects: map[string][]ObjInfo{}, Pods: map[string][]ObjInfo{}}
	for _, m := range Members {
		dyn := x.env.dyn[m]
		pods, err := listInfos(ctx, dyn, kindPods, stream{gvr: podsGVR, nss: x.nss, selector: coordinatorSelector})
		if err != nil {
			f.Unreachable = append(f.Unreachable, m)
			continue
		}
		f.Pods[m] = pods
		for _, k := range sortedKinds() {
			objs, err := listInfos(ctx, dyn, k, stream{gvr: memberObjectKinds[k], nss: x.nss, selector: "urutau.io/hub-pipeline-uid"})
			if err != nil {
				f.Unreachable = append(f.Unreachable, m)
				break
			}
			f.MemberObjects[m] = append(f.MemberObjects[m], objs...)
		}
	}
	hub := x.env.dyn[hubCluster]
	f.Pipelines, _ = listInfos(ctx, hub, kindPipelines, stream{gvr: pipelinesGVR, nss: x.nss})
	leases, _ := listInfos(ctx, hub, kindLeases, stream{gvr: leasesGVR})
	uids := x.uids()
	live := map[string]bool{}
	for _, p := range f.Pipelines {
		live[p.UID] = true
	}
	for _, l := range leases {
		if slices.ContainsFunc(l.Mentions, func(s string) bool { return uids[s] }) {
			f.Leases = append(f.Leases, l)
		}
		for _, e := range l.Entries {
			if slices.Contains(x.nss, e.PipelineNamespace) && !live[e.PipelineUID] {
				f.Tombstones = append(f.Tombstones, e)
			}
		}
	}
	slices.Sort(f.Unreachable)
	f.Unreachable = slices.Compact(f.Unreachable)
	return f
}

// uids are the pipeline UIDs the history's ops saw.
func (x *executor) uids() map[string]bool {
	out := map[string]bool{}
	for _, o := range x.ops {
		for _, r := range o.Pipelines {
			out[r.UID] = true
		}
	}
	return out
}

// listInfos lists a resource once; a resource the server does not serve is empty.
func listInfos(ctx context.Context, dyn dynamic.Interface, kind string, s stream) ([]ObjInfo, error) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := resource(dyn, s).List(lctx, listOpts(s.selector))
	if err != nil {
		if apierrors.IsNotFound(err) && kind == kindLeases {
			return nil, nil
		}
		return nil, err
	}
	s.kept(list)
	out := make([]ObjInfo, 0, len(list.Items))
	for i := range list.Items {
		info := infoOf(kind, &list.Items[i])
		info.Kind = kind
		out = append(out, info)
	}
	return out, nil
}

func listOpts(selector string) metav1.ListOptions { return metav1.ListOptions{LabelSelector: selector} }

func updateOpts() metav1.UpdateOptions { return metav1.UpdateOptions{FieldManager: fieldOwner} }
