package localfleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// More fault controls, for the chaos suite (test/chaos): a member whose kubelet stalls, a member
// API server brought back without waiting for its components to settle, components restarted
// on demand.

// PauseKubelet freezes the named cluster's kwok controller (SIGSTOP), which plays every node's
// kubelet: pods are neither started nor finish terminating (a deleted pod stays Terminating)
// until ResumeKubelet. Nothing else of the cluster stops.
func PauseKubelet(o Options, name string) error {
	return signalComponent(o, name, "kwok-controller", syscall.SIGSTOP)
}

// ResumeKubelet lets the named cluster's kwok controller go on (SIGCONT). Resuming a kubelet
// that is not paused does nothing.
func ResumeKubelet(o Options, name string) error {
	return signalComponent(o, name, "kwok-controller", syscall.SIGCONT)
}

func signalComponent(o Options, cluster, name string, sig syscall.Signal) error {
	c, err := o.component(cluster, name)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(c.pidFile)
	if err != nil {
		return fmt.Errorf("reading %s: %w", c.pidFile, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return fmt.Errorf("%s: %w", c.pidFile, err)
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending %s to %s of %q: %w", sig, name, cluster, err)
	}
	return nil
}

// StartAPIServerAsync starts the named cluster's kube-apiserver again and returns as soon as it
// answers; for settle afterwards it restarts, in the background, any component that exits (as
// StartAPIServer does in the foreground). The chaos suite uses it so that a member coming back
// does not stop the history for the components to settle.
func StartAPIServerAsync(ctx context.Context, o Options, name string, settle time.Duration) error {
	c, err := o.component(name, "kube-apiserver")
	if err != nil {
		return err
	}
	if !c.running() {
		if err := c.start(); err != nil {
			return fmt.Errorf("starting kube-apiserver of %q: %w", name, err)
		}
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
		time.Sleep(100 * time.Millisecond)
	}
	go func() {
		until := time.Now().Add(settle)
		for time.Now().Before(until) && ctx.Err() == nil {
			_ = EnsureComponents(o, name)
			time.Sleep(500 * time.Millisecond)
		}
	}()
	return nil
}

// EnsureComponents starts again whichever of the named cluster's controller manager, scheduler
// and kwok controller has exited (they exit when they lose their leader lease during an API
// server outage), as the kubelet of a real control plane would.
func EnsureComponents(o Options, name string) error {
	var errs []error
	for _, other := range []string{"kube-controller-manager", "kube-scheduler", "kwok-controller"} {
		oc, err := o.component(name, other)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !oc.running() {
			if err := oc.start(); err != nil {
				errs = append(errs, fmt.Errorf("restarting %s of %q: %w", other, name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// APIServerRunning tells whether the named cluster's kube-apiserver process is alive.
func APIServerRunning(o Options, name string) bool {
	c, err := o.component(name, "kube-apiserver")
	return err == nil && c.running()
}

// PortHold keeps a stopped API server's port bound, so that no other process on the machine
// (another local cluster being created, say) takes it while the API server is down: clients
// connecting meanwhile are closed at once, as a dead server's would be refused.
type PortHold struct {
	l net.Listener
}

// HoldAPIServerPort binds the named cluster's kube-apiserver port. Call it after StopAPIServer,
// and Release before starting the API server again.
func HoldAPIServerPort(o Options, name string) (*PortHold, error) {
	c, err := o.component(name, "kube-apiserver")
	if err != nil {
		return nil, err
	}
	port := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			port = v
		}
	}
	if port == "" {
		return nil, fmt.Errorf("kube-apiserver of %q: no --secure-port", name)
	}
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return nil, fmt.Errorf("holding port %s of %q: %w", port, name, err)
	}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	return &PortHold{l: l}, nil
}

// Release unbinds the port. Releasing a nil or released hold does nothing.
func (h *PortHold) Release() error {
	if h == nil || h.l == nil {
		return nil
	}
	err := h.l.Close()
	h.l = nil
	return err
}
