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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	}
	return errors.Join(errs...)
}

// StopCluster stops a cluster's processes, keeping its state; StartCluster starts them again.
// Fault tests use them to make a member unreachable and bring it back.
func StopCluster(ctx context.Context, o Options, name string) error {
	return o.kwokctl(ctx, "stop", "cluster", "--name", name)
}

// StartCluster starts a cluster stopped by StopCluster.
func StartCluster(ctx context.Context, o Options, name string) error {
	return o.kwokctl(ctx, "start", "cluster", "--name", name, "--wait", "2m")
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
	err := o.kwokctl(ctx, "create", "cluster", "--name", name, "--runtime", "binary",
		"--kube-apiserver-binary", filepath.Join(o.BinDir, "kube-apiserver"),
		"--kube-controller-manager-binary", filepath.Join(o.BinDir, "kube-controller-manager"),
		"--kube-scheduler-binary", filepath.Join(o.BinDir, "kube-scheduler"),
		"--kwok-controller-binary", filepath.Join(o.BinDir, "kwok"),
		"--etcd-binary", filepath.Join(o.BinDir, "etcd"),
		"--kubeconfig", c.KubeconfigPath, "--wait", "2m", "--timeout", "3m")
	if err != nil {
		return c, fmt.Errorf("creating cluster %q: %w", name, err)
	}
	return c, nil
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
