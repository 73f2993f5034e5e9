package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/localfleet"
)

const (
	// leaseName is the hub's leader Lease (cmd/hub).
	leaseName = "urutau-fleet-hub-lock"
	// acquiredLease is what a hub logs when it becomes the leader (client-go leader election).
	acquiredLease = "Successfully acquired lease"
	// webhookConfig is the ValidatingWebhookConfiguration localfleet registers.
	webhookConfig = "urutau-fleet-local"
)

// hubs runs the two hub processes of the chaos fleet, both with leader election, like two
// replicas of a Deployment: the webhook configuration points at a running one (as a Service's
// endpoints follow ready pods).
type hubs struct {
	lf   *localfleet.Fleet
	hub  client.Client
	cmds [2]*exec.Cmd
	port [2]int
	// logFrom is the size of each hub's log when it was last started: what it logged since.
	logFrom [2]int64
}

func hubName(i int) string { return "hub-" + strconv.Itoa(i) }

// running tells whether hub i is alive (not killed, not exited on its own).
func (h *hubs) running(i int) bool {
	c := h.cmds[i]
	return c != nil && c.Process != nil && localfleet.ProcessAlive(c.Process.Pid)
}

func (h *hubs) state() [2]bool { return [2]bool{h.running(0), h.running(1)} }

// start starts hub i if it is not running, on the webhook port the API server calls when no
// other hub holds it, and points the webhook at a running hub.
func (h *hubs) start(ctx context.Context, i int) error {
	if h.running(i) {
		return nil
	}
	if h.cmds[i] != nil {
		_ = h.lf.KillExtraHub(hubName(i), h.cmds[i])
		h.cmds[i] = nil
	}
	port := h.lf.WebhookPort()
	if other := 1 - i; h.running(other) && h.port[other] == port {
		var err error
		if port, err = freePort(); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(h.lf.ExtraHubLog(hubName(i))); err == nil {
		h.logFrom[i] = fi.Size()
	}
	cmd, err := h.lf.StartExtraHub(ctx, hubName(i), port)
	if err != nil {
		return err
	}
	h.cmds[i], h.port[i] = cmd, port
	return h.pointWebhook(ctx)
}

// leads tells whether hub i became the leader since it was started.
func (h *hubs) leads(i int) bool {
	if !h.running(i) {
		return false
	}
	f, err := os.Open(h.lf.ExtraHubLog(hubName(i)))
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(h.logFrom[i], 0); err != nil {
		return false
	}
	raw := make([]byte, 4<<20)
	n, _ := f.Read(raw)
	return strings.Contains(string(raw[:n]), acquiredLease)
}

// kill SIGKILLs hub i. When it led, its Lease is removed: the next replica takes over at once
// rather than after the lease duration (15 s), which only fast-forwards the wait.
func (h *hubs) kill(ctx context.Context, i int) error {
	if h.cmds[i] == nil {
		return nil
	}
	led := h.leads(i)
	err := h.lf.KillExtraHub(hubName(i), h.cmds[i])
	h.cmds[i] = nil
	if led {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: localfleet.HubNamespace, Name: leaseName}}
		if derr := h.hub.Delete(ctx, l); derr != nil && !apierrors.IsNotFound(derr) && err == nil {
			err = derr
		}
	}
	if perr := h.pointWebhook(ctx); perr != nil && err == nil {
		err = perr
	}
	return err
}

// freeze stops hub i (SIGSTOP) for at least d, and until the other replica holds the leader
// Lease (at most takeoverWait), then lets it go on (SIGCONT): for a moment two replicas believe
// they lead. A replica whose Lease was taken exits when it sees that; one that has not left
// within exitWait is killed (its Lease is the other's now, and stays). It is then started again,
// as a Deployment restarts a container that exited, and the webhook points at a running hub.
// An error says the other replica never took over: the freeze tested nothing.
func (h *hubs) freeze(ctx context.Context, i int, d time.Duration) error {
	const takeoverWait, exitWait = 60 * time.Second, 30 * time.Second
	before := h.holder(ctx)
	if before == "" {
		return fmt.Errorf("hub-%d not frozen: the leader Lease could not be read", i)
	}
	p := h.cmds[i].Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	start := time.Now()
	sleep(ctx, d)
	// A Lease that cannot be read ("") is no takeover.
	cur := h.holder(ctx)
	for time.Since(start) < takeoverWait && ctx.Err() == nil && (cur == "" || cur == before) {
		time.Sleep(200 * time.Millisecond)
		cur = h.holder(ctx)
	}
	taken := cur != "" && cur != before
	// Never leave it stopped, whatever happened to ctx.
	if err := p.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	for deadline := time.Now().Add(exitWait); taken && h.running(i) && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
	}
	if taken && h.running(i) {
		_ = h.lf.KillExtraHub(hubName(i), h.cmds[i])
	}
	if !h.running(i) {
		if err := h.start(ctx, i); err != nil {
			return err
		}
	}
	if !taken {
		return fmt.Errorf("hub-%d was frozen for %s and the other replica did not take its leader Lease", i, time.Since(start).Round(time.Second))
	}
	return nil
}

// holder is the holder of the hub's leader Lease, "" when it cannot be read.
func (h *hubs) holder(ctx context.Context) string {
	l := &coordinationv1.Lease{}
	if err := h.hub.Get(ctx, client.ObjectKey{Namespace: localfleet.HubNamespace, Name: leaseName}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// dumpStacks has every running hub print its goroutines to its log (SIGQUIT: the Go runtime
// writes every stack and exits), then kills it as kill does. Called when a history does not
// settle: a reconcile that never ends shows there, and nowhere else.
func (h *hubs) dumpStacks(ctx context.Context) error {
	var errs []error
	for i := range 2 {
		if !h.running(i) {
			continue
		}
		if err := h.cmds[i].Process.Signal(syscall.SIGQUIT); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", hubName(i), err))
		}
		for deadline := time.Now().Add(10 * time.Second); h.running(i) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		errs = append(errs, h.kill(ctx, i))
	}
	return errors.Join(errs...)
}

// leader is the hub that leads (-1: none yet).
func (h *hubs) leader() int {
	for i := range 2 {
		if h.leads(i) {
			return i
		}
	}
	return -1
}

// awaitLeader waits until some hub leads.
func (h *hubs) awaitLeader(ctx context.Context, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if l := h.leader(); l >= 0 {
			return l
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1
}

// pointWebhook points the webhook at a running hub (the leader's port first); with none running
// it is left as it is and admission fails, as with a Service without endpoints.
func (h *hubs) pointWebhook(ctx context.Context) error {
	target := -1
	for i := range 2 {
		if h.running(i) && (target < 0 || h.leads(i)) {
			target = i
		}
	}
	if target < 0 {
		return nil
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/validate-urutau-io-v1alpha1-cdcpipeline", h.port[target])
	return updateWebhook(ctx, h.hub, func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = &url })
}

// updateWebhook changes the fleet's webhook configuration, retrying conflicts.
func updateWebhook(ctx context.Context, hub client.Client, change func(*admissionregistrationv1.ValidatingWebhook)) error {
	for range 10 {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := hub.Get(ctx, client.ObjectKey{Name: webhookConfig}, vwc); err != nil {
			return err
		}
		for i := range vwc.Webhooks {
			change(&vwc.Webhooks[i])
		}
		err := hub.Update(ctx, vwc)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("updating %s: conflicts", webhookConfig)
}

// bypassWebhook makes the webhook skip pipelines labelled bypassLabel: a create the admission
// front never sees, for the reconciler to hold the rules alone.
func bypassWebhook(ctx context.Context, hub client.Client) error {
	return updateWebhook(ctx, hub, func(w *admissionregistrationv1.ValidatingWebhook) {
		w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: bypassLabel, Operator: metav1.LabelSelectorOpDoesNotExist,
		}}}
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
