// Package localfleet runs a fleet of local Kubernetes clusters with no Docker: each cluster is a
// real etcd, kube-apiserver, kube-controller-manager and kube-scheduler plus the kwok controller,
// all as local processes started by kwokctl from the binaries hack/control-plane.sh builds. A fake
// kwok node in each cluster lets StatefulSet pods get scheduled and reach Running.
//
// `make demo` and the e2e suite (test/kind, against the local fleet) use it. It is not product
// code: nothing the hub runs imports it.
package localfleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Options say where the binaries are, where the clusters keep their state and which to start.
type Options struct {
	// BinDir holds kube-apiserver, etcd, kubectl, kwok, kwokctl... (hack/control-plane.sh print-dir).
	BinDir string
	// WorkDir holds every cluster's state and kubeconfig.
	WorkDir string
	// Names of the clusters to start, e.g. hub, member-a, member-b.
	Names []string
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// Cluster is one running local cluster.
type Cluster struct {
	Name string
	// KubeconfigPath is an admin kubeconfig.
	KubeconfigPath string
}

// Create starts the clusters one after another (kwokctl's port choice races when run in parallel)
// and adds a fake node to each. A cluster that already runs under WorkDir is reused.
func Create(ctx context.Context, o Options) ([]Cluster, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	var out []Cluster
	for _, name := range o.Names {
		start := time.Now()
		c, err := o.create(ctx, name)
		if err != nil {
			return out, err
		}
		if err := addFakeNode(ctx, c); err != nil {
			return out, fmt.Errorf("adding the fake node to %q: %w", name, err)
		}
		o.logf("cluster %s up in %s (%s)", name, time.Since(start).Round(100*time.Millisecond), c.KubeconfigPath)
		out = append(out, c)
	}
	return out, nil
}

// Delete stops the named clusters and removes their state. It carries on past errors.
func Delete(ctx context.Context, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	var errs []error
	for _, name := range o.Names {
		if err := o.kwokctl(ctx, "delete", "cluster", "--name", name, "--kubeconfig", o.kubeconfigPath(name)); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(o.kubeconfigPath(name))
		if err := releasePorts(o.clusterDir(name)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopAPIServer stops only the named cluster's kube-apiserver process; clients see connection
// refused. Fault tests use it to make a member unreachable. (Stopping the whole cluster is no
// good: kwok v0.8.0 then fails to re-take its node lease and stops running pods.)
func StopAPIServer(ctx context.Context, o Options, name string) error {
	c, err := o.component(name, "kube-apiserver")
	if err != nil {
		return err
	}
	pid, err := c.pid()
	if err != nil {
		return err
	}
	// No graceful drain: the point is a server that vanishes.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing kube-apiserver of %q: %w", name, err)
	}
	cl := Cluster{Name: name, KubeconfigPath: o.kubeconfigPath(name)}
	deadline := time.Now().Add(10 * time.Second)
	for reachable(ctx, cl) == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver of %q still answers after SIGKILL", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// StartAPIServer starts the named cluster's kube-apiserver again with the flags kwokctl gave it,
// waits until it answers, then for 15 s restarts any component that exits (the controller
// manager and the scheduler exit when they lose their leader lease), as the kubelet would.
func StartAPIServer(ctx context.Context, o Options, name string) error {
	c, err := o.component(name, "kube-apiserver")
	if err != nil {
		return err
	}
	if err := c.start(); err != nil {
		return fmt.Errorf("starting kube-apiserver of %q: %w", name, err)
	}
	cl := Cluster{Name: name, KubeconfigPath: o.kubeconfigPath(name)}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := reachable(ctx, cl)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver of %q not answering 60s after restart: %w", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A component may still be alive now and lose its lease a moment later (its renew deadline
	// runs from before the outage), so watch them until leader election has settled.
	settled := time.Now().Add(15 * time.Second)
	for time.Now().Before(settled) {
		for _, other := range []string{"kube-controller-manager", "kube-scheduler", "kwok-controller"} {
			oc, err := o.component(name, other)
			if err != nil {
				return err
			}
			if !oc.running() {
				if err := oc.start(); err != nil {
					return fmt.Errorf("restarting %s of %q: %w", other, name, err)
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}

// component is one process of a kwokctl cluster, as kwokctl recorded it in kwok.yaml.
type component struct {
	Name    string   `json:"name"`
	Binary  string   `json:"binary"`
	Args    []string `json:"args"`
	WorkDir string   `json:"workDir"`

	workDir, pidFile string
}

func (o Options) component(cluster, name string) (component, error) {
	dir := o.clusterDir(cluster)
	raw, err := os.ReadFile(filepath.Join(dir, "kwok.yaml"))
	if err != nil {
		return component{}, fmt.Errorf("reading the kwokctl config of %q: %w", cluster, err)
	}
	var cfg struct {
		Components []component `json:"components"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return component{}, fmt.Errorf("parsing the kwokctl config of %q: %w", cluster, err)
	}
	for _, c := range cfg.Components {
		if c.Name == name {
			c.workDir = dir
			if c.WorkDir != "" {
				c.workDir = c.WorkDir
			}
			c.pidFile = filepath.Join(dir, "pids", name+".pid")
			return c, nil
		}
	}
	return component{}, fmt.Errorf("cluster %q has no component %q", cluster, name)
}

// running tells whether the process of the component's pid file is alive.
func (c component) running() bool {
	pid, err := c.pid()
	return err == nil && syscall.Kill(pid, 0) == nil
}

// pid reads the component's pid file.
func (c component) pid() (int, error) {
	raw, err := os.ReadFile(c.pidFile)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", c.pidFile, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.pidFile, err)
	}
	return pid, nil
}

// start runs the component with the flags kwokctl recorded and records its pid where kwokctl
// delete finds it. Not tied to the caller's context: the process outlives the call.
func (c component) start() error {
	logFile, err := os.OpenFile(filepath.Join(c.workDir, "logs", c.Name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(c.Binary, c.Args...)
	cmd.Dir = c.workDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return os.WriteFile(c.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

func (o Options) validate() error {
	if o.BinDir == "" || o.WorkDir == "" {
		return errors.New("localfleet: BinDir and WorkDir are required")
	}
	for _, b := range []string{"kwokctl", "kwok", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return fmt.Errorf("localfleet: %s missing from %s: run `make control-plane`", b, o.BinDir)
		}
	}
	return nil
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(format, args...)
	}
}

// clusterDir is where kwokctl keeps the named cluster's state (KWOK_WORKDIR/clusters/NAME).
func (o Options) clusterDir(name string) string {
	return filepath.Join(o.WorkDir, "clusters", name)
}

func (o Options) kubeconfigPath(name string) string {
	return filepath.Join(o.WorkDir, name+".kubeconfig")
}

func (o Options) create(ctx context.Context, name string) (Cluster, error) {
	c := Cluster{Name: name, KubeconfigPath: o.kubeconfigPath(name)}
	if _, err := os.Stat(c.KubeconfigPath); err == nil {
		if reachable(ctx, c) == nil {
			return c, nil
		}
	}
	// Ports come from the machine-wide registry (ports.go), and creates are serialised
	// machine-wide so that two reservations never race, in this process or another (test
	// packages run in parallel). A cluster whose API server did not come up is made again.
	unlock, err := lockCreates(ctx)
	if err != nil {
		return c, err
	}
	defer unlock()
	for attempt := 1; ; attempt++ {
		err = o.kwokctlCreate(ctx, c)
		if err == nil {
			if err = waitReachable(ctx, c, 30*time.Second); err == nil {
				return c, nil
			}
		}
		if attempt == createAttempts {
			return c, err
		}
		o.logf("cluster %s did not come up (%v): creating it again", name, err)
		_ = o.kwokctl(ctx, "delete", "cluster", "--name", name, "--kubeconfig", c.KubeconfigPath)
	}
}

// createAttempts bounds how many times a cluster that did not come up is made again.
const createAttempts = 3

// lockCreates takes the machine-wide lock on cluster creation (a flock on a file in the temporary
// directory) and returns its release.
func lockCreates(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "urutau-localfleet-create.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the cluster creation lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for the cluster creation lock: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitReachable waits until the cluster's API server answers.
func waitReachable(ctx context.Context, c Cluster, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := reachable(ctx, c)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (o Options) kwokctlCreate(ctx context.Context, c Cluster) error {
	name := c.Name
	ports, err := reservePorts(o.clusterDir(name))
	if err != nil {
		return err
	}
	config := filepath.Join(o.WorkDir, name+"-ports.yaml")
	if err := os.WriteFile(config, []byte(ports.kwokctlConfig()), 0o644); err != nil {
		return err
	}
	err = o.kwokctl(ctx, "create", "cluster", "--name", name, "--runtime", "binary", "--config", config,
		"--kube-apiserver-binary", filepath.Join(o.BinDir, "kube-apiserver"),
		"--kube-controller-manager-binary", filepath.Join(o.BinDir, "kube-controller-manager"),
		"--kube-scheduler-binary", filepath.Join(o.BinDir, "kube-scheduler"),
		"--kwok-controller-binary", filepath.Join(o.BinDir, "kwok"),
		"--etcd-binary", filepath.Join(o.BinDir, "etcd"),
		"--kubeconfig", c.KubeconfigPath, "--wait", "2m", "--timeout", "3m")
	if err != nil {
		return fmt.Errorf("creating cluster %q: %w", name, err)
	}
	return nil
}

// kwokctl runs kwokctl with the environment that keeps it on the local binaries: without these it
// would try to download release binaries.
func (o Options) kwokctl(ctx context.Context, args ...string) error {
	version, err := exec.CommandContext(ctx, filepath.Join(o.BinDir, "kube-apiserver"), "--version").Output()
	if err != nil {
		return fmt.Errorf("reading the kube-apiserver version: %w", err)
	}
	fields := strings.Fields(string(version))
	if len(fields) < 2 {
		return fmt.Errorf("unexpected kube-apiserver --version output %q", version)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(o.BinDir, "kwokctl"), args...)
	cmd.Env = append(os.Environ(),
		"KWOK_WORKDIR="+o.WorkDir,
		"KWOK_RUNTIME=binary",
		"KWOK_KUBECTL_BINARY="+filepath.Join(o.BinDir, "kubectl"),
		"KWOK_KUBE_VERSION="+fields[1],
		// kwokctl runs the first kubectl on PATH; it must be the one matching the control plane.
		"PATH="+o.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 2000))
	}
	return nil
}

// Client returns a client for the cluster.
func (c Cluster) Client(opts client.Options) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	return client.New(cfg, opts)
}

func reachable(ctx context.Context, c Cluster) error {
	cl, err := c.Client(client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return cl.List(ctx, &corev1.NamespaceList{}, client.Limit(1))
}

// addFakeNode registers a node that the kwok controller keeps Ready and whose pods it reports
// Running, so the scheduler has somewhere to put coordinator pods.
func addFakeNode(ctx context.Context, c Cluster) error {
	cl, err := c.Client(client.Options{})
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kwok-node-0",
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl": "0",
				"kwok.x-k8s.io/node":           "fake",
			},
			Labels: map[string]string{
				"kubernetes.io/hostname": "kwok-node-0",
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{Allocatable: capacity, Capacity: capacity},
	}
	if err := cl.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
