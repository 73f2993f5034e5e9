// Command bench measures the hub on real API servers and writes docs/benchmarks.md; `make bench`
// runs it. A hub API server and C member API servers (internal/testenv) are started once, for the
// largest C, and each size C×P uses the first C members. Each size is run -runs times, floor and
// hub interleaved (floor, hub, floor, hub, ...), every run in fresh namespaces with a fresh hub
// process:
//
//  1. floor: a plain client program Server-Side Applies the same objects into the same members
//     with the same concurrency (runFloor);
//  2. hub: cmd/hub is started as a child process and waits until it has engaged every member
//     (its RSS then is the empty hub's); P CDCPipelines are created on the hub and the time to
//     convergence is measured (every object present in every placed member, and the hub's status
//     reporting each placement applied for the current generation), with the member requests by
//     verb and the hub's own writes;
//  3. no-op: every pipeline is labelled, which reconciles each once with nothing to change, and
//     the member requests of those reconciles are counted;
//  4. idle (first run only): the writes to members and to the hub during -idle;
//  5. dead and hung member: one member's API server is stopped (then hung behind a proxy), P more
//     pipelines are submitted, and the convergence of the placements on the healthy members is
//     measured.
//
// Ratios are reported as the median of the runs with their range. Request counts come from the
// API servers' own apiserver_request_total.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/urutau-io/fleet/internal/testenv"
)

const (
	image = "ghcr.io/urutau-io/coordinator:bench"
	// objectsPerPlacement is what coordinator.Render gives without KEDA: 2 ServiceAccounts, PDB,
	// Role, RoleBinding, Service, ConfigMap, StatefulSet.
	objectsPerPlacement = 8
	// largeSize is what -large adds.
	largeSize = "10x1000"
	// historyEntries is how many runs of the bench docs/benchmarks.md keeps in its history.
	historyEntries = 10
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
	runs        int
	idle        time.Duration
	settle      time.Duration
	out         string
	replicas    int
	concurrency int
	timeout     time.Duration
	workDir     string
	command     string
	// profileAll profiles the first hub run of every size; profileLarge that of largeSize.
	profileAll, profileLarge bool
	profileDir               string
}

// profiled says whether the first hub run of s is profiled.
func (o options) profiled(s size) bool {
	return o.profileAll || (o.profileLarge && s.String() == largeSize)
}

func main() {
	logf.SetLogger(logr.Discard())
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	members := fs.Int("members", 0, "Members C of a single size (with -pipelines); overrides -sizes.")
	pipelines := fs.Int("pipelines", 0, "Pipelines P of a single size (with -members); overrides -sizes.")
	sizes := fs.String("sizes", "1x10,3x10,3x100,10x100", "Comma-separated sizes CxP (members x pipelines).")
	large := fs.Bool("large", false, "Also run "+largeSize+" (about 16,000 member objects; takes several more minutes), and profile its first hub run (see -profile).")
	fs.IntVar(&o.runs, "runs", 3, "Floor and hub runs per size, interleaved; ratios are their median, with the range.")
	fs.DurationVar(&o.idle, "idle", 60*time.Second, "Idle window after convergence (first run of each size) in which writes are counted.")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "Pause between convergence and the hub's reconcile count (lets the echoes of the last writes be handled).")
	fs.StringVar(&o.out, "out", "docs/benchmarks.md", "Markdown file to write the results and the history into (between the bench markers); empty: stdout only.")
	fs.IntVar(&o.replicas, "replicas", 2, "Members each pipeline is placed on (consecutive members, round robin).")
	fs.IntVar(&o.concurrency, "concurrency", 4, "Pipelines handled at once, by the hub (--max-concurrent-reconciles) and by the floor.")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "Bound on each convergence.")
	fs.BoolVar(&o.profileAll, "profile", false, "Profile the first hub run of every size (CPU over the create run, heap at convergence); -large profiles "+largeSize+" only.")
	fs.StringVar(&o.profileDir, "profile-dir", "", "Where profiles go (default: <work-dir>/profiles).")
	fs.StringVar(&o.workDir, "work-dir", "", "Where the hub binary, kubeconfig and hub logs go (default: a temporary directory, kept).")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.profileLarge = *large
	o.command = os.Getenv("BENCH_COMMAND")
	if o.command == "" {
		o.command = strings.TrimSpace("go run ./hack/bench " + strings.Join(args, " "))
	}
	var err error
	if o.sizes, err = parseSizes(*members, *pipelines, *sizes, *large); err != nil {
		return o, err
	}
	switch {
	case o.replicas < 1:
		return o, fmt.Errorf("-replicas must be at least 1, got %d", o.replicas)
	case o.concurrency < 1:
		return o, fmt.Errorf("-concurrency must be at least 1, got %d", o.concurrency)
	case o.runs < 1:
		return o, fmt.Errorf("-runs must be at least 1, got %d", o.runs)
	}
	return o, nil
}

// parseSizes reads -members/-pipelines or else -sizes (plus largeSize with -large).
func parseSizes(members, pipelines int, list string, large bool) ([]size, error) {
	if members > 0 || pipelines > 0 {
		if members <= 0 || pipelines <= 0 {
			return nil, fmt.Errorf("-members and -pipelines go together, both at least 1")
		}
		return []size{{members, pipelines}}, nil
	}
	if large {
		list += "," + largeSize
	}
	var out []size
	for _, s := range strings.Split(list, ",") {
		var sz size
		if _, err := fmt.Sscanf(strings.TrimSpace(s), "%dx%d", &sz.C, &sz.P); err != nil || sz.C <= 0 || sz.P <= 0 {
			return nil, fmt.Errorf("-sizes: invalid size %q: want CxP with C and P at least 1, e.g. 3x100", s)
		}
		out = append(out, sz)
	}
	return out, nil
}

// env is the running API servers and fast clients to them.
type env struct {
	hub     *testenv.Cluster
	members []*testenv.Cluster
	clients map[string]client.Client
	hubBin  string
	kubecfg string
	workDir string
	// serverIDs hands out MySQL server ids: every pipeline of the invocation has its own source
	// identity, since the hub runs one pipeline per identity and makes the others wait.
	serverIDs int
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
	// Before the hub is built: the tree may change while the bench runs.
	tree := commit(ctx)
	e, stop, err := setUp(ctx, o)
	defer stop()
	if err != nil {
		return err
	}
	if o.profileDir == "" {
		o.profileDir = filepath.Join(e.workDir, "profiles")
	}
	base, err := e.emptyHubRSS(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("hub with no member, engaged: RSS %s MiB\n", mib(base))
	var results []result
	for i, s := range o.sizes {
		fmt.Printf("== %s: %d members, %d pipelines, %d runs\n", s, s.C, s.P, o.runs)
		r, err := e.runSize(ctx, o, s, i)
		if err != nil {
			return fmt.Errorf("size %s: %w", s, err)
		}
		results = append(results, r)
		fmt.Println(tableRow(r, base))
	}
	for _, r := range results {
		for _, f := range r.profiles {
			if err := reportProfile(ctx, f); err != nil {
				return err
			}
		}
	}
	rep := report{o: o, results: results, baseRSS: base, took: time.Since(start), at: time.Now().UTC(), commit: tree}
	fmt.Println()
	fmt.Println(rep.tables())
	fmt.Printf("total bench time %s\n", rep.took.Round(time.Second))
	if o.out != "" {
		if err := writeDoc(o.out, rep); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", o.out)
	}
	return nil
}

// setUp builds the hub and starts the API servers; stop stops them.
func setUp(ctx context.Context, o options) (*env, func(), error) {
	e := &env{clients: map[string]client.Client{}, workDir: o.workDir, serverIDs: 1000}
	var clusters []*testenv.Cluster
	stop := func() {
		var wg sync.WaitGroup
		for _, c := range clusters {
			wg.Go(func() { _ = c.Stop() })
		}
		wg.Wait()
	}
	if e.workDir == "" {
		d, err := os.MkdirTemp("", "urutau-bench-")
		if err != nil {
			return nil, stop, err
		}
		e.workDir = d
	}
	fmt.Printf("work dir (hub binary, kubeconfig, hub logs): %s\n", e.workDir)
	e.hubBin = filepath.Join(e.workDir, "hub")
	build := exec.CommandContext(ctx, "go", "build", "-o", e.hubBin, "./cmd/hub")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return nil, stop, fmt.Errorf("building the hub: %w", err)
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
	for i := 0; i < len(names); i += 3 {
		batch, err := testenv.Start(ctx, names[i:min(i+3, len(names))]...)
		clusters = append(clusters, batch...)
		if err != nil {
			return nil, stop, err
		}
	}
	fmt.Printf("%d API servers up in %s\n", len(clusters), time.Since(t).Round(time.Millisecond))
	if err := e.connect(clusters); err != nil {
		return e, stop, err
	}
	return e, stop, e.openPlacement(ctx)
}

// connect makes the clients and the hub's kubeconfig.
func (e *env) connect(clusters []*testenv.Cluster) error {
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
	return os.WriteFile(e.kubecfg, kc, 0o600)
}

// commit is the tree the bench runs on (read when it starts, before it builds the hub): the
// short commit, "+changes" when files other than the bench's output differ from it.
func commit(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if exec.CommandContext(ctx, "git", "diff", "--quiet", "HEAD", "--", ".", ":!docs/benchmarks.md").Run() != nil {
		c += "+changes"
	}
	return c
}
