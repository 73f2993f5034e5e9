package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The stand-in as a process: ready once the file is read, not ready from SIGTERM on, gone after
// the drain; and with STANDIN_IGNORE_SIGTERM, still serving after SIGTERM.
func TestProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "urutau-coordinator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(file, []byte("pipeline: orders\nsource:\n  kind: mysql\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("drains then exits", func(t *testing.T) {
		cmd, addr := start(t, bin, file, "STANDIN_DRAIN=1500ms")
		waitStatus(t, addr, http.StatusOK)
		sent := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, addr, http.StatusServiceUnavailable)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit: %v, want 0", err)
		}
		if took := time.Since(sent); took < 1500*time.Millisecond {
			t.Errorf("exited %s after SIGTERM, before its 1.5s drain", took)
		}
	})
	t.Run("ignores SIGTERM", func(t *testing.T) {
		cmd, addr := start(t, bin, file, "STANDIN_IGNORE_SIGTERM=true")
		waitStatus(t, addr, http.StatusOK)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if got := get(addr); got != http.StatusOK {
			t.Errorf("1s after SIGTERM: /readyz %d, want 200 (still serving)", got)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	t.Run("no pipeline file", func(t *testing.T) {
		err := exec.Command(bin, "run", "--file", filepath.Join(dir, "missing.yaml")).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("without its file: %v, want exit 1", err)
		}
	})
}

func start(t *testing.T, bin, file, env string) (*exec.Cmd, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(bin, "run", "--file", file, "--metrics-addr", addr, "--allow-insecure-control-plane")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, addr
}

func get(addr string) int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://%s/readyz", addr))
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func waitStatus(t *testing.T, addr string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for get(addr) != want {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered %d", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
