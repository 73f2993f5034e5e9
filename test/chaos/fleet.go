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
	"github.com/urutau-io/fleet/internal/tenancy"
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
	// orphanScanInterval: how often the hub scans each member for strays (objects of a live
	// pipeline where no entry names them, pods no StatefulSet controls); the health check that
	// runs the scan comes every --member-timeout.
	orphanScanInterval = 3 * time.Second
	// secretRecheckInterval: how often the hub reads again the source Secrets of placed
	// pipelines (a repointed database is acted on within it).
	secretRecheckInterval = 5 * time.Second
	// The fence of fenced placements (--fence-ttl, --fence-grace, --fence-margin): as short as
	// the hub allows (ttl at least 4 s), as the fleet specs run it, so that a failover completes
	// within a history.
	fenceTTL    = 4 * time.Second
	fenceGrace  = 2 * time.Second
	fenceMargin = time.Second
	// healthInterval is the hub's --member-health-interval (its default: --member-timeout).
	healthInterval = memberTimeout
)

// fenceImage is the hub's --fence-image (kwok runs anything).
const fenceImage = "ghcr.io/urutau-io/urutau-fleet-hub:chaos"

// stopBound is I5's bound: a reader a person made (a hand scale, a pod made by hand, a restored
// StatefulSet) or one left in a member the placement left is gone within it, not counting the
// time the hub could not act there. Two orphan scans (a stray is one when two scans in a row
// find it) each up to a health check late, one --member-timeout, one wait interval, one retry
// interval (a member request that timed out on this loaded machine has the member retried after
// it) and 10 s for a hub just started or taking the lead: 60 s.
const stopBound = 2*(orphanScanInterval+memberTimeout) + memberTimeout + waitInterval + retryInterval + 10*time.Second

// handSettle is how long a generated history that made a reader by hand waits before it heals
// and deletes everything, so that I5 judges most such readers rather than the deletion.
const handSettle = 30 * time.Second

// repointBound is how long two members that start reading one database (a repointed source
// Secret) may both keep their reader: one --secret-recheck-interval, one --member-timeout and
// 10 s (docs/architecture.md, the stated limit of the identity rule).
const repointBound = secretRecheckInterval + memberTimeout + 10*time.Second

// memberRecover is how long after a member answers again, or joins the inventory again, the hub
// may take to act there: its retry interval, and the member cache's relist backoff (client-go
// retries a failed LIST/WATCH after up to 60 s).
const memberRecover = 60 * time.Second

// failoverSlack is what I6 allows beyond the threshold and the fence's bound for a failover
// placement to leave a lost member: the hub notices the loss one health check (and its
// --member-timeout) late, the reconcile that decides comes within one wait interval, and 10 s
// cover a busy hub and its backoff after a conflict.
const failoverSlack = healthInterval + memberTimeout + waitInterval + 10*time.Second

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
			"--orphan-scan-interval=" + orphanScanInterval.String(),
			"--secret-recheck-interval=" + secretRecheckInterval.String(),
			"--fence-image=" + fenceImage,
			"--fence-ttl=" + fenceTTL.String(),
			"--fence-grace=" + fenceGrace.String(),
			"--fence-margin=" + fenceMargin.String(),
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
		bounds: Bounds{TombstoneGrace: tombstoneGrace, MemberTimeout: memberTimeout, DeleteSlack: deleteSlack,
			StopBound: stopBound, RepointBound: repointBound, MemberRecover: memberRecover,
			FenceTTL: fenceTTL, FenceGrace: fenceGrace, FenceMargin: fenceMargin, FailoverSlack: failoverSlack},
		logf: c.Logf, entries: map[string]*corev1.Secret{}, proxies: map[string]*proxy{}}
	e.hubs = &hubs{lf: f.lf, hub: hub}
	f.env = e
	for _, m := range Members {
		s, err := e.throughProxy(ctx, m)
		if err != nil {
			return err
		}
		e.entries[m] = s
	}
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
		for _, p := range f.env.proxies {
			p.close()
		}
		if f.env.holder != nil {
			f.env.holder.close()
		}
	}
	return localfleet.Teardown(ctx, f.fo)
}

// HubLogs are the hub processes' log files.
func (f *Fleet) HubLogs() []string {
	return []string{f.lf.ExtraHubLog(hubName(0)), f.lf.ExtraHubLog(hubName(1))}
}

// reset brings the fleet to the state every history starts from: every member up with its
// kubelet running and in the inventory, no selector label, hub-0 alone and leading.
func (f *Fleet) reset(ctx context.Context) error {
	e := f.env
	errs := append(e.membersUp(ctx), e.inventoryBack(ctx, true)...)
	errs = append(errs, e.pathsOpen()...)
	errs = append(errs, e.webhooksGone(ctx)...)
	errs = append(errs, e.aliasesGone(ctx)...)
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
			StringData: map[string]string{"uri": sourceURI(m, "")}}
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
			Labels: map[string]string{urutauv1alpha1.LabelFleetManaged: "true", tenancy.LabelPodSecurityEnforce: tenancy.PodSecurityBaseline}}})
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
