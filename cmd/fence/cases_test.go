package main

import (
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urutau-io/fleet/internal/testenv"
)

// A Lease that exists but is never renewed, or does not exist, starts nothing: the first read is
// only a baseline, however recent its renewTime claims to be.
func TestNeverStartsWithoutRenewal(t *testing.T) {
	ctx := t.Context()
	h := newHub(t)
	if err := h.renewAt(ctx, time.Now().Add(time.Hour)); err != nil { // a renewTime in the future
		t.Fatal(err)
	}
	f := startFence(t, h, direct(t), honours)
	absent := newHub(t)
	absent.name += "-absent"
	g := startFence(t, absent, direct(t), honours)

	time.Sleep(2 * ttl)
	if pid := f.takePid(); pid != 0 {
		t.Fatalf("the command started (pid %d) with no renewal after the fence's first read", pid)
	}
	if pid := g.takePid(); pid != 0 {
		t.Fatalf("the command started (pid %d) with no Lease at all", pid)
	}

	// One renewal: it starts, and stops ttl after that renewal.
	if err := h.renewAt(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	ack := h.lastAck
	h.mu.Unlock()
	pid := f.waitStarted(t, 2*poll+slack)
	t.Logf("started %v after the renewal was acknowledged", time.Since(ack).Round(time.Millisecond))
	assertStoppedWithin(t, "one renewal", ack, waitDead(t, pid, ttl+grace+5*time.Second), ttl-2*poll-time.Second, ttl)
}

// Renewals stop: the command stops within ttl of the last one, and starts again on the next.
func TestStopsWhenRenewalsStop(t *testing.T) {
	ctx := t.Context()
	h := newHub(t)
	h.renewEvery(ctx, 500*time.Millisecond, wallNow)
	f := startFence(t, h, direct(t), honours)
	pid := f.waitStarted(t, 2*time.Second+slack)
	time.Sleep(2 * ttl) // renewals keep it running past its ttl
	if !alive(pid) {
		t.Fatal("the command stopped while renewals were arriving")
	}
	ack := h.stopRenewing()
	assertStoppedWithin(t, "renewals stopped", ack, waitDead(t, pid, ttl+grace+5*time.Second), ttl-2*poll-time.Second, ttl)
	if !strings.Contains(f.out.String(), "stop: no renewal for ttl") {
		t.Fatalf("the fence did not say why it stopped the command:\n%s", f.out)
	}

	time.Sleep(time.Second)
	if p := f.takePid(); p != 0 {
		t.Fatalf("the command started again (pid %d) without a renewal", p)
	}
	h.renewEvery(ctx, 500*time.Millisecond, wallNow)
	again := f.waitStarted(t, 2*time.Second+slack)
	h.stopRenewing()
	if again == pid {
		t.Fatal("the same process: the command was not started again")
	}
}

// A command that ignores SIGTERM is killed grace after its renewal expired.
func TestKillsCommandIgnoringSIGTERM(t *testing.T) {
	ctx := t.Context()
	h := newHub(t)
	h.renewEvery(ctx, 500*time.Millisecond, wallNow)
	f := startFence(t, h, direct(t), ignoresTERM)
	pid := f.waitStarted(t, 2*time.Second+slack)
	time.Sleep(ttl)
	ack := h.stopRenewing()
	assertStoppedWithin(t, "SIGTERM ignored", ack, waitDead(t, pid, ttl+grace+5*time.Second), ttl+grace-2*poll-time.Second, ttl+grace)
	if !strings.Contains(f.out.String(), "kill:") {
		t.Fatalf("the fence did not say it killed the command:\n%s", f.out)
	}
}

// The hub's renewTime is its own wall clock: stepped years ahead or back, it neither keeps the
// command running nor stops it. Only the arrival of renewals counts.
func TestRenewTimeIsNotAClock(t *testing.T) {
	ctx := t.Context()
	h := newHub(t)
	jumps := func(i int) time.Time {
		switch i % 3 {
		case 0:
			return time.Date(2099, 1, 1, 0, 0, 0, i, time.UTC)
		case 1:
			return time.Date(1971, 1, 1, 0, 0, 0, i, time.UTC)
		}
		return time.Now().Add(-time.Duration(i) * time.Hour)
	}
	h.renewEvery(ctx, 500*time.Millisecond, jumps)
	f := startFence(t, h, direct(t), honours)
	pid := f.waitStarted(t, 2*time.Second+slack)
	time.Sleep(2 * ttl)
	if !alive(pid) {
		t.Fatal("renewTimes in the past stopped the command while renewals were arriving")
	}
	// The last renewal claims to be valid until 2099 and beyond: it still stops within ttl.
	h.stop()
	<-h.done
	if err := h.renewAt(ctx, time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	ack := h.lastAck
	h.mu.Unlock()
	assertStoppedWithin(t, "renewTime in 2999", ack, waitDead(t, pid, ttl+grace+5*time.Second), ttl-2*poll-time.Second, ttl)
}

// The pod loses its API server while the hub goes on renewing (the path from the pod is cut, not
// the member): a proxy that hangs, then one that refuses. The command stops within ttl of the cut
// (no renewal written after it can have been seen), although renewals continue.
func TestStopsWhenAPIServerUnreachableFromPod(t *testing.T) {
	for _, cut := range []string{"hangs", "refuses"} {
		t.Run(cut, func(t *testing.T) {
			ctx := t.Context()
			h := newHub(t)
			u, err := url.Parse(member.Config.Host)
			if err != nil {
				t.Fatal(err)
			}
			proxy, err := testenv.NewProxy(u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = proxy.Close() }()
			h.renewEvery(ctx, 500*time.Millisecond, wallNow)
			defer h.stopRenewing()
			f := startFence(t, h, kubeconfigFor(t, member.Config, "https://"+proxy.Addr()), honours)
			pid := f.waitStarted(t, 2*time.Second+slack)
			time.Sleep(ttl)
			at := time.Now()
			if cut == "hangs" {
				proxy.Hang()
			} else {
				_ = proxy.Close()
			}
			assertStoppedWithin(t, "proxy "+cut, at, waitDead(t, pid, ttl+grace+5*time.Second), ttl-2*poll-time.Second, ttl)
			if cut == "hangs" {
				proxy.Resume()
				f.waitStarted(t, 2*time.Second+slack) // renewals seen again: it runs again
			}
		})
	}
}

// The member's API server is killed: nobody can renew, and the pod cannot read. The command
// stops within ttl of the last acknowledged renewal, and runs again once the server is back.
func TestStopsWhenAPIServerKilled(t *testing.T) {
	ctx := t.Context()
	h := newHub(t)
	h.renewEvery(ctx, 500*time.Millisecond, wallNow)
	f := startFence(t, h, direct(t), honours)
	pid := f.waitStarted(t, 2*time.Second+slack)
	time.Sleep(ttl)
	if err := member.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = member.StartAPIServer()
		}
	}()
	ack := h.stopRenewing()
	assertStoppedWithin(t, "API server killed", ack, waitDead(t, pid, ttl+grace+10*time.Second), 0, ttl)
	if err := member.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	h.renewEvery(ctx, 500*time.Millisecond, wallNow)
	defer h.stopRenewing()
	f.waitStarted(t, 30*time.Second)
}

// Signals reach the command; SIGTERM to the fence (the pod stopping) ends both, with the
// command's status.
func TestForwardsSignals(t *testing.T) {
	ctx := t.Context()
	h := newHub(t)
	h.renewEvery(ctx, 500*time.Millisecond, wallNow)
	defer h.stopRenewing()
	f := startFence(t, h, direct(t), `trap 'echo got-usr1' USR1; echo $$ > "$PIDFILE"; while :; do sleep 0.1; done`)
	pid := f.waitStarted(t, 2*time.Second+slack)
	if err := f.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, func() bool { return strings.Contains(f.out.String(), "got-usr1") }, "SIGUSR1 to reach the command")
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the fence did not exit after SIGTERM")
	}
	if alive(pid) {
		t.Fatal("the command outlived the fence")
	}
	if code := exitCode(f.err); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit status %d (%v), want %d: the command's, killed by SIGTERM", code, f.err, 128+int(syscall.SIGTERM))
	}
}

// The command exits by itself: the fence exits with its status (the container restarts, as it
// would without a fence).
func TestExitsWithTheCommand(t *testing.T) {
	ctx := t.Context()
	h := newHub(t)
	h.renewEvery(ctx, 500*time.Millisecond, wallNow)
	defer h.stopRenewing()
	f := startFence(t, h, direct(t), `echo $$ > "$PIDFILE"; sleep 0.5; exit 7`)
	f.waitStarted(t, 2*time.Second+slack)
	select {
	case <-f.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the fence did not exit with its command")
	}
	if code := exitCode(f.err); code != 7 {
		t.Fatalf("exit status %d (%v), want 7", code, f.err)
	}
}

// A fence that is killed (not as PID 1, where the container ends with it) takes its command along.
func TestCommandDiesWithTheFence(t *testing.T) {
	ctx := t.Context()
	h := newHub(t)
	h.renewEvery(ctx, 500*time.Millisecond, wallNow)
	defer h.stopRenewing()
	f := startFence(t, h, direct(t), honours)
	pid := f.waitStarted(t, 2*time.Second+slack)
	_ = f.cmd.Process.Kill()
	waitDead(t, pid, 5*time.Second)
}

// The init container's job: the fence copies itself, and the copy runs.
func TestInstall(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "fence")
	if out, err := exec.Command(fenceBin, "install", dest).CombinedOutput(); err != nil {
		t.Fatalf("fence install: %v: %s", err, out)
	}
	st, err := os.Stat(dest)
	if err != nil || st.Mode().Perm() != 0o555 {
		t.Fatalf("installed: %v, mode %v; want 0555", err, st.Mode())
	}
	out, err := exec.Command(dest, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "fence ") {
		t.Fatalf("the copy does not run: %v: %s", err, out)
	}
}

func waitFor(t *testing.T, within time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("waited %v for %s", within, what)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
