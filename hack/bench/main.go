// Command bench measures the hub on real API servers and writes docs/benchmarks.md; `make bench`
// runs it. For each size C×P it starts nothing new but a hub process: C member API servers and a
// hub API server (internal/testenv) are started once, for the largest C, and each size uses the
// first C members. Per size, in this order and each in fresh namespaces:
//
//  1. floor: a plain client program Server-Side Applies the same objects into the same members
//     with the same concurrency (runFloor);
//  2. hub: cmd/hub is started as a child process; P CDCPipelines are created on the hub and the
//     time to convergence is measured (every object present in every placed member, and the
//     hub's status reporting each placement applied for the current generation);
//  3. idle: the writes to members and to the hub during -idle after convergence;
//  4. dead member: one member's API server is stopped, P more pipelines are submitted, and the
//     convergence of the placements on the healthy members is measured.
//
// Write counts come from the API servers' own apiserver_request_total.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/testenv"
)

const (
	image = "ghcr.io/urutau-io/coordinator:bench"
	// objectsPerPlacement is what coordinator.Render gives without KEDA: 2 ServiceAccounts, PDB,
	// Role, RoleBinding, Service, ConfigMap, StatefulSet.
	objectsPerPlacement = 8
	// largeSize is what -large adds.
	largeSize = "10x1000"
)

// memberResources are the resources the hub writes into members; other writes (the API server's
// own leases, the bench's namespaces) are not counted.
var memberResources = map[string]bool{
	"serviceaccounts": true, "poddisruptionbudgets": true, "roles": true, "rolebindings": true,
	"services": true, "configmaps": true, "statefulsets": true, "scaledobjects": true,
}

type size struct{ C, P int }

func (s size) String() string { return fmt.Sprintf("%dx%d", s.C, s.P) }

type options struct {
	sizes       []size
	idle        time.Duration
	settle      time.Duration
	out         string
	replicas    int
	concurrency int
	timeout     time.Duration
	workDir     string
	command     string
	profile     time.Duration
}

func main() {
	logf.SetLogger(logr.Discard())
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	var o options
	members := flag.Int("members", 0, "Members C of a single size (with -pipelines); overrides -sizes.")
	pipelines := flag.Int("pipelines", 0, "Pipelines P of a single size (with -members); overrides -sizes.")
	sizes := flag.String("sizes", "1x10,3x10,3x100,10x100", "Comma-separated sizes CxP (members x pipelines).")
	large := flag.Bool("large", false, "Also run "+largeSize+" (about 16,000 member objects; takes several more minutes).")
	flag.DurationVar(&o.idle, "idle", 60*time.Second, "Idle window after convergence in which writes are counted.")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "Pause between convergence and the idle window (lets asynchronous event writes of the convergence land).")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "Markdown file to write the results into (between the bench markers); empty: stdout only.")
	flag.IntVar(&o.replicas, "replicas", 2, "Members each pipeline is placed on (consecutive members, round robin).")
	flag.IntVar(&o.concurrency, "concurrency", 4, "Pipelines handled at once, by the hub (--max-concurrent-reconciles) and by the floor.")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "Bound on each convergence.")
	flag.DurationVar(&o.profile, "profile", 0, "When set, the hub serves pprof and the bench saves a CPU profile of this long, from the first create of each hub run, as <work-dir>/<size>-hub-cpu.pprof (go tool pprof -top hub <file>).")
	flag.StringVar(&o.workDir, "work-dir", "", "Where the hub binary, kubeconfig and hub logs go (default: a temporary directory, kept).")
	flag.Parse()
	o.command = os.Getenv("BENCH_COMMAND")
	if o.command == "" {
		o.command = "go run ./hack/bench " + strings.Join(os.Args[1:], " ")
	}
	switch {
	case *members > 0 || *pipelines > 0:
		if *members <= 0 || *pipelines <= 0 {
			return o, fmt.Errorf("-members and -pipelines go together")
		}
		o.sizes = []size{{*members, *pipelines}}
	default:
		list := *sizes
		if *large {
			list += "," + largeSize
		}
		for _, s := range strings.Split(list, ",") {
			var sz size
			if _, err := fmt.Sscanf(strings.TrimSpace(s), "%dx%d", &sz.C, &sz.P); err != nil || sz.C <= 0 || sz.P <= 0 {
				return o, fmt.Errorf("invalid size %q: want CxP, e.g. 3x100", s)
			}
			o.sizes = append(o.sizes, sz)
		}
	}
	if o.replicas < 1 || o.concurrency < 1 {
		return o, fmt.Errorf("-replicas and -concurrency must be at least 1")
	}
	return o, nil
}

// env is the running API servers and fast clients to them.
type env struct {
	hub     *testenv.Cluster
	members []*testenv.Cluster
	clients map[string]client.Client
	hubBin  string
	kubecfg string
	workDir string
}

// fastConfig is c's admin config without client-side rate limiting (the bench's own requests
// must not be what is measured).
func fastConfig(c *testenv.Cluster) *rest.Config {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

func run(ctx context.Context, o options) error {
	start := time.Now()
	e := &env{clients: map[string]client.Client{}, workDir: o.workDir}
	if e.workDir == "" {
		d, err := os.MkdirTemp("", "urutau-bench-")
		if err != nil {
			return err
		}
		e.workDir = d
	}
	fmt.Printf("work dir (hub binary, kubeconfig, hub logs): %s\n", e.workDir)
	e.hubBin = filepath.Join(e.workDir, "hub")
	build := exec.CommandContext(ctx, "go", "build", "-o", e.hubBin, "./cmd/hub")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the hub: %w", err)
	}

	maxC := 0
	for _, s := range o.sizes {
		maxC = max(maxC, s.C)
	}
	names := []string{"hub"}
	for i := range maxC {
		names = append(names, fmt.Sprintf("m%d", i))
	}
	t := time.Now()
	// A few at a time: eleven API servers starting at once on 2 cores miss envtest's start deadline.
	var clusters []*testenv.Cluster
	defer func() {
		var wg sync.WaitGroup
		for _, c := range clusters {
			wg.Go(func() { _ = c.Stop() })
		}
		wg.Wait()
	}()
	for i := 0; i < len(names); i += 3 {
		batch, err := testenv.Start(ctx, names[i:min(i+3, len(names))]...)
		if err != nil {
			return err
		}
		clusters = append(clusters, batch...)
	}
	fmt.Printf("%d API servers up in %s\n", len(clusters), time.Since(t).Round(time.Millisecond))
	e.hub, e.members = clusters[0], clusters[1:]
	for _, c := range clusters {
		cl, err := client.New(fastConfig(c), client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			return err
		}
		e.clients[c.Name] = cl
	}
	kc, err := e.hub.Kubeconfig()
	if err != nil {
		return err
	}
	e.kubecfg = filepath.Join(e.workDir, "hub.kubeconfig")
	if err := os.WriteFile(e.kubecfg, kc, 0o600); err != nil {
		return err
	}

	var results []result
	for i, s := range o.sizes {
		fmt.Printf("== %s: %d members, %d pipelines\n", s, s.C, s.P)
		r, err := runSize(ctx, e, o, s, i)
		if err != nil {
			return fmt.Errorf("size %s: %w", s, err)
		}
		results = append(results, r)
		fmt.Println(tableRow(r))
	}
	table := renderTable(results)
	fmt.Println()
	fmt.Println(table)
	fmt.Printf("total bench time %s\n", time.Since(start).Round(time.Second))
	if o.out != "" {
		if err := writeDoc(o, table, time.Since(start)); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", o.out)
	}
	return nil
}

type result struct {
	size
	placements, objects int
	floor, hub          time.Duration
	// floorWrites and hubWrites are the member writes of the create runs, by verb.
	floorWrites, hubWrites map[string]int
	// hubSideWrites are the hub's writes to the hub API server in the create run, by "VERB resource".
	hubSideWrites map[string]int
	idleMembers   map[string]int
	idleHub       map[string]int
	// dead and hung are the runs with one member down and one member hung (zero when not run).
	dead, hung      degradedRun
	rssBase, rssEnd int64 // KiB
	hwm             int64 // KiB
	floorErr        string
	// reconciles is the number of pipeline reconciles the hub ran in the create run.
	reconciles int
	// floorCPU and hubCPU are the CPU time used during the create runs.
	floorCPU, hubCPU cpuUse
}

func runSize(ctx context.Context, e *env, o options, s size, idx int) (result, error) {
	res := result{size: s}
	members := e.members[:s.C]
	tag := fmt.Sprintf("s%d-%dx%d", idx, s.C, s.P)
	floorNS, hubNS, deadNS, hungNS, sysNS := tag+"-floor", tag+"-hub", tag+"-dead", tag+"-hung", tag+"-system"
	for _, ns := range []string{floorNS, hubNS, deadNS, hungNS} {
		if err := e.createNamespace(ctx, ns, append([]*testenv.Cluster{e.hub}, members...)); err != nil {
			return res, err
		}
	}
	if err := e.createNamespace(ctx, sysNS, []*testenv.Cluster{e.hub}); err != nil {
		return res, err
	}

	// 1. The floor.
	floorPipelines, want := makePipelines(floorNS, s, members, o.replicas, true)
	res.placements, res.objects = len(want), len(want)*objectsPerPlacement
	obs, err := newObserver(ctx, floorNS, members, nil, want, false)
	if err != nil {
		return res, err
	}
	before, err := memberWrites(ctx, members)
	if err != nil {
		return res, err
	}
	cpu0, err := cpuNow(nil, e.hub, members)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := runFloor(ctx, e.clientsOf(members), floorPipelines, o.concurrency); err != nil {
		res.floorErr = err.Error()
	}
	res.floor, err = obs.wait(t0, o.timeout)
	obs.stop()
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	cpu1, err := cpuNow(nil, e.hub, members)
	if err != nil {
		return res, err
	}
	res.floorCPU = cpu1.sub(cpu0)
	after, err := memberWrites(ctx, members)
	if err != nil {
		return res, err
	}
	res.floorWrites = byVerb(testenv.Delta(before, after))
	fmt.Printf("   floor: %s, member writes %v\n", res.floor.Round(time.Millisecond), res.floorWrites)
	// The floor's objects carry the fleet labels: remove them before the hub starts, so its member
	// caches hold only this size's own objects.
	if err := e.cleanup(ctx, members, floorNS); err != nil {
		return res, err
	}

	// 2. The hub, from no pipelines.
	for _, m := range members {
		kc, err := m.Kubeconfig()
		if err != nil {
			return res, err
		}
		if err := e.clients["hub"].Create(ctx, testenv.KubeconfigSecret(sysNS, m.Name, kc, nil)); err != nil {
			return res, err
		}
	}
	metricsAddr, err := freeLocalAddr()
	if err != nil {
		return res, err
	}
	hubArgs := []string{
		"--coordinator-image=" + image, "--leader-elect=false", "--enable-webhook=false",
		"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=0",
		"--cluster-provider-namespace=" + sysNS, "--watch-namespaces=" + hubNS + "," + deadNS + "," + hungNS,
		"--max-concurrent-reconciles=" + strconv.Itoa(o.concurrency),
	}
	pprofAddr := ""
	if o.profile > 0 {
		if pprofAddr, err = freeLocalAddr(); err != nil {
			return res, err
		}
		hubArgs = append(hubArgs, "--pprof-bind-address="+pprofAddr)
	}
	hub, err := startHub(e.hubBin, e.kubecfg, filepath.Join(e.workDir, tag+"-hub.log"), hubArgs...)
	if hub != nil {
		hub.metricsAddr = metricsAddr
	}
	if err != nil {
		return res, err
	}
	defer hub.stop()
	if err := hub.waitEngaged(ctx, s.C, 2*time.Minute); err != nil {
		return res, err
	}
	time.Sleep(2 * time.Second) // let the freshly started hub settle before its baseline
	if res.rssBase, _, err = hub.memory(); err != nil {
		return res, err
	}

	hubPipelines, want := makePipelines(hubNS, s, members, o.replicas, false)
	obs, err = newObserver(ctx, hubNS, members, e.hub, want, true)
	if err != nil {
		return res, err
	}
	before, err = memberWrites(ctx, members)
	if err != nil {
		return res, err
	}
	hubBefore, err := e.hub.WriteRequestsByResource(ctx)
	if err != nil {
		return res, err
	}
	var profiled chan error
	if o.profile > 0 {
		profiled = make(chan error, 1)
		go func() {
			profiled <- saveCPUProfile(ctx, pprofAddr, o.profile, filepath.Join(e.workDir, tag+"-hub-cpu.pprof"))
		}()
	}
	if cpu0, err = cpuNow(hub, e.hub, members); err != nil {
		return res, err
	}
	rec0, err := reconciles(ctx, metricsAddr)
	if err != nil {
		return res, err
	}
	t0 = time.Now()
	if err := e.submit(ctx, hubPipelines); err != nil {
		return res, err
	}
	res.hub, err = obs.wait(t0, o.timeout)
	obs.stop()
	if err != nil {
		return res, fmt.Errorf("hub: %w (hub log: %s)", err, hub.logf.Name())
	}
	if cpu1, err = cpuNow(hub, e.hub, members); err != nil {
		return res, err
	}
	res.hubCPU = cpu1.sub(cpu0)
	after, err = memberWrites(ctx, members)
	if err != nil {
		return res, err
	}
	hubAfter, err := e.hub.WriteRequestsByResource(ctx)
	if err != nil {
		return res, err
	}
	res.hubWrites = byVerb(testenv.Delta(before, after))
	res.hubSideWrites = hubOwnWrites(testenv.Delta(hubBefore, hubAfter), true)
	fmt.Printf("   hub: %s, member writes %v, hub writes %v\n", res.hub.Round(time.Millisecond), res.hubWrites, res.hubSideWrites)
	if profiled != nil {
		if err := <-profiled; err != nil {
			return res, err
		}
		fmt.Printf("   hub CPU profile: %s\n", filepath.Join(e.workDir, tag+"-hub-cpu.pprof"))
	}

	// 3. Idle.
	time.Sleep(o.settle)
	// Counted after the settle: a reconcile the echo of a write causes waits behind the
	// pipelines still queued, so most would run after convergence.
	rec1, err := reconciles(ctx, metricsAddr)
	if err != nil {
		return res, err
	}
	res.reconciles = rec1 - rec0
	before, err = memberWrites(ctx, members)
	if err != nil {
		return res, err
	}
	hubBefore, err = e.hub.WriteRequestsByResource(ctx)
	if err != nil {
		return res, err
	}
	time.Sleep(o.idle)
	after, err = memberWrites(ctx, members)
	if err != nil {
		return res, err
	}
	hubAfter, err = e.hub.WriteRequestsByResource(ctx)
	if err != nil {
		return res, err
	}
	res.idleMembers = byVerb(testenv.Delta(before, after))
	res.idleHub = hubOwnWrites(testenv.Delta(hubBefore, hubAfter), false)
	if res.rssEnd, res.hwm, err = hub.memory(); err != nil {
		return res, err
	}
	fmt.Printf("   idle %s: member writes %v, hub writes %v; RSS %d→%d KiB, peak %d KiB\n",
		o.idle, res.idleMembers, res.idleHub, res.rssBase, res.rssEnd, res.hwm)

	// 4. One member down.
	if s.C >= 2 {
		dead := members[s.C-1]
		if err := dead.StopAPIServer(); err != nil {
			return res, err
		}
		if res.dead, err = e.runWithout(ctx, o, s, deadNS, members, dead); err != nil {
			return res, err
		}
		fmt.Printf("   dead member %s: healthy placements converged in %s %s\n", dead.Name, res.dead.took.Round(time.Millisecond), res.dead.err)
		if err := dead.StartAPIServer(); err != nil {
			return res, err
		}

		// 5. One member hung: it accepts connections and never answers.
		if err := e.runHung(ctx, o, s, &res, hub, sysNS, hungNS, members); err != nil {
			return res, err
		}
	}
	hub.stop()
	for _, ns := range []string{hubNS, deadNS, hungNS} {
		if err := e.cleanup(ctx, members, ns); err != nil {
			return res, err
		}
	}
	return res, nil
}

// makePipelines builds P pipelines in ns, pipeline i placed on `replicas` consecutive members
// starting at member i mod C. For the floor (withUID) they get a UID, as the hub's would have.
func makePipelines(ns string, s size, members []*testenv.Cluster, replicas int, withUID bool) ([]*urutauv1alpha1.CDCPipeline, []placement) {
	var out []*urutauv1alpha1.CDCPipeline
	var want []placement
	n := min(replicas, len(members))
	for i := range s.P {
		name := fmt.Sprintf("p-%04d", i)
		def := fmt.Sprintf(`{"pipeline":"bench-%d","source":{"kind":"mysql","serverId":"%d","uri":"mysql://bench@db:3306/shop"},"sink":{"type":"iceberg+rest","uri":"http://catalog.lake:8181/api/catalog","namespace":"raw","warehouse":"s3://lake/warehouse"},"tables":[{"source":"shop.orders","target":"raw.orders","primaryKey":["id"]}]}`, i, 1000+i)
		p := &urutauv1alpha1.CDCPipeline{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: urutauv1alpha1.CDCPipelineSpec{
				PipelineSpec: urutauv1alpha1.PipelineSpec{
					Definition: urutauv1alpha1.Definition{Inline: &k8sruntime.RawExtension{Raw: []byte(def)}},
				},
			},
		}
		if withUID {
			p.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
			p.Generation = 1
		}
		for k := range n {
			m := members[(i+k)%len(members)].Name
			p.Spec.Placement.Clusters = append(p.Spec.Placement.Clusters, m)
			want = append(want, placement{member: m, pipeline: name})
		}
		out = append(out, p)
	}
	return out, want
}

// submit creates the pipelines on the hub, 8 at a time.
func (e *env) submit(ctx context.Context, ps []*urutauv1alpha1.CDCPipeline) error {
	work := make(chan *urutauv1alpha1.CDCPipeline)
	errs := make(chan error, len(ps))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for p := range work {
				if err := e.clients["hub"].Create(ctx, p); err != nil {
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

func (e *env) clientsOf(members []*testenv.Cluster) map[string]client.Client {
	out := map[string]client.Client{}
	for _, m := range members {
		out[m.Name] = e.clients[m.Name]
	}
	return out
}

func (e *env) createNamespace(ctx context.Context, ns string, on []*testenv.Cluster) error {
	for _, c := range on {
		err := e.clients[c.Name].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s in %s: %w", ns, c.Name, err)
		}
	}
	return nil
}

// cleanup deletes the workload objects in ns of each member (envtest runs no namespace
// controller, so deleting the namespace would delete nothing).
func (e *env) cleanup(ctx context.Context, members []*testenv.Cluster, ns string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, m := range members {
		wg.Go(func() {
			c := e.clients[m.Name]
			for _, obj := range memberKinds() {
				err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns))
				if apierrors.IsMethodNotSupported(err) {
					err = deleteEach(ctx, c, obj, ns)
				}
				if err != nil {
					errs[i] = fmt.Errorf("cleaning %s in %s: %w", ns, m.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func deleteEach(ctx context.Context, c client.Client, obj client.Object, ns string) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind + "List"})
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range list.Items {
		if err := c.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// memberWrites adds up the members' write counters on the resources the hub writes there, keyed
// "VERB resource[/subresource]".
func memberWrites(ctx context.Context, members []*testenv.Cluster) (map[string]int, error) {
	out := map[string]int{}
	for _, m := range members {
		w, err := m.WriteRequestsByResource(ctx)
		if err != nil {
			return nil, err
		}
		for k, v := range w {
			_, res, _ := strings.Cut(k, " ")
			res, _, _ = strings.Cut(res, "/")
			if memberResources[res] {
				out[k] += v
			}
		}
	}
	return out, nil
}

// hubOwnWrites keeps the hub's writes to its API server: all but the API server's own leases
// and, when excludeBench, the bench's own creates (pipelines, namespaces).
func hubOwnWrites(d map[string]int, excludeBench bool) map[string]int {
	out := map[string]int{}
	for k, v := range d {
		_, res, _ := strings.Cut(k, " ")
		switch {
		case strings.HasPrefix(res, "leases"):
			continue
		case excludeBench && (k == "POST cdcpipelines" || k == "POST namespaces"):
			continue
		}
		out[k] = v
	}
	return out
}

// byVerb folds "VERB resource" counts into verbs.
func byVerb(d map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range d {
		verb, _, _ := strings.Cut(k, " ")
		out[verb] += v
	}
	return out
}

func fmtCounts(m map[string]int) string {
	if testenv.Total(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return fmt.Sprintf("%d (%s)", testenv.Total(m), strings.Join(parts, ", "))
}

func perObject(m map[string]int, objects int) string {
	if objects == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.2f", float64(testenv.Total(m))/float64(objects))
	var parts []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(m[k])/float64(objects)))
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

const tableHeader = "| C×P | placements (objects) | floor s | hub s | hub/floor | member writes/object, create (floor) | hub writes/pipeline, create | hub reconciles/pipeline, create | idle: member writes | idle: hub writes | 1 member down: healthy conv. s | down/all-up | 1 member hung: healthy conv. s | hung/all-up | hub peak RSS MiB | RSS MiB per 1,000 placements |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"

func tableRow(r result) string {
	dead, deadRatio := r.dead.cells(r.hub)
	hung, hungRatio := r.hung.cells(r.hub)
	perK := float64(r.rssEnd-r.rssBase) / 1024 / float64(r.placements) * 1000
	return fmt.Sprintf("| %s | %d (%d) | %s | %s | %.2f | %s (%s) | %.2f | %.2f | %s | %s | %s | %s | %s | %s | %s | %.1f |",
		r.size, r.placements, r.objects, secs(r.floor), secs(r.hub), r.hub.Seconds()/r.floor.Seconds(),
		perObject(r.hubWrites, r.objects), fmt.Sprintf("%.2f", float64(testenv.Total(r.floorWrites))/float64(r.objects)),
		float64(testenv.Total(r.hubSideWrites))/float64(r.P), float64(r.reconciles)/float64(r.P),
		fmtCounts(r.idleMembers), fmtCounts(r.idleHub), dead, deadRatio, hung, hungRatio, mib(r.hwm), perK)
}

// degradedRun is a run with one member down or hung: the convergence of the placements on the
// healthy members.
type degradedRun struct {
	took       time.Duration
	placements int
	err        string
}

// runWithout creates P pipelines in ns, placed as in the other runs, and times the convergence of
// their placements on every member but faulty (which the caller has made fail).
func (e *env) runWithout(ctx context.Context, o options, s size, ns string, members []*testenv.Cluster, faulty *testenv.Cluster) (degradedRun, error) {
	var run degradedRun
	pipelines, all := makePipelines(ns, s, members, o.replicas, false)
	var want []placement
	var healthy []*testenv.Cluster
	for _, p := range all {
		if p.member != faulty.Name {
			want = append(want, p)
		}
	}
	for _, m := range members {
		if m != faulty {
			healthy = append(healthy, m)
		}
	}
	run.placements = len(want)
	obs, err := newObserver(ctx, ns, healthy, e.hub, want, false)
	if err != nil {
		return run, err
	}
	t0 := time.Now()
	if err := e.submit(ctx, pipelines); err != nil {
		return run, err
	}
	run.took, err = obs.wait(t0, o.timeout)
	obs.stop()
	if err != nil {
		run.err = err.Error()
	}
	return run, nil
}

// cells formats the run for the table: its time and its ratio to the all-up run.
func (d degradedRun) cells(allUp time.Duration) (string, string) {
	switch {
	case d.placements == 0:
		return "n/a (C=1)", "n/a"
	case d.err != "":
		return "timeout", "-"
	}
	return fmt.Sprintf("%s (%d placements)", secs(d.took), d.placements), fmt.Sprintf("%.2f", d.took.Seconds()/allUp.Seconds())
}

func renderTable(rs []result) string {
	var b strings.Builder
	b.WriteString(tableHeader + "\n")
	for _, r := range rs {
		b.WriteString(tableRow(r) + "\n")
	}
	b.WriteString("\nHub writes to the hub API server in the create runs, by request:\n\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "- %s: %s\n", r.size, fmtCounts(r.hubSideWrites))
	}
	b.WriteString("\nCPU time (seconds, all cores) used during the create runs, by process, and how busy the machine was (busy CPU time / all CPU time, every process on the machine):\n\n")
	b.WriteString(cpuHeader + "\n")
	for _, r := range rs {
		b.WriteString(cpuRow(r) + "\n")
	}
	return b.String()
}

const cpuHeader = "| C×P | floor: API servers + etcd (members'; the hub's idle) | floor: bench | floor: total (machine busy) | hub run: hub process | hub run: hub API server + etcd | hub run: members' API servers + etcd | hub run: bench | hub run: total (machine busy) | hub run − floor |\n" +
	"|---|---|---|---|---|---|---|---|---|---|"

func cpuRow(r result) string {
	f, h := r.floorCPU, r.hubCPU
	return fmt.Sprintf("| %s | %.2f | %.2f | %.2f (%.0f%%) | %.2f | %.2f | %.2f | %.2f | %.2f (%.0f%%) | +%.2f |",
		r.size, f.members+f.hubAPI, f.bench, f.ours(), 100*f.utilisation(),
		h.hub, h.hubAPI, h.members, h.bench, h.ours(), 100*h.utilisation(), h.ours()-f.ours())
}

const (
	beginMarker = "<!-- bench:begin (generated by hack/bench: do not edit by hand) -->"
	endMarker   = "<!-- bench:end -->"
)

// writeDoc replaces the generated section of o.out (or creates the file).
func writeDoc(o options, table string, took time.Duration) error {
	var b strings.Builder
	b.WriteString(beginMarker + "\n")
	fmt.Fprintf(&b, "Command: `%s`  \n", o.command)
	fmt.Fprintf(&b, "Run: %s, took %s; machine: %d CPUs (%s), %s RAM; %s; API servers: kube-apiserver %s + etcd from `hack/control-plane.sh` (envtest), one process each.  \n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second), runtime.NumCPU(), cpuModel(), memTotal(), runtime.Version(), "v1.37.2")
	fmt.Fprintf(&b, "Settings: each pipeline placed on %d consecutive members (round robin), %d pipelines at once (hub `--max-concurrent-reconciles` and floor), idle window %s after a %s settle.\n\n",
		o.replicas, o.concurrency, o.idle, o.settle)
	b.WriteString(table)
	b.WriteString(endMarker + "\n")
	gen := b.String()

	old, err := os.ReadFile(o.out)
	switch {
	case os.IsNotExist(err):
		return os.WriteFile(o.out, []byte("# Benchmarks\n\n"+gen), 0o644)
	case err != nil:
		return err
	}
	re := regexp.MustCompile(`(?s)` + regexp.QuoteMeta(beginMarker) + `.*?` + regexp.QuoteMeta(endMarker) + `\n?`)
	if re.Match(old) {
		return os.WriteFile(o.out, re.ReplaceAll(old, []byte(strings.ReplaceAll(gen, "$", "$$"))), 0o644)
	}
	return os.WriteFile(o.out, append(old, []byte("\n"+gen)...), 0o644)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kib, _ := strconv.ParseInt(f[1], 10, 64)
			return fmt.Sprintf("%.0f GiB", float64(kib)/1024/1024)
		}
	}
	return "?"
}
