package localfleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// More fault controls, for the chaos suite (test/chaos): a member whose kubelet stalls, and a
// supervisor that stops and starts a member's API server as often as a history wants.

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
	pid, err := c.pid()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending %s to %s of %q: %w", sig, name, cluster, err)
	}
	return nil
}

// supervised are the components a Supervisor keeps: the ones that exit when the API server is
// gone (the controller manager and the scheduler lose their leader lease) and the API server.
var supervised = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}

// Supervisor plays the kubelet of one local cluster's control plane for as long as a test stops
// and starts its API server: it starts again any component that exits, and while the API server
// is stopped on purpose it keeps the port of every stopped component reserved (bound, not
// listening: a client is refused, as by a dead server), so that no other process on the machine
// (another local cluster being created) takes it meanwhile.
type Supervisor struct {
	o    Options
	name string

	mu   sync.Mutex
	down bool
	held map[string]*reservedPort
	done chan struct{}
	wg   sync.WaitGroup
}

// Supervise starts supervising the named cluster; Close stops it.
func Supervise(o Options, name string) *Supervisor {
	s := &Supervisor{o: o, name: name, held: map[string]*reservedPort{}, done: make(chan struct{})}
	s.wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.tick()
			}
		}
	})
	return s
}

// tick holds the ports of dead components while down, and starts them again while up.
func (s *Supervisor) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range supervised {
		c, err := s.o.component(s.name, name)
		if err != nil || c.running() {
			continue
		}
		if s.down {
			s.hold(c)
			continue
		}
		s.release(name)
		_ = c.start()
	}
}

// hold reserves the component's port if it is not held yet (callers hold s.mu).
func (s *Supervisor) hold(c component) {
	if s.held[c.Name] != nil {
		return
	}
	port, err := strconv.Atoi(c.port())
	if err != nil {
		return
	}
	if r, err := reservePort(port); err == nil {
		s.held[c.Name] = r
	}
}

// release frees the component's port (callers hold s.mu).
func (s *Supervisor) release(name string) {
	if r := s.held[name]; r != nil {
		r.close()
		delete(s.held, name)
	}
}

// reservedPort is a TCP port bound and never listened on: no other process can bind it (the
// socket does not allow address reuse), and a client connecting is refused.
type reservedPort struct{ fd int }

// reservePort binds port on every address, IPv4 and IPv6 (IPv4 only where the machine has no
// IPv6).
func reservePort(port int) (*reservedPort, error) {
	fd, err := syscall.Socket(syscall.AF_INET6, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return reservePort4(port)
	}
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY, 0); err != nil {
		_ = syscall.Close(fd)
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet6{Port: port}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("reserving port %d: %w", port, err)
	}
	return &reservedPort{fd: fd}, nil
}

func reservePort4(port int) (*reservedPort, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("reserving port %d: %w", port, err)
	}
	return &reservedPort{fd: fd}, nil
}

func (r *reservedPort) close() { _ = syscall.Close(r.fd) }

// port is the component's serving port, from its flags.
func (c component) port() string {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			return v
		}
	}
	return ""
}

// StopAPIServer kills the API server (StopAPIServer) and keeps the cluster down until
// StartAPIServer: its port, and those of the components that exit meanwhile, stay bound.
func (s *Supervisor) StopAPIServer(ctx context.Context) error {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	if err := StopAPIServer(ctx, s.o, s.name); err != nil {
		return err
	}
	c, err := s.o.component(s.name, "kube-apiserver")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold(c)
	return nil
}

// StartAPIServer starts the API server again and returns once it answers; the supervisor starts
// the other components again as they need it.
func (s *Supervisor) StartAPIServer(ctx context.Context) error {
	c, err := s.o.component(s.name, "kube-apiserver")
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.down = false
	s.release(c.Name)
	if !c.running() {
		if err := c.start(); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("starting kube-apiserver of %q: %w", s.name, err)
		}
	}
	s.mu.Unlock()
	cl := Cluster{Name: s.name, KubeconfigPath: s.o.kubeconfigPath(s.name)}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := reachable(ctx, cl)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver of %q not answering 60s after restart: %w", s.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Down tells whether the API server is stopped on purpose.
func (s *Supervisor) Down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// Close stops supervising and releases every held port.
func (s *Supervisor) Close() {
	close(s.done)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.held {
		s.release(name)
	}
}
