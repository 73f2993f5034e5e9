package localfleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// HubNamespace is where the local hub keeps its member kubeconfig Secrets and tombstones.
const HubNamespace = "urutau-system"

const webhookPath = "/validate-urutau-io-v1alpha1-cdcpipeline"

// Member is a member cluster of a local fleet and its inventory entry.
type Member struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// KEDA installs KEDA's ScaledObject CRD in the member.
	KEDA bool
}

// FleetOptions describe a whole local fleet: the clusters, the hub process and its flags.
type FleetOptions struct {
	Options
	// RepoRoot is the repository, for the CRD manifests.
	RepoRoot string
	// HubBinary is the built cmd/hub.
	HubBinary string
	// HubArgs are extra flags for the hub (the kubeconfig, provider, webhook and port flags are set).
	HubArgs []string
	// Members of the fleet; the hub cluster is named "hub".
	Members []Member
	// Namespaces are created on the hub (for the CDCPipelines) and in every member, as a platform
	// team would provide them.
	Namespaces []string
}

// Fleet is a running local fleet.
type Fleet struct {
	opts    FleetOptions
	Hub     Cluster
	Members []Cluster
	scheme  *runtime.Scheme
	hubCmd  *exec.Cmd
	certDir string
	port    int
}

// Scheme holds client-go's types, CRDs and the urutau API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(urutauv1alpha1.AddToScheme(s))
	return s
}

// Up starts the clusters, installs the CRDs, registers the members on the hub, starts the hub
// process with its webhook and registers the webhook with the hub API server.
func Up(ctx context.Context, o FleetOptions) (*Fleet, error) {
	f := &Fleet{opts: o, scheme: Scheme()}
	o.Names = []string{"hub"}
	for _, m := range o.Members {
		o.Names = append(o.Names, m.Name)
	}
	f.opts.Options = o.Options
	if _, err := os.Stat(o.HubBinary); err != nil {
		return nil, fmt.Errorf("hub binary %s: %w (build it with `make build`)", o.HubBinary, err)
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, err
	}
	clusters, err := Create(ctx, o.Options)
	if err != nil {
		return nil, err
	}
	f.Hub, f.Members = clusters[0], clusters[1:]
	hub, err := f.Client("hub")
	if err != nil {
		return nil, err
	}
	if err := prepareHub(ctx, hub, o); err != nil {
		return nil, err
	}
	if err := f.prepareMembers(ctx, o); err != nil {
		return nil, err
	}
	if err := f.startHubWithWebhook(ctx, hub); err != nil {
		return nil, err
	}
	return f, nil
}

// prepareHub installs the hub's CRDs, opens placement and creates the hub's namespaces.
func prepareHub(ctx context.Context, hub client.Client, o FleetOptions) error {
	o.logf("installing the CDCPipeline, ReaderLease and PlacementPolicy CRDs on the hub")
	if err := ApplyFiles(ctx, hub, filepath.Join(o.RepoRoot, "config/hub/crd/bases/urutau.io_cdcpipelines.yaml"),
		filepath.Join(o.RepoRoot, "config/hub/crd/bases/urutau.io_readerleases.yaml"),
		filepath.Join(o.RepoRoot, "config/hub/crd/bases/urutau.io_placementpolicies.yaml")); err != nil {
		return err
	}
	if err := openPlacement(ctx, hub); err != nil {
		return err
	}
	for _, ns := range append([]string{HubNamespace}, o.Namespaces...) {
		if err := ensureNamespace(ctx, hub, ns); err != nil {
			return err
		}
	}
	return nil
}

// prepareMembers installs KEDA's CRD where asked, opens the members' namespaces and registers
// each member on the hub.
func (f *Fleet) prepareMembers(ctx context.Context, o FleetOptions) error {
	kedaCRD, err := kedaCRDPath(ctx, o.RepoRoot)
	if err != nil {
		return err
	}
	for _, m := range o.Members {
		mc, err := f.Client(m.Name)
		if err != nil {
			return err
		}
		if m.KEDA {
			o.logf("installing KEDA's ScaledObject CRD on %s", m.Name)
			if err := ApplyFiles(ctx, mc, kedaCRD); err != nil {
				return err
			}
		}
		for _, ns := range o.Namespaces {
			if err := ensureMemberNamespace(ctx, mc, ns); err != nil {
				return err
			}
		}
		if err := f.RegisterMember(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// startHubWithWebhook starts the hub process with a serving certificate of its own and registers
// its webhook with the hub API server.
func (f *Fleet) startHubWithWebhook(ctx context.Context, hub client.Client) error {
	var err error
	if f.port, err = freePort(); err != nil {
		return err
	}
	f.certDir = filepath.Join(f.opts.WorkDir, "webhook-certs")
	caBundle, err := writeServingCert(f.certDir)
	if err != nil {
		return err
	}
	if err := f.StartHub(ctx); err != nil {
		return err
	}
	return registerWebhook(ctx, hub, f.port, caBundle)
}

// Client returns a client for the named cluster of the fleet.
func (f *Fleet) Client(name string) (client.Client, error) {
	for _, c := range append([]Cluster{f.Hub}, f.Members...) {
		if c.Name == name {
			return c.Client(client.Options{Scheme: f.scheme})
		}
	}
	return nil, fmt.Errorf("no cluster %q in the fleet", name)
}

// HubLog is the hub process's log file.
func (f *Fleet) HubLog() string { return filepath.Join(f.opts.WorkDir, "hub.log") }

// RegisterMember creates the member's kubeconfig Secret on the hub (the kubeconfig provider's
// inventory entry), with the member's labels and annotations.
func (f *Fleet) RegisterMember(ctx context.Context, m Member) error {
	hub, err := f.Client("hub")
	if err != nil {
		return err
	}
	kubeconfig, err := selfContained(f.opts.kubeconfigPath(m.Name))
	if err != nil {
		return err
	}
	labels := map[string]string{"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}
	for k, v := range m.Labels {
		labels[k] = v
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: HubNamespace, Name: m.Name, Labels: labels, Annotations: m.Annotations},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}
	if err := hub.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering member %s: %w", m.Name, err)
	}
	return nil
}

// selfContained is the kubeconfig at path with the files it references (kwokctl writes paths to
// its PKI) inlined, as `hub member-secret` makes it: the hub refuses file paths in member
// credentials.
func selfContained(path string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("inlining the files of %s: %w", path, err)
	}
	return clientcmd.Write(*cfg)
}

// StartHub starts the hub process (again) and waits for its webhook server to listen.
func (f *Fleet) StartHub(ctx context.Context) error {
	logFile, err := os.OpenFile(f.HubLog(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(f.opts.HubBinary, f.HubArgs(f.port)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	f.hubCmd = cmd
	if err := os.WriteFile(filepath.Join(f.opts.WorkDir, "hub.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return err
	}
	f.opts.logf("hub started (pid %d, log %s)", cmd.Process.Pid, f.HubLog())
	if err := waitForPort(ctx, f.port, 60*time.Second); err != nil {
		return fmt.Errorf("the hub's webhook did not come up (see %s): %w", f.HubLog(), err)
	}
	return nil
}

// KillHub kills the hub process without letting it finish anything (SIGKILL), as a crash would.
func (f *Fleet) KillHub() error {
	if f.hubCmd == nil || f.hubCmd.Process == nil {
		return nil
	}
	err := f.hubCmd.Process.Kill()
	_, _ = f.hubCmd.Process.Wait()
	f.hubCmd = nil
	return err
}

// Down stops the hub process and every cluster, and removes the work dir.
func (f *Fleet) Down(ctx context.Context) error {
	return Teardown(ctx, f.opts)
}

// Teardown stops what a FleetOptions' Up started, also from another process (make demo-down).
func Teardown(ctx context.Context, o FleetOptions) error {
	// hub.pid, and hub-<name>.pid of extra hub processes (StartExtraHub).
	pidFiles, _ := filepath.Glob(filepath.Join(o.WorkDir, "hub*.pid"))
	for _, pidFile := range pidFiles {
		if pid, err := os.ReadFile(pidFile); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
				if p, err := os.FindProcess(n); err == nil {
					_ = p.Signal(syscall.SIGTERM)
					waitExit(n, 10*time.Second)
					_ = p.Kill()
				}
			}
		}
	}
	o.Names = []string{"hub"}
	for _, m := range o.Members {
		o.Names = append(o.Names, m.Name)
	}
	if _, err := os.Stat(o.WorkDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	err := Delete(ctx, o.Options)
	return errors.Join(err, os.RemoveAll(o.WorkDir))
}

func waitExit(pid int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func kedaCRDPath(ctx context.Context, repoRoot string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/kedacore/keda/v2")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding the KEDA module: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config/crd/bases/keda.sh_scaledobjects.yaml"), nil
}

// ApplyFiles server-side applies every document of the files and waits for CRDs to be served.
func ApplyFiles(ctx context.Context, c client.Client, paths ...string) error {
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
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("urutau-localfleet"), client.ForceOwnership); err != nil {
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

// OpenPlacementPolicy is the PlacementPolicy a local fleet starts with: a development fleet lets
// every hub namespace place on every member (system namespaces stay refused).
const OpenPlacementPolicy = "localfleet-open"

func openPlacement(ctx context.Context, hub client.Client) error {
	p := &urutauv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: OpenPlacementPolicy},
		Spec: urutauv1alpha1.PlacementPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{}, ClusterSelector: &metav1.LabelSelector{},
		},
	}
	// An Established CRD may not be in the API server's discovery yet (seen on a loaded machine):
	// its kind is "no match" for a little while.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := hub.Create(ctx, p)
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			return nil
		case !meta.IsNoMatchError(err) || time.Now().After(deadline):
			return fmt.Errorf("creating PlacementPolicy %s: %w", p.Name, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// ensureMemberNamespace creates a member namespace opened to the fleet, as a member's platform
// team would (urutau.io/fleet-managed=true).
func ensureMemberNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{urutauv1alpha1.LabelFleetManaged: "true", tenancy.LabelPodSecurityEnforce: tenancy.PodSecurityRestricted}}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
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
	return certPEM, os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600)
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

// registerWebhook points the hub API server at the hub process's webhook: the rules of the shipped
// config/hub/webhook, reached by URL instead of a Service.
func registerWebhook(ctx context.Context, hub client.Client, port int, caBundle []byte) error {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, webhookPath)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "urutau-fleet-local"},
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
