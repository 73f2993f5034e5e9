package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/urutau-io/fleet/internal/testenv"
)

// result is every run of one size.
type result struct {
	size
	placements, objects int
	runs                []pairRun
	// idleMembers and idleHub are the writes in the idle window of the first run.
	idleMembers, idleHub requests
	// profiles are those of the first hub run, when it was profiled: the hub's, its API
	// server's and the first member's API server's.
	profiles []profileFiles
}

// pairRun is one floor run and the hub run after it, each in fresh namespaces.
type pairRun struct {
	floor, hub time.Duration
	// floorCPU and hubCPU are the CPU time used during the create runs.
	floorCPU, hubCPU cpuUse
	// floorMembers and hubMembers are the member requests of the create runs.
	floorMembers, hubMembers requests
	floorErr                 string
	// hubWrites are the hub's writes to the hub API server in the create run.
	hubWrites requests
	// reconciles is the number of pipeline reconciles the hub ran in the create run.
	reconciles int
	noop       noopRun
	// rssEmpty is VmRSS of the hub engaged with every member and no pipeline; rssEnd VmRSS and hwm
	// VmHWM (peak) after the no-op reconciles. KiB.
	rssEmpty, rssEnd, hwm int64
	// dead and hung are the runs with one member down and one member hung (zero when not run).
	dead, hung degradedRun
}

// runNamespaces are the namespaces of one pair of runs.
type runNamespaces struct{ floor, hub, dead, hung, system string }

func (e *env) runSize(ctx context.Context, o options, s size, idx int) (result, error) {
	res := result{size: s}
	for i := range o.runs {
		tag := fmt.Sprintf("s%d-%dx%d-r%d", idx, s.C, s.P, i)
		ns := runNamespaces{floor: tag + "-floor", hub: tag + "-hub", dead: tag + "-dead", hung: tag + "-hung", system: tag + "-system"}
		fmt.Printf("-- %s run %d/%d\n", s, i+1, o.runs)
		r, err := e.runPair(ctx, o, s, ns, i == 0, &res)
		if err != nil {
			return res, fmt.Errorf("run %d: %w", i+1, err)
		}
		res.runs = append(res.runs, r)
		fmt.Printf("   hub/floor %.2f, machine busy %.0f%% / %.0f%%\n", r.hub.Seconds()/r.floor.Seconds(), 100*r.floorCPU.utilisation(), 100*r.hubCPU.utilisation())
	}
	return res, nil
}

// runPair runs the floor, then the hub, in the namespaces ns. The first run of a size also
// measures idle writes and, when asked, profiles the hub.
func (e *env) runPair(ctx context.Context, o options, s size, ns runNamespaces, first bool, res *result) (pairRun, error) {
	var r pairRun
	members := e.members[:s.C]
	for _, n := range []string{ns.floor, ns.hub, ns.dead, ns.hung} {
		if err := e.createNamespace(ctx, n, append([]*testenv.Cluster{e.hub}, members...)); err != nil {
			return r, err
		}
	}
	if err := e.createNamespace(ctx, ns.system, []*testenv.Cluster{e.hub}); err != nil {
		return r, err
	}
	if err := e.floorRun(ctx, o, s, ns.floor, &r, res); err != nil {
		return r, err
	}
	hub, err := e.startHub(ctx, o, members, ns, first && o.profiled(s))
	if err != nil {
		return r, err
	}
	defer hub.stop()
	if err := e.hubRuns(ctx, o, s, ns, hub, first, &r, res); err != nil {
		return r, err
	}
	hub.stop()
	for _, n := range []string{ns.hub, ns.dead, ns.hung} {
		if err := e.cleanup(ctx, members, n); err != nil {
			return r, err
		}
	}
	return r, nil
}

// floorRun is step 1: the floor's create run, timed and counted; its objects are removed after.
func (e *env) floorRun(ctx context.Context, o options, s size, ns string, r *pairRun, res *result) error {
	members := e.members[:s.C]
	pipelines, want := e.makePipelines(ns, s, members, o.replicas, true)
	res.placements, res.objects = len(want), len(want)*objectsPerPlacement
	obs, err := newObserver(ctx, ns, members, nil, want, false)
	if err != nil {
		return err
	}
	defer obs.stop()
	w, err := startWindow(ctx, nil, e.hub, members)
	if err != nil {
		return err
	}
	if err := runFloor(ctx, e.clientsOf(members), pipelines, o.concurrency); err != nil {
		r.floorErr = err.Error()
	}
	if r.floor, err = obs.wait(w.t0, o.timeout); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if err := w.end(ctx); err != nil {
		return err
	}
	r.floorCPU, r.floorMembers = w.cpu, w.members
	fmt.Printf("   floor: %s, member requests %v\n", r.floor.Round(time.Millisecond), r.floorMembers)
	// The floor's objects carry the fleet labels: remove them before the hub starts, so its member
	// caches hold only this run's own objects.
	return e.cleanup(ctx, members, ns)
}

// startHub starts cmd/hub for one run: members from kubeconfig Secrets in ns.system (also its
// lease namespace, so runs share no ReaderLease), pipelines of ns.hub, ns.dead and ns.hung; it
// returns once the hub has engaged every member.
func (e *env) startHub(ctx context.Context, o options, members []*testenv.Cluster, ns runNamespaces, pprof bool) (*hubProcess, error) {
	for _, m := range members {
		kc, err := m.Kubeconfig()
		if err != nil {
			return nil, err
		}
		if err := e.clients["hub"].Create(ctx, testenv.KubeconfigSecret(ns.system, m.Name, kc, nil)); err != nil {
			return nil, err
		}
	}
	metricsAddr, err := freeLocalAddr()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--coordinator-image=" + image, "--leader-elect=false", "--enable-webhook=false",
		"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=0",
		"--cluster-provider-namespace=" + ns.system, "--watch-namespaces=" + ns.hub + "," + ns.dead + "," + ns.hung,
		"--max-concurrent-reconciles=" + strconv.Itoa(o.concurrency),
	}
	pprofAddr := ""
	if pprof {
		if pprofAddr, err = freeLocalAddr(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-bind-address="+pprofAddr)
	}
	hub, err := startHub(e.hubBin, e.kubecfg, filepath.Join(e.workDir, ns.hub+".log"), metricsAddr, args...)
	if err != nil {
		return nil, err
	}
	hub.pprofAddr = pprofAddr
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	if err := hub.waitEngaged(ctx, names, 2*time.Minute); err != nil {
		hub.stop()
		return nil, err
	}
	return hub, nil
}

// emptyHubRSS starts a hub with no member and no pipeline and reads its RSS once its
// controllers run: the part of the engaged, empty hub's RSS that does not depend on members.
func (e *env) emptyHubRSS(ctx context.Context, o options) (int64, error) {
	ns := runNamespaces{hub: "base-hub", dead: "base-dead", hung: "base-hung", system: "base-system"}
	if err := e.createNamespace(ctx, ns.system, []*testenv.Cluster{e.hub}); err != nil {
		return 0, err
	}
	hub, err := e.startHub(ctx, o, nil, ns, false)
	if err != nil {
		return 0, err
	}
	defer hub.stop()
	time.Sleep(2 * time.Second) // as before every baseline: let the freshly started hub settle
	rss, _, err := hub.memory()
	return rss, err
}
