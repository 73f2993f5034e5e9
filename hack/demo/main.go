// Command demo runs urutau fleet on this machine with no Docker: a hub and two member clusters
// (real control planes from internal/localfleet, pods Running on kwok fake nodes), the hub process
// with its webhook, and sample pipelines; then it prints a live per-member status table.
//
//	go run ./hack/demo up      # what `make demo` runs; Ctrl-C stops everything it started
//	go run ./hack/demo down    # what `make demo-down` runs, for a demo that was not stopped
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/localfleet"
)

const (
	hubNamespace      = "urutau-system"
	pipelineNamespace = "shop"
	webhookPath       = "/validate-urutau-io-v1alpha1-cdcpipeline"
	kedaAddressKey    = "urutau.io/keda-prometheus-address"
)

// member is one member cluster of the demo and its inventory labels.
type member struct {
	name        string
	labels      map[string]string
	annotations map[string]string
	keda        bool
}

var members = []member{
	{name: "eu-1", labels: map[string]string{"region": "eu", "tier": "prod"}, keda: true,
		annotations: map[string]string{kedaAddressKey: "http://prometheus.monitoring:9090"}},
	{name: "us-1", labels: map[string]string{"region": "us", "tier": "prod"}},
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
		return down(context.Background(), c)
	default:
		fs.Usage()
		return fmt.Errorf("unknown command %q", verb)
	}
}

func (c config) fleet() localfleet.Options {
	names := []string{"hub"}
	for _, m := range members {
		names = append(names, m.name)
	}
	return localfleet.Options{BinDir: c.binDir, WorkDir: filepath.Join(c.workDir, "clusters"), Names: names,
		Log: func(format string, args ...any) { say(format, args...) }}
}

func say(format string, args ...any) {
	fmt.Printf("[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(urutauv1alpha1.AddToScheme(s))
	return s
}

func up(ctx context.Context, c config) (err error) {
	start := time.Now()
	if _, statErr := os.Stat(c.hubBinary); statErr != nil {
		return fmt.Errorf("%s not found: run `make demo`, which builds it", c.hubBinary)
	}
	if err := os.MkdirAll(c.workDir, 0o755); err != nil {
		return err
	}
	defer func() {
		// Ctrl-C or a failure: stop everything this run started.
		say("stopping the demo")
		if derr := down(context.WithoutCancel(ctx), c); derr != nil && err == nil {
			err = derr
		}
	}()

	say("starting a hub and members %s (real control planes, kwok fake nodes)", memberNames())
	clusters, err := localfleet.Create(ctx, c.fleet())
	if err != nil {
		return err
	}
	byName := map[string]client.Client{}
	kubeconfigs := map[string]string{}
	for _, cl := range clusters {
		k, err := cl.Client(client.Options{Scheme: scheme()})
		if err != nil {
			return err
		}
		byName[cl.Name] = k
		kubeconfigs[cl.Name] = cl.KubeconfigPath
	}
	hub := byName["hub"]

	say("installing the CDCPipeline CRD on the hub, KEDA's ScaledObject CRD on %s", kedaMembers())
	if err := applyFiles(ctx, hub, filepath.Join(c.root, "config/hub/crd/bases/urutau.io_cdcpipelines.yaml")); err != nil {
		return err
	}
	kedaCRD, err := kedaCRDPath(ctx)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.keda {
			if err := applyFiles(ctx, byName[m.name], kedaCRD); err != nil {
				return err
			}
		}
	}

	say("registering the members on the hub (kubeconfig Secrets in %s)", hubNamespace)
	if err := ensureNamespace(ctx, hub, hubNamespace); err != nil {
		return err
	}
	for _, m := range members {
		if err := registerMember(ctx, hub, m, kubeconfigs[m.name]); err != nil {
			return err
		}
		// What a platform team provides in each member: the namespace and the source Secret.
		if err := ensureNamespace(ctx, byName[m.name], pipelineNamespace); err != nil {
			return err
		}
		if err := ensureSecrets(ctx, byName[m.name], m.name); err != nil {
			return err
		}
	}

	port, err := freePort()
	if err != nil {
		return err
	}
	certDir := filepath.Join(c.workDir, "webhook-certs")
	caBundle, err := writeServingCert(certDir)
	if err != nil {
		return err
	}
	say("starting the hub (log: %s)", filepath.Join(c.workDir, "hub.log"))
	hubCmd, err := startHub(c, kubeconfigs["hub"], certDir, port)
	if err != nil {
		return err
	}
	defer func() {
		_ = hubCmd.Process.Signal(syscall.SIGTERM)
		_, _ = hubCmd.Process.Wait()
	}()
	if err := waitForPort(ctx, port, 60*time.Second); err != nil {
		return fmt.Errorf("the hub's webhook did not come up (see %s): %w", filepath.Join(c.workDir, "hub.log"), err)
	}
	if err := registerWebhook(ctx, hub, port, caBundle); err != nil {
		return err
	}

	say("applying the sample pipelines (examples/demo/)")
	samples, err := filepath.Glob(filepath.Join(c.root, "examples/demo/*.yaml"))
	if err != nil || len(samples) == 0 {
		return fmt.Errorf("no samples in examples/demo: %v", err)
	}
	if err := applyFiles(ctx, hub, samples...); err != nil {
		return err
	}
	say("up in %s; watching (Ctrl-C stops and removes everything)", time.Since(start).Round(100*time.Millisecond))
	return watch(ctx, c, hub, byName, start)
}

func down(ctx context.Context, c config) error {
	if pid, err := os.ReadFile(filepath.Join(c.workDir, "hub.pid")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
			if p, err := os.FindProcess(n); err == nil {
				_ = p.Signal(syscall.SIGTERM)
			}
		}
		_ = os.Remove(filepath.Join(c.workDir, "hub.pid"))
	}
	if err := localfleet.Delete(ctx, c.fleet()); err != nil {
		return err
	}
	return os.RemoveAll(c.workDir)
}

func memberNames() string {
	var n []string
	for _, m := range members {
		n = append(n, m.name)
	}
	return strings.Join(n, ", ")
}

func kedaMembers() string {
	var n []string
	for _, m := range members {
		if m.keda {
			n = append(n, m.name)
		}
	}
	return strings.Join(n, ", ")
}

func kedaCRDPath(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/kedacore/keda/v2").Output()
	if err != nil {
		return "", fmt.Errorf("finding the KEDA module: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config/crd/bases/keda.sh_scaledobjects.yaml"), nil
}

// applyFiles server-side applies every document of the files.
func applyFiles(ctx context.Context, c client.Client, paths ...string) error {
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, doc := range strings.Split(string(raw), "\n---") {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("urutau-demo"), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s %s from %s: %w", obj.GetKind(), obj.GetName(), p, err)
			}
		}
	}
	return waitForCRDs(ctx, c)
}

func waitForCRDs(ctx context.Context, c client.Client) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := c.List(ctx, list); err != nil {
			return err
		}
		ready := true
		for _, crd := range list.Items {
			established := false
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			ready = ready && established
		}
		if ready {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("CRDs not established after 30s")
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func registerMember(ctx context.Context, hub client.Client, m member, kubeconfigPath string) error {
	kubeconfig, err := os.ReadFile(kubeconfigPath)
	if err != nil {
		return err
	}
	labels := map[string]string{"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}
	for k, v := range m.labels {
		labels[k] = v
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: hubNamespace, Name: m.name, Labels: labels, Annotations: m.annotations},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}
	if err := hub.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering member %s: %w", m.name, err)
	}
	return nil
}

// ensureSecrets creates the credentials the sample pipelines reference. The coordinators never
// connect anywhere in the demo (kwok runs no containers); the hub only checks the keys exist.
func ensureSecrets(ctx context.Context, c client.Client, memberName string) error {
	for _, name := range []string{"orders-mysql", "inventory-pg", "clicks-mysql"} {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: name},
			StringData: map[string]string{"uri": "mysql://demo@db." + memberName + ".example:3306/" + name},
		}
		if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeServingCert writes a self-signed serving certificate for 127.0.0.1 where the hub's webhook
// server reads it, and returns the CA bundle the API server must trust.
func writeServingCert(dir string) ([]byte, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, err
	}
	return certPEM, nil
}

func startHub(c config, kubeconfig, certDir string, port int) (*exec.Cmd, error) {
	logFile, err := os.Create(filepath.Join(c.workDir, "hub.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.hubBinary,
		"--kubeconfig="+kubeconfig,
		"--coordinator-image=ghcr.io/urutau-io/urutau:latest",
		"--cluster-provider=kubeconfig",
		"--cluster-provider-namespace="+hubNamespace,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--webhook-cert-dir="+certDir,
		"--webhook-port="+strconv.Itoa(port),
		"--tombstone-grace=30s",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.workDir, "hub.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return nil, err
	}
	return cmd, nil
}

func waitForPort(ctx context.Context, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("nothing listens on 127.0.0.1:%d after %s", port, timeout)
}

// registerWebhook points the hub API server at the hub process's webhook: the same rules as the
// shipped config/hub/webhook, reached by URL instead of a Service.
func registerWebhook(ctx context.Context, hub client.Client, port int, caBundle []byte) error {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, webhookPath)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "urutau-fleet-demo"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "vcdcpipeline.urutau.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"urutau.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"cdcpipelines"},
				},
			}},
		}},
	}
	if err := hub.Create(ctx, vwc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering the webhook: %w", err)
	}
	return nil
}

// row is one line of the status table: a pipeline on one member.
type row struct {
	pipeline, member, phase, coordinator, pod, message string
}

func watch(ctx context.Context, c config, hub client.Client, byName map[string]client.Client, start time.Time) error {
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
