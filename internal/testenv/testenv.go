// Package testenv starts real Kubernetes API servers (kube-apiserver + etcd, built from the Go
// module proxy by hack/control-plane.sh) for the integration suites: one hub and several members,
// each with the CDCPipeline CRD and KEDA's ScaledObject CRD installed.
//
// It is test support only: nothing outside _test.go files and test programs imports it.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// AssetsEnv names the directory holding kube-apiserver, etcd and kubectl. `make test` sets it to
// the per-user cache that hack/control-plane.sh fills.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// KubeconfigSecretLabel marks the Secrets multicluster-runtime's kubeconfig provider reads.
const KubeconfigSecretLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"

// KubeconfigSecretKey is the key of the kubeconfig in such a Secret.
const KubeconfigSecretKey = "kubeconfig"

// Scheme holds client-go's types, the urutau API and KEDA's ScaledObject API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(urutauv1alpha1.AddToScheme(s))
	utilruntime.Must(kedav1alpha1.AddToScheme(s))
	return s
}

// Cluster is one running API server.
type Cluster struct {
	Name string
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// Client is an uncached client with Scheme().
	Client client.Client

	env *envtest.Environment
	mu  sync.Mutex
	// apiServerStopped is true between StopAPIServer and StartAPIServer.
	apiServerStopped bool
}

// Start starts one API server per name, in parallel, and installs the CRDs in each. On error it
// stops whatever it started.
func Start(ctx context.Context, names ...string) ([]*Cluster, error) {
	assets := os.Getenv(AssetsEnv)
	if assets == "" {
		return nil, fmt.Errorf("%s is not set: run the tests with `make test`, which builds the control plane "+
			"and points %s at it (or export %s=$(hack/control-plane.sh print-dir))", AssetsEnv, AssetsEnv, AssetsEnv)
	}
	crds, err := CRDPaths(ctx)
	if err != nil {
		return nil, err
	}
	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			clusters[i], errs[i] = start(name, assets, crds)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clusters {
			if c != nil {
				_ = c.Stop()
			}
		}
		return nil, err
	}
	return clusters, nil
}

func start(name, assets string, crds []string) (*Cluster, error) {
	// A fixed cert dir (not one envtest allocates and wipes on stop) lets StartAPIServer bring the
	// API server back with the same serving certificate, port and client CA.
	certDir, err := os.MkdirTemp("", "urutau-testenv-"+name+"-")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: os.Getenv(AssetsEnv),
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
		// An API server with open watches drains them for a long time on SIGTERM; tests do not
		// need a graceful stop, so envtest sends SIGKILL after this.
		ControlPlaneStopTimeout: 3 * time.Second,
		// envtest's 20 s default is short for four API servers starting at once on a 2-core
		// machine while other packages compile (seen: every start timing out).
		ControlPlaneStartTimeout: time.Minute,
	}
	env.ControlPlane.APIServer = &envtest.APIServer{CertDir: certDir}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting API server %q: %w", name, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Cluster{Name: name, Config: cfg, Client: c, env: env}, nil
}

// CRDPaths returns the CRD files every test cluster gets: ours, generated into config/hub/crd/bases,
// and KEDA's ScaledObject CRD as the KEDA module ships it (not a copy).
func CRDPaths(ctx context.Context) ([]string, error) {
	root, err := goList(ctx, "-m", "-f", "{{.Dir}}")
	if err != nil {
		return nil, fmt.Errorf("finding the module root: %w", err)
	}
	keda, err := goList(ctx, "-m", "-f", "{{.Dir}}", "github.com/kedacore/keda/v2")
	if err != nil {
		return nil, fmt.Errorf("finding the KEDA module: %w", err)
	}
	return []string{
		filepath.Join(root, "config", "hub", "crd", "bases"),
		filepath.Join(keda, "config", "crd", "bases", "keda.sh_scaledobjects.yaml"),
	}, nil
}

func goList(ctx context.Context, args ...string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", append([]string{"list"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go list %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// Stop stops the API server and etcd for good.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiServerStopped {
		// envtest would try to stop the API server again; only etcd is left.
		return ignoreStopTimeouts(c.env.ControlPlane.Etcd.Stop())
	}
	return ignoreStopTimeouts(c.env.Stop())
}

// ignoreStopTimeouts drops envtest's "timeout waiting for process X to stop": it has then sent
// SIGKILL, and it stops etcd after the API server either way. A loaded machine (a cold CI run)
// takes longer than ControlPlaneStopTimeout to stop gracefully; that is no test failure.
func ignoreStopTimeouts(err error) error {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		if err != nil && strings.Contains(err.Error(), "timeout waiting for process") {
			return nil
		}
		return err
	}
	var rest []error
	for _, e := range agg.Errors() {
		if !strings.Contains(e.Error(), "timeout waiting for process") {
			rest = append(rest, e)
		}
	}
	return utilerrors.NewAggregate(rest)
}

// StopAPIServer stops the API server process; etcd and its data stay, so StartAPIServer brings
// the cluster back as it was. Clients see connection refused meanwhile.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiServerStopped {
		return nil
	}
	if err := c.env.ControlPlane.APIServer.Stop(); err != nil {
		// On a stop timeout envtest has already sent SIGKILL but still reports an error: the
		// server is stopped once its port no longer answers.
		if !strings.Contains(err.Error(), "timeout waiting for process") || !c.waitPortClosed(10*time.Second) {
			return fmt.Errorf("stopping API server %q: %w", c.Name, err)
		}
	}
	c.apiServerStopped = true
	return nil
}

func (c *Cluster) waitPortClosed(timeout time.Duration) bool {
	addr := c.env.ControlPlane.APIServer.HostPort()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return true
		}
		_ = conn.Close()
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// StartAPIServer starts the API server again on the same address, certificates and etcd.
func (c *Cluster) StartAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.apiServerStopped {
		return nil
	}
	if err := c.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("restarting API server %q: %w", c.Name, err)
	}
	c.apiServerStopped = false
	return nil
}

// Kubeconfig is an admin kubeconfig for this cluster.
func (c *Cluster) Kubeconfig() ([]byte, error) {
	if len(c.env.KubeConfig) == 0 {
		return nil, fmt.Errorf("cluster %q has no kubeconfig", c.Name)
	}
	return c.env.KubeConfig, nil
}

// DeleteKEDACRD removes KEDA's ScaledObject CRD, as in a member without KEDA.
func (c *Cluster) DeleteKEDACRD(ctx context.Context) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "scaledobjects.keda.sh"
	if err := c.Client.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
		return err
	}
	// Wait until discovery no longer serves it, so callers see a NoMatch error.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd)
		if client.IgnoreNotFound(err) == nil && err != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("CRD scaledobjects.keda.sh still present in %q after 30s", c.Name)
}

// KubeconfigSecret is a Secret that multicluster-runtime's kubeconfig provider reads as a member
// named name. Its labels are the member's inventory labels.
func KubeconfigSecret(namespace, name string, kubeconfig []byte, labels map[string]string) *corev1.Secret {
	l := map[string]string{KubeconfigSecretLabel: "true"}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: l},
		Data:       map[string][]byte{KubeconfigSecretKey: kubeconfig},
	}
}
