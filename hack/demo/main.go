// Command demo runs urutau fleet on this machine with no Docker: a hub and two member clusters
// (real control planes from internal/localfleet, pods Running on kwok fake nodes), the hub process
// with its webhook, and sample pipelines; then it prints a live per-member status table.
//
//	go run ./hack/demo up      # what `make demo` runs; Ctrl-C stops everything it started
//	go run ./hack/demo down    # what `make demo-down` runs, for a demo that was not stopped
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/cli"
	"github.com/urutau-io/fleet/internal/localfleet"
)

const (
	pipelineNamespace = "shop"
	kedaAddressKey    = "urutau.io/keda-prometheus-address"
)

var members = []localfleet.Member{
	{Name: "eu-1", Labels: map[string]string{"region": "eu", "tier": "prod"}, KEDA: true,
		Annotations: map[string]string{kedaAddressKey: "http://prometheus.monitoring:9090"}},
	{Name: "us-1", Labels: map[string]string{"region": "us", "tier": "prod"}},
}

type config struct {
	root      string // the repository
	workDir   string
	binDir    string
	hubBinary string
	// exitWhenRunning stops the demo (and tears it down) once every placed member runs its
	// coordinator: CI and the timing in the README use it.
	exitWhenRunning bool
	timeout         time.Duration
}

func main() {
	// controller-runtime's clients log through this; the demo says what happens itself.
	ctrllog.SetLogger(logr.Discard())
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	c := config{}
	fs.StringVar(&c.workDir, "work-dir", ".demo", "Where the clusters, kubeconfigs, certificates and logs live.")
	fs.StringVar(&c.binDir, "bin-dir", "", "Control-plane binaries (default: hack/control-plane.sh print-dir).")
	fs.StringVar(&c.hubBinary, "hub", "bin/hub", "The hub binary.")
	fs.BoolVar(&c.exitWhenRunning, "exit-when-running", false, "Tear down and exit once every coordinator runs.")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "With --exit-when-running: fail when not all running by then.")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: demo up|down [flags]\n\n"+
			"up   starts a hub and two members (eu-1, us-1), the hub process and sample pipelines,\n"+
			"     then shows a live status table; Ctrl-C stops everything.\n"+
			"down stops whatever an earlier `demo up` left running.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return errors.New("say up or down")
	}
	verb := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var err error
	if c.root, err = os.Getwd(); err != nil {
		return err
	}
	if c.binDir == "" {
		out, err := exec.Command("hack/control-plane.sh", "print-dir").Output()
		if err != nil {
			return fmt.Errorf("finding the control plane (run from the repository root): %w", err)
		}
		c.binDir = strings.TrimSpace(string(out))
	}
	if c.workDir, err = filepath.Abs(c.workDir); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch verb {
	case "up":
		return up(ctx, c)
	case "down":
		return localfleet.Teardown(context.Background(), c.fleet())
	default:
		fs.Usage()
		return fmt.Errorf("unknown command %q", verb)
	}
}

func say(format string, args ...any) {
	fmt.Printf("[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (c config) fleet() localfleet.FleetOptions {
	return localfleet.FleetOptions{
		Options: localfleet.Options{BinDir: c.binDir, WorkDir: c.workDir,
			Log: func(format string, args ...any) { say(format, args...) }},
		RepoRoot:  c.root,
		HubBinary: c.hubBinary,
		HubArgs: []string{
			"--coordinator-image=ghcr.io/urutau-io/urutau:latest",
			"--leader-elect=false",
			"--metrics-bind-address=0",
			"--health-probe-bind-address=0",
			"--tombstone-grace=30s",
		},
		Members:    members,
		Namespaces: []string{pipelineNamespace},
	}
}

func up(ctx context.Context, c config) (err error) {
	start := time.Now()
	defer func() {
		// Ctrl-C or a failure: stop everything this run started.
		say("stopping the demo")
		if derr := localfleet.Teardown(context.WithoutCancel(ctx), c.fleet()); derr != nil && err == nil {
			err = derr
		}
	}()
	say("starting a hub and members %s (real control planes, kwok fake nodes), then the hub process", memberNames())
	say("the fleet is closed by default: the demo opens it with PlacementPolicy %s (every hub namespace, every member) and opens namespace %s in each member (%s=true)",
		localfleet.OpenPlacementPolicy, pipelineNamespace, urutauv1alpha1.LabelFleetManaged)
	f, err := localfleet.Up(ctx, c.fleet())
	if err != nil {
		return err
	}
	hub, err := f.Client("hub")
	if err != nil {
		return err
	}
	byName := map[string]client.Client{}
	for _, m := range members {
		mc, err := f.Client(m.Name)
		if err != nil {
			return err
		}
		// What a platform team provides in each member next to the namespace: the source Secrets.
		if err := ensureSecrets(ctx, mc, m.Name); err != nil {
			return err
		}
		byName[m.Name] = mc
	}

	say("applying the sample pipelines (examples/demo/)")
	samples, err := filepath.Glob(filepath.Join(c.root, "examples/demo/*.yaml"))
	if err != nil {
		return fmt.Errorf("listing examples/demo: %w", err)
	}
	if len(samples) == 0 {
		return errors.New("no samples in examples/demo")
	}
	if err := localfleet.ApplyFiles(ctx, hub, samples...); err != nil {
		return err
	}
	say("up in %s; watching (Ctrl-C stops and removes everything)", time.Since(start).Round(100*time.Millisecond))
	return watch(ctx, c, hub, byName, f.Hub.KubeconfigPath, start)
}

func memberNames() string {
	var n []string
	for _, m := range members {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}

// ensureSecrets creates the credentials the sample pipelines reference, opened to pipelines of the
// fleet (urutau.io/fleet-secret=true) as a member's platform team opens them. The coordinators
// never connect anywhere in the demo (kwok runs no containers); the hub only checks the keys exist.
func ensureSecrets(ctx context.Context, c client.Client, memberName string) error {
	for _, name := range []string{"orders-mysql", "inventory-pg", "clicks-mysql"} {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: name,
				Labels: map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}},
			StringData: map[string]string{"uri": "mysql://demo@db." + memberName + ".example:3306/" + name},
		}
		if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// row is one line of the status table: a pipeline on one member.
type row struct {
	pipeline, member, phase, coordinator, pod, message string
}

func watch(ctx context.Context, c config, hub client.Client, byName map[string]client.Client, hubKubeconfig string, start time.Time) error {
	var deadline <-chan time.Time
	if c.exitWhenRunning {
		deadline = time.After(c.timeout)
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		rows, allRunning, err := collect(ctx, hub, byName)
		if err != nil && ctx.Err() == nil {
			say("reading status: %v", err)
		}
		fmt.Print("\033[H\033[2J")
		say("urutau fleet demo — hub + %s — %s since start (Ctrl-C stops and removes everything)",
			memberNames(), time.Since(start).Round(time.Second))
		printTable(os.Stdout, rows)
		// The members as `kubectl urutau members` shows them (cmd/kubectl-urutau).
		fmt.Printf("\n$ kubectl urutau members --kubeconfig %s\n", hubKubeconfig)
		cli.Run(ctx, "kubectl urutau", []string{"members", "--kubeconfig", hubKubeconfig}, cli.Streams{Out: os.Stdout, Err: os.Stdout})
		if allRunning && c.exitWhenRunning {
			say("every placed member runs its coordinator: %s after start", time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-deadline:
			return fmt.Errorf("not every coordinator was Running within %s", c.timeout)
		case <-tick.C:
		}
	}
}

func collect(ctx context.Context, hub client.Client, byName map[string]client.Client) ([]row, bool, error) {
	list := &urutauv1alpha1.CDCPipelineList{}
	if err := hub.List(ctx, list); err != nil {
		return nil, false, err
	}
	var rows []row
	allRunning := len(list.Items) > 0
	for _, p := range list.Items {
		if len(p.Status.Clusters) == 0 {
			allRunning = false
			rows = append(rows, row{pipeline: p.Name, member: "-", phase: "-", message: readyMessage(p)})
		}
		for _, cs := range p.Status.Clusters {
			r := row{pipeline: p.Name, member: cs.Name, phase: string(cs.Phase),
				coordinator: fmt.Sprintf("%d/1", cs.CoordinatorReadyReplicas), pod: "-", message: cs.Message}
			if m, ok := byName[cs.Name]; ok {
				pod := &corev1.Pod{}
				key := client.ObjectKey{Namespace: p.Namespace, Name: p.Name + "-coordinator-0"}
				if err := m.Get(ctx, key, pod); err == nil {
					r.pod = string(pod.Status.Phase)
				}
			}
			if r.pod != string(corev1.PodRunning) {
				allRunning = false
			}
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].pipeline+"/"+rows[i].member < rows[j].pipeline+"/"+rows[j].member
	})
	return rows, allRunning, nil
}

func readyMessage(p urutauv1alpha1.CDCPipeline) string {
	for _, c := range p.Status.Conditions {
		if c.Type == urutauv1alpha1.ConditionReady {
			return c.Message
		}
	}
	return "waiting for the hub"
}

func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "PIPELINE\tMEMBER\tPHASE\tCOORDINATOR READY\tPOD\tMESSAGE")
	for _, r := range rows {
		msg := r.message
		if len(msg) > 70 {
			msg = msg[:67] + "..."
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.pipeline, r.member, r.phase, r.coordinator, r.pod, msg)
	}
	_ = tw.Flush()
}
