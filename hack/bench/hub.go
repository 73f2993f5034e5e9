package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/urutau-io/fleet/internal/fleet"
)

// hubProcess is cmd/hub running as a child process, so its memory is its own.
type hubProcess struct {
	cmd    *exec.Cmd
	logf   *os.File
	exited chan struct{}
	// metricsAddr serves its metrics; pprofAddr its profiles (empty: none).
	metricsAddr, pprofAddr string
}

// startHub runs the hub binary against the hub API server. The kubeconfig is passed in
// $KUBECONFIG, the way a hub in a pod gets its in-cluster config: through controller-runtime's
// config loader (client-side rate limiting off, relying on API priority and fairness), which is
// what production runs. (--kubeconfig=PATH loads the file with client-go's defaults instead: see
// docs/benchmarks.md.)
func startHub(bin, kubeconfig, logPath, metricsAddr string, args ...string) (*hubProcess, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	h := &hubProcess{cmd: cmd, logf: f, exited: make(chan struct{}), metricsAddr: metricsAddr}
	go func() {
		_ = cmd.Wait()
		close(h.exited)
	}()
	return h, nil
}

// waitEngaged waits until the hub has engaged every member (urutau_fleet_member_engaged is 1
// and the provider logged "Successfully engaged manager", which comes once the member's caches
// are ready and every controller watches it) and its controllers run workers.
func (h *hubProcess) waitEngaged(ctx context.Context, members []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-h.exited:
			return fmt.Errorf("hub exited: see %s", h.logf.Name())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		ok, err := h.engagedAll(ctx, members)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("hub did not engage %d members within %s: see %s", len(members), timeout, h.logf.Name())
}

// engagedAll says whether the hub runs workers and has engaged every member.
func (h *hubProcess) engagedAll(ctx context.Context, members []string) (bool, error) {
	b, err := os.ReadFile(h.logf.Name())
	if err != nil || !bytes.Contains(b, []byte("Starting workers")) {
		return false, err
	}
	if len(members) == 0 {
		return true, nil
	}
	engaged, err := hubMetric(ctx, h.metricsAddr, "urutau_fleet_member_engaged", "member")
	if err != nil {
		return false, nil // not serving metrics yet
	}
	for _, m := range members {
		if engaged[m] != 1 || !bytes.Contains(b, []byte(`"msg":"Successfully engaged manager","cluster":"`+m+`"`)) {
			return false, nil
		}
	}
	return true, nil
}

// memory reads VmRSS and VmHWM (peak RSS) of the hub, in KiB.
func (h *hubProcess) memory() (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm, s.Err()
}

// stop sends SIGTERM, then SIGKILL after 10 s.
func (h *hubProcess) stop() {
	defer func() { _ = h.logf.Close() }()
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(10 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
}

// freeLocalAddr is a loopback address with a port free at the time of the call.
func freeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// reconciles reads the hub's controller_runtime_reconcile_total for its pipeline controller, all
// results added up.
func reconciles(ctx context.Context, metricsAddr string) (int, error) {
	n, err := controllerMetric(ctx, metricsAddr, "controller_runtime_reconcile_total")
	return int(n), err
}

// controllerMetric is the value of the hub's metric family for its pipeline controller, all
// series added up (counters and gauges).
func controllerMetric(ctx context.Context, metricsAddr, family string) (float64, error) {
	byController, err := hubMetric(ctx, metricsAddr, family, "controller")
	if err != nil {
		return 0, err
	}
	n, found := byController[fleet.ControllerName]
	if !found {
		return 0, fmt.Errorf("the hub's metrics have no %s for controller %q", family, fleet.ControllerName)
	}
	return n, nil
}

// hubMetric reads the hub's metric family and adds up its series (counters and gauges) by the
// value of label.
func hubMetric(ctx context.Context, metricsAddr, family, label string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the hub's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the hub's metrics: %w", err)
	}
	out := map[string]float64{}
	for _, m := range families[family].GetMetric() {
		if v, ok := labelMap(m)[label]; ok {
			out[v] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out, nil
}

// waitIdle waits until the hub's pipeline controller has nothing queued and no reconcile running,
// twice in a row 200 ms apart.
func waitIdle(ctx context.Context, metricsAddr string, timeout time.Duration) error {
	idle := 0
	for deadline := time.Now().Add(timeout); idle < 2; time.Sleep(200 * time.Millisecond) {
		depth, err := controllerMetric(ctx, metricsAddr, "workqueue_depth")
		if err != nil {
			return err
		}
		active, err := controllerMetric(ctx, metricsAddr, "controller_runtime_active_workers")
		if err != nil {
			return err
		}
		if depth == 0 && active == 0 {
			idle++
		} else {
			idle = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the hub was still busy after %s (%v queued, %v reconciling)", timeout, depth, active)
		}
	}
	return nil
}

// engagements is how many times the hub has finished engaging member: its caches are ready and
// every controller watches it ("Cluster cache is ready" comes before the controllers' watches are
// set up).
func (h *hubProcess) engagements(member string) (int, error) {
	b, err := os.ReadFile(h.logf.Name())
	if err != nil {
		return 0, err
	}
	return bytes.Count(b, []byte(`"msg":"Successfully engaged manager","cluster":"`+member+`"`)), nil
}
