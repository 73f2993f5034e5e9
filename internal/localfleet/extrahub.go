package localfleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Extra hub processes, for fault tests that run several hub replicas (leader election): each has
// its own webhook port and log file and shares the fleet's serving certificate. Teardown stops
// them too (their pid files are hub-<name>.pid in the work dir).

// WebhookPort is the port of the fleet's own hub webhook, the one the hub API server calls.
func (f *Fleet) WebhookPort() int { return f.port }

// HubArgs are the flags StartHub gives the hub process (connection, provider, webhook and the
// FleetOptions' HubArgs), for a caller that runs a hub process itself.
func (f *Fleet) HubArgs(port int) []string {
	return append([]string{
		"--kubeconfig=" + f.Hub.KubeconfigPath,
		"--cluster-provider=kubeconfig",
		"--cluster-provider-namespace=" + HubNamespace,
		"--webhook-cert-dir=" + f.certDir,
		"--webhook-port=" + strconv.Itoa(port),
	}, f.opts.HubArgs...)
}

// ExtraHubLog is the log file of the extra hub process name.
func (f *Fleet) ExtraHubLog(name string) string {
	return filepath.Join(f.opts.WorkDir, "hub-"+name+".log")
}

// StartExtraHub starts another hub process named name (for its log and pid files) with the
// fleet's flags, then args (later flags win, e.g. --leader-elect=true), serving its webhook on
// port (0: a free port), and waits until its webhook listens. The caller kills it (SIGKILL:
// cmd.Process.Kill, then cmd.Wait); Teardown kills whatever is left.
func (f *Fleet) StartExtraHub(ctx context.Context, name string, port int, args ...string) (*exec.Cmd, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("extra hub name %q: want a plain, non-empty name", name)
	}
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	logFile, err := os.OpenFile(f.ExtraHubLog(name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(f.opts.HubBinary, append(f.HubArgs(port), args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(f.opts.WorkDir, "hub-"+name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	f.opts.logf("extra hub %s started (pid %d, webhook port %d, log %s)", name, cmd.Process.Pid, port, f.ExtraHubLog(name))
	if err := waitForPort(ctx, port, 60*time.Second); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("extra hub %s: the webhook did not come up (see %s): %w", name, f.ExtraHubLog(name), err)
	}
	return cmd, nil
}

// HubRunning tells whether the fleet's hub process (StartHub) is alive: started, not killed, and
// not exited on its own (a crashed hub that was not reaped yet is a zombie, which counts as dead).
func (f *Fleet) HubRunning() bool {
	if f.hubCmd == nil || f.hubCmd.Process == nil {
		return false
	}
	return ProcessAlive(f.hubCmd.Process.Pid)
}

// ProcessAlive reads the process state from /proc: running and not a zombie.
func ProcessAlive(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ')'.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// KillExtraHub kills the extra hub process name that StartExtraHub returned as cmd without letting
// it finish anything (SIGKILL), as a crash would, reaps it and forgets its pid file.
func (f *Fleet) KillExtraHub(name string, cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	err := cmd.Process.Kill()
	_ = cmd.Wait()
	_ = os.Remove(filepath.Join(f.opts.WorkDir, "hub-"+name+".pid"))
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	return err
}
