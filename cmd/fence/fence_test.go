package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/testenv"
)

// These tests run the fence binary against a real API server with real child processes, and act
// as the hub themselves: they write the Lease and note, on their own monotonic clock, when each
// write was acknowledged. The fence must have stopped its command within its bound after the
// last acknowledged renewal it could have seen (the write happened before the acknowledgement).

const (
	ttl   = 3 * time.Second
	grace = 2 * time.Second
	poll  = 200 * time.Millisecond
	// slack is what the measurement itself may add: the fence's loop tick, the process's death,
	// and this test noticing it, on a loaded machine.
	slack = time.Second
	ns    = "default"
)

var (
	fenceBin string
	member   *testenv.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fence-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	fenceBin = filepath.Join(dir, "fence")
	if out, err := exec.Command("go", "build", "-o", fenceBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fence: %v\n%s", err, out)
		return 1
	}
	clusters, err := testenv.Start(context.Background(), "fence")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	member = clusters[0]
	defer func() { _ = member.Stop() }()
	return m.Run()
}

// hub writes one test's Lease as the hub would, and remembers when its last write was
// acknowledged.
type hub struct {
	t    *testing.T
	name string

	mu      sync.Mutex
	lastAck time.Time
	stop    context.CancelFunc
	done    chan struct{}
}

func newHub(t *testing.T) *hub {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	return &hub{t: t, name: name}
}

// renewAt writes the Lease once with renewTime at; it creates the Lease when needed.
func (h *hub) renewAt(ctx context.Context, at time.Time) error {
	c := member.Client
	l := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: h.name}, l)
	mt := metav1.NewMicroTime(at)
	holder := "hub"
	switch {
	case apierrors.IsNotFound(err):
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: h.name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &mt}}
		err = c.Create(ctx, l)
	case err == nil:
		l.Spec.RenewTime, l.Spec.HolderIdentity = &mt, &holder
		err = c.Update(ctx, l)
	}
	if err == nil {
		h.mu.Lock()
		h.lastAck = time.Now()
		h.mu.Unlock()
	}
	return err
}

// renewEvery renews in the background until stopRenewing; clock gives each renewTime.
func (h *hub) renewEvery(ctx context.Context, every time.Duration, clock func(int) time.Time) {
	ctx, h.stop = context.WithCancel(ctx)
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		for i := 0; ctx.Err() == nil; i++ {
			if err := h.renewAt(ctx, clock(i)); err != nil && ctx.Err() == nil {
				h.t.Logf("renewing: %v", err)
			}
			select {
			case <-time.After(every):
			case <-ctx.Done():
			}
		}
	}()
}

// stopRenewing stops the background renewals and returns when the last one was acknowledged.
func (h *hub) stopRenewing() time.Time {
	h.stop()
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastAck
}

func wallNow(int) time.Time { return time.Now() }

// fenced is a fence process and what it runs.
type fenced struct {
	cmd     *exec.Cmd
	pidFile string
	out     *syncBuffer
	exited  chan struct{}
	err     error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// honours is a command that writes its pid and sleeps; SIGTERM ends it.
const honours = `echo $$ > "$PIDFILE"; exec sleep 1000`

// ignoresTERM is a command that writes its pid and ignores SIGTERM (and so does its sleep).
const ignoresTERM = `trap "" TERM; echo $$ > "$PIDFILE"; while :; do sleep 1; done`

// startFence runs the fence with the command script under sh, reading the Lease through kubeconfig.
func startFence(t *testing.T, h *hub, kubeconfig, script string, extra ...string) *fenced {
	t.Helper()
	dir := t.TempDir()
	f := &fenced{pidFile: filepath.Join(dir, "pid"), out: &syncBuffer{}, exited: make(chan struct{})}
	args := append([]string{"--lease", ns + "/" + h.name, "--ttl", ttl.String(), "--grace", grace.String(),
		"--poll", poll.String(), "--request-timeout", "1s", "--kubeconfig", kubeconfig}, extra...)
	args = append(args, "--", "sh", "-c", script)
	f.cmd = exec.Command(fenceBin, args...)
	f.cmd.Env = append(os.Environ(), "PIDFILE="+f.pidFile)
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.out
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		f.err = f.cmd.Wait()
		close(f.exited)
	}()
	t.Cleanup(func() {
		_ = f.cmd.Process.Kill()
		<-f.exited
		if t.Failed() {
			t.Logf("fence output:\n%s", f.out)
		}
	})
	return f
}

// childPid is the pid the current command wrote, 0 when none yet; it removes the file so that a
// restart is seen as a new pid.
func (f *fenced) takePid() int {
	b, err := os.ReadFile(f.pidFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	_ = os.Remove(f.pidFile)
	return pid
}

// waitStarted waits for the command to write its pid.
func (f *fenced) waitStarted(t *testing.T, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if pid := f.takePid(); pid != 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the command did not start within %v", within)
	return 0
}

// alive tells whether pid runs: not gone, not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// waitDead waits for pid to die and returns when it was first seen dead.
func waitDead(t *testing.T, pid int, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d still alive after %v", pid, within)
	return time.Time{}
}

// kubeconfigFor writes a kubeconfig for the member's admin credentials at host.
func kubeconfigFor(t *testing.T, cfg *rest.Config, host string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func direct(t *testing.T) string { return kubeconfigFor(t, member.Config, member.Config.Host) }

// assertStoppedWithin checks that the command died no later than bound after the reference
// instant (the last acknowledged renewal, or the cut), and no earlier than notBefore after it.
func assertStoppedWithin(t *testing.T, what string, ref, dead time.Time, notBefore, bound time.Duration) {
	t.Helper()
	took := dead.Sub(ref)
	t.Logf("%s: the command stopped %v after it (bound %v)", what, took.Round(time.Millisecond), bound)
	if took > bound+slack {
		t.Fatalf("%s: the command ran %v, past its bound %v (+%v measuring slack)", what, took, bound, slack)
	}
	if took < notBefore {
		t.Fatalf("%s: the command stopped after %v, before %v: renewals were arriving", what, took, notBefore)
	}
}
