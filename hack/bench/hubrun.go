package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/testenv"
)

// touchLabel is the label the no-op step sets on every pipeline: a change of the CR that changes
// nothing the hub renders or places.
const touchLabel = "bench.urutau.io/touched"

// noopRun is one reconcile of every pipeline in which nothing changed.
type noopRun struct {
	// reconciles are those the labels caused (want: one per pipeline).
	reconciles int
	members    requests
	// hubWrites are the hub's own writes (the bench's label patches taken out).
	hubWrites requests
}

// hubRuns are the steps of one hub run (after the floor's): create, no-op reconciles, RSS,
// idle (first run), dead and hung member.
func (e *env) hubRuns(ctx context.Context, o options, s size, ns runNamespaces, hub *hubProcess, first bool, r *pairRun, res *result) error {
	members := e.members[:s.C]
	time.Sleep(2 * time.Second) // let the freshly started hub settle before its baseline
	var err error
	if r.rssEmpty, _, err = hub.memory(); err != nil {
		return err
	}
	pipelines, err := e.createRun(ctx, o, s, ns.hub, hub, r, res)
	if err != nil {
		return err
	}
	if r.noop, err = e.noopReconciles(ctx, o, hub, members, pipelines); err != nil {
		return err
	}
	if r.rssEnd, r.hwm, err = hub.memory(); err != nil {
		return err
	}
	fmt.Printf("   no-op reconciles %d: member requests %v, hub writes %v; RSS empty %s MiB, after %s MiB, peak %s MiB\n",
		r.noop.reconciles, r.noop.members, r.noop.hubWrites, mib(r.rssEmpty), mib(r.rssEnd), mib(r.hwm))
	if first {
		if res.idleMembers, res.idleHub, err = e.idleRun(ctx, o, members); err != nil {
			return err
		}
	}
	if s.C < 2 {
		return nil
	}
	dead := members[s.C-1]
	if err := dead.StopAPIServer(); err != nil {
		return err
	}
	if r.dead, err = e.runWithout(ctx, o, s, ns.dead, members, dead); err != nil {
		return err
	}
	fmt.Printf("   dead member %s: healthy placements converged in %s %s\n", dead.Name, r.dead.took.Round(time.Millisecond), r.dead.err)
	if err := dead.StartAPIServer(); err != nil {
		return err
	}
	return e.runHung(ctx, o, s, r, hub, ns.system, ns.hung, members)
}

// createRun is step 2: P pipelines created on the hub, timed to convergence, with the member
// requests, the hub's writes and its reconciles (counted until -settle after convergence: a
// reconcile the echo of a write causes waits behind the pipelines still queued).
func (e *env) createRun(ctx context.Context, o options, s size, ns string, hub *hubProcess, r *pairRun, res *result) ([]*urutauv1alpha1.CDCPipeline, error) {
	members := e.members[:s.C]
	pipelines, want := e.makePipelines(ns, s, members, o.replicas, false)
	obs, err := newObserver(ctx, ns, members, e.hub, want, true)
	if err != nil {
		return nil, err
	}
	defer obs.stop()
	rec0, err := reconciles(ctx, hub.metricsAddr)
	if err != nil {
		return nil, err
	}
	var prof *profiler
	var apiProfs []*profiler
	if hub.pprofAddr != "" {
		if prof, err = startProfiler(ctx, hubPprof(hub.pprofAddr), e.hubBin, o.profileDir, s.String()+"-hub"); err != nil {
			return nil, err
		}
		if apiProfs, err = e.startAPIServerProfilers(ctx, o, s, members[0]); err != nil {
			return nil, err
		}
	}
	w, err := startWindow(ctx, hub, e.hub, members)
	if err != nil {
		return nil, err
	}
	if err := e.submit(ctx, pipelines); err != nil {
		return nil, err
	}
	if r.hub, err = obs.wait(w.t0, o.timeout); err != nil {
		return nil, fmt.Errorf("hub: %w (hub log: %s)", err, hub.logf.Name())
	}
	if err := w.end(ctx); err != nil {
		return nil, err
	}
	r.hubCPU, r.hubMembers, r.hubWrites = w.cpu, w.members, w.hubReqs.hubOwnWrites(true)
	fmt.Printf("   hub: %s, member requests %v, hub writes %v\n", r.hub.Round(time.Millisecond), r.hubMembers, r.hubWrites)
	if prof != nil {
		if err := prof.heap(ctx); err != nil {
			return nil, err
		}
	}
	time.Sleep(o.settle)
	rec1, err := reconciles(ctx, hub.metricsAddr)
	if err != nil {
		return nil, err
	}
	r.reconciles = rec1 - rec0
	if prof != nil {
		f, err := prof.finish(true)
		if err != nil {
			return nil, err
		}
		res.profiles = append(res.profiles, f)
		fmt.Printf("   hub profiles: %s (CPU slices merged at the end), %s\n", f.cpu, f.heap)
	}
	for _, p := range apiProfs {
		f, err := p.finish(false)
		if err != nil {
			return nil, err
		}
		res.profiles = append(res.profiles, f)
		fmt.Printf("   API server profile: %s\n", f.cpu)
	}
	return pipelines, nil
}

// startAPIServerProfilers profiles, over the same window as the hub, the hub's API server and the
// API server of member: where the CPU of a hub run goes besides the hub process.
func (e *env) startAPIServerProfilers(ctx context.Context, o options, s size, member *testenv.Cluster) ([]*profiler, error) {
	bin := filepath.Join(os.Getenv(testenv.AssetsEnv), "kube-apiserver")
	var out []*profiler
	for _, c := range []struct {
		cluster *testenv.Cluster
		name    string
	}{{e.hub, "hub-apiserver"}, {member, "member-apiserver"}} {
		fetch, err := apiServerPprof(c.cluster.Config)
		if err != nil {
			return nil, err
		}
		p, err := startProfiler(ctx, fetch, bin, o.profileDir, s.String()+"-"+c.name)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// noopReconciles is step 3: a label set on every pipeline brings each back for one reconcile
// that has nothing to change; the member requests of those reconciles are counted until the hub
// has nothing left to do.
func (e *env) noopReconciles(ctx context.Context, o options, hub *hubProcess, members []*testenv.Cluster, pipelines []*urutauv1alpha1.CDCPipeline) (noopRun, error) {
	var n noopRun
	if err := waitIdle(ctx, hub.metricsAddr, o.timeout); err != nil {
		return n, err
	}
	rec0, err := reconciles(ctx, hub.metricsAddr)
	if err != nil {
		return n, err
	}
	w, err := startWindow(ctx, hub, e.hub, members)
	if err != nil {
		return n, err
	}
	if err := e.label(ctx, pipelines); err != nil {
		return n, err
	}
	// Every pipeline reconciled (or a minute passed: a hub that ignores the label shows 0), then
	// nothing left to do.
	for deadline := time.Now().Add(time.Minute); n.reconciles < len(pipelines) && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rec, err := reconciles(ctx, hub.metricsAddr)
		if err != nil {
			return n, err
		}
		n.reconciles = rec - rec0
	}
	if err := waitIdle(ctx, hub.metricsAddr, o.timeout); err != nil {
		return n, err
	}
	if err := w.end(ctx); err != nil {
		return n, err
	}
	rec, err := reconciles(ctx, hub.metricsAddr)
	n.reconciles, n.members = rec-rec0, w.members
	n.hubWrites = w.hubReqs.hubOwnWrites(false)
	if n.hubWrites["PATCH cdcpipelines"] -= len(pipelines); n.hubWrites["PATCH cdcpipelines"] == 0 {
		delete(n.hubWrites, "PATCH cdcpipelines")
	}
	return n, err
}

// label sets touchLabel on every pipeline, 8 at a time.
func (e *env) label(ctx context.Context, ps []*urutauv1alpha1.CDCPipeline) error {
	return e.each(ps, func(p *urutauv1alpha1.CDCPipeline) error {
		patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, touchLabel))
		return e.clients["hub"].Patch(ctx, p.DeepCopy(), patch)
	})
}

// idleRun is step 4: the writes to members and to the hub during -idle.
func (e *env) idleRun(ctx context.Context, o options, members []*testenv.Cluster) (requests, requests, error) {
	w, err := startWindow(ctx, nil, e.hub, members)
	if err != nil {
		return nil, nil, err
	}
	time.Sleep(o.idle)
	if err := w.end(ctx); err != nil {
		return nil, nil, err
	}
	idleMembers, idleHub := w.members.memberWrites(), w.hubReqs.hubOwnWrites(false)
	fmt.Printf("   idle %s: member writes %v, hub writes %v\n", o.idle, idleMembers, idleHub)
	return idleMembers, idleHub, nil
}

// each runs f on every pipeline, 8 at a time, and returns the first error.
func (e *env) each(ps []*urutauv1alpha1.CDCPipeline, f func(*urutauv1alpha1.CDCPipeline) error) error {
	work := make(chan *urutauv1alpha1.CDCPipeline)
	errs := make(chan error, len(ps))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for p := range work {
				if err := f(p); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, p := range ps {
		work <- p
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}
