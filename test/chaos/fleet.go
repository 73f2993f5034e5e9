package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/localfleet"
)

// The hub settings of the chaos fleet: short enough that tombstones and retries happen within a
// history.
const (
	memberTimeout  = 3 * time.Second
	tombstoneGrace = 10 * time.Second
	// waitInterval is the hub's fixed requeue while a member drains (fleet.DefaultWaitInterval).
	waitInterval = 5 * time.Second
	// retryInterval is the hub's fixed retry of unreachable members and tombstones
	// (fleet.DefaultRetryInterval; it has no flag).
	retryInterval = 30 * time.Second
)

// deleteSlack is I4's bound beyond --tombstone-grace: once the grace is over, the next
// deletion pass comes within one wait interval, takes at most --member-timeout per member (they
// run concurrently), writes the tombstones and lets the CR go; 10 s more cover a hub that was
// just started or took the lead (cache sync, leader election retry period 2 s) and the
// controller's backoff after a conflict.
const deleteSlack = memberTimeout + waitInterval + 10*time.Second

// FleetConfig says where the chaos fleet's binaries and state are.
type FleetConfig struct {
	// BinDir holds the control plane (KUBEBUILDER_ASSETS).
	BinDir string
	// RepoRoot is the repository (CRDs, cmd/hub).
	RepoRoot string
	// WorkDir holds the clusters and the hub binary.
	WorkDir string
	Logf    func(format string, args ...any)
}

// Fleet is a running chaos fleet: a hub cluster, three kwok members and two hub processes.
type Fleet struct {
	env *env
	lf  *localfleet.Fleet
	fo  localfleet.FleetOptions
}

func (c FleetConfig) fleetOptions(hubBinary string) localfleet.FleetOptions {
	var ms []localfleet.Member
	for _, m := range Members {
		ms = append(ms, localfleet.Member{Name: m})
	}
	return localfleet.FleetOptions{
		Options:   localfleet.Options{BinDir: c.BinDir, WorkDir: filepath.Join(c.WorkDir, "fleet"), Log: c.Logf},
		RepoRoot:  c.RepoRoot,
		HubBinary: hubBinary,
		HubArgs: []string{
			"--coordinator-image=" + image,
			"--leader-elect=true",
			"--metrics-bind-address=0",
			"--health-probe-bind-address=0",
			"--member-timeout=" + memberTimeout.String(),
			"--tombstone-grace=" + tombstoneGrace.String(),
		},
		Members: ms,
	}
}

// StartFleet builds the hub, starts the clusters and the first hub process, installs every CRD
// of config/hub (the reader lease's too, once it exists) and the webhook bypass.
func StartFleet(ctx context.Context, c FleetConfig) (*Fleet, error) {
	hubBinary := filepath.Join(c.WorkDir, "hub")
	build := exec.CommandContext(ctx, "go", "build", "-o", hubBinary, "./cmd/hub")
	build.Dir = c.RepoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/hub: %w: %s", err, out)
	}
	fo := c.fleetOptions(hubBinary)
	lf, err := localfleet.Up(ctx, fo)
	if err != nil {
		_ = localfleet.Teardown(context.WithoutCancel(ctx), fo)
		return nil, err
	}
	f := &Fleet{lf: lf, fo: fo}
	if err := f.wire(ctx, c); err != nil {
		_ = f.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return f, nil
}

func (f *Fleet) wire(ctx context.Context, c FleetConfig) error {
	hub, err := f.lf.Client("hub")
	if err != nil {
		return err
	}
	crds, _ := filepath.Glob(filepath.Join(c.RepoRoot, "config/hub/crd/bases/*.yaml"))
	if err := localfleet.ApplyFiles(ctx, hub, crds...); err != nil {
		return err
	}
	e := &env{opts: f.fo.Options, hub: hub, sup: map[string]*localfleet.Supervisor{}, members: map[string]client.Client{}, dyn: map[string]dynamic.Interface{},
		bounds: Bounds{TombstoneGrace: tombstoneGrace, MemberTimeout: memberTimeout, DeleteSlack: deleteSlack}, logf: c.Logf}
	e.hubs = &hubs{lf: f.lf, hub: hub}
	f.env = e
	for _, cl := range append([]localfleet.Cluster{f.lf.Hub}, f.lf.Members...) {
		if e.dyn[cl.Name], err = dynamicFor(cl.KubeconfigPath); err != nil {
			return err
		}
		if cl.Name != hubCluster {
			if e.members[cl.Name], err = f.lf.Client(cl.Name); err != nil {
				return err
			}
			e.sup[cl.Name] = localfleet.Supervise(e.opts, cl.Name)
		}
	}
	// The hub localfleet started is replaced by the chaos suite's replica hub-0.
	if err := f.lf.KillHub(); err != nil {
		return err
	}
	if err := hub.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: localfleet.HubNamespace, Name: leaseName}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := bypassWebhook(ctx, hub); err != nil {
		return err
	}
	return f.reset(ctx)
}

// Stop tears the fleet down (supervisors first: they would start again what teardown stops).
func (f *Fleet) Stop(ctx context.Context) error {
	if f.env != nil {
		for _, s := range f.env.sup {
			s.Close()
		}
	}
	return localfleet.Teardown(ctx, f.fo)
}

// HubLogs are the hub processes' log files.
func (f *Fleet) HubLogs() []string {
	return []string{f.lf.ExtraHubLog(hubName(0)), f.lf.ExtraHubLog(hubName(1))}
}

// reset brings the fleet to the state every history starts from: every member up with its
// kubelet running, hub-0 alone and leading.
func (f *Fleet) reset(ctx context.Context) error {
	e := f.env
	errs := e.membersUp(ctx)
	if err := e.hubs.kill(ctx, 1); err != nil {
		errs = append(errs, err)
	}
	if err := e.hubs.start(ctx, 0); err != nil {
		errs = append(errs, err)
	}
	if e.hubs.awaitLeader(ctx, 60*time.Second) != 0 {
		errs = append(errs, errors.New("hub-0 did not take the lead within 60s"))
	}
	return errors.Join(errs...)
}

// prepare creates the history's namespace on the hub and in every member, with the source
// Secret the coordinator needs, both opened to the fleet as a member's platform team would.
func (e *env) prepare(ctx context.Context, ns string) error {
	if err := ensureNamespace(ctx, e.hub, ns); err != nil {
		return err
	}
	for _, m := range Members {
		c := e.members[m]
		if err := ensureNamespace(ctx, c, ns); err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sourceSecret,
			Labels: map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}},
			StringData: map[string]string{"uri": "mysql://chaos@db." + m + ".example:3306/shop"}}
		if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: %w", m, err)
		}
	}
	return nil
}

// cleanup removes the history's namespaces (best effort: what a broken history left is gone
// with them).
func (e *env) cleanup(ctx context.Context, ns string) {
	for _, c := range append([]client.Client{e.hub}, membersOf(e)...) {
		_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
}

func membersOf(e *env) []client.Client {
	var out []client.Client
	for _, m := range Members {
		out = append(out, e.members[m])
	}
	return out
}

// ensureNamespace creates a history's namespace, opened to the fleet as a member's platform team
// would (urutau.io/fleet-managed=true; the label means nothing on the hub).
func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	for range 60 {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{urutauv1alpha1.LabelFleetManaged: "true"}}})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("namespace %s: not created", name)
}

// tempDir is where failing histories go when no directory is given.
func tempDir() string { return filepath.Join(os.TempDir(), "urutau-chaos") }

// membersUp starts every member's API server that is down and resumes every kubelet.
func (e *env) membersUp(ctx context.Context) []error {
	var errs []error
	for _, m := range Members {
		if err := localfleet.ResumeKubelet(e.opts, m); err != nil {
			errs = append(errs, err)
		}
		if e.sup[m].Down() {
			if err := e.startMember(ctx, m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}
