package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/localfleet"
)

// The fleet every spec shares: the hub and two members. Specs run in order (some restart the hub
// or a member) and each works in its own namespace.
const (
	memberA      = "member-a"
	memberB      = "member-b"
	sourceSecret = "faults-source"
	image        = "ghcr.io/urutau-io/urutau:faults"
	// memberTimeout and tombstoneGrace are the hub's --member-timeout and --tombstone-grace.
	memberTimeout  = 5 * time.Second
	tombstoneGrace = 20 * time.Second
	// retryInterval is the hub's fixed retry of unreachable members (fleet.DefaultRetryInterval;
	// the hub has no flag for it).
	retryInterval = 30 * time.Second
	// keepEnv=1 leaves the fleet running after the suite, for inspection.
	keepEnv = "FAULTS_KEEP"
)

// Namespaces, one per spec, present on the hub and in every member.
const (
	nsMemberRestart = "faults-member-restart"
	nsHubRestart    = "faults-hub-restart"
	nsLeader        = "faults-leader"
	nsBadSecret     = "faults-bad-secret"
	nsRBAC          = "faults-rbac"
)

var (
	lf        *localfleet.Fleet
	workDir   string
	fleetOpts localfleet.Options
	hub       client.Client
	members   = map[string]client.Client{}
)

func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault suite: starts a local fleet of real control planes (run without -short)")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		// Fail loudly: a silently skipped suite is a suite that does not run in CI.
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test-faults`, or export KUBEBUILDER_ASSETS=$(hack/control-plane.sh print-dir)")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "urutau fleet faults")
	if upErr != nil {
		// Repeated last, where a CI log's tail shows it: the suite failed before any spec ran.
		t.Logf("the local fleet did not come up: %v", upErr)
	}
}

// upErr is why localfleet.Up failed in BeforeSuite, if it did.
var upErr error

var _ = BeforeSuite(func(ctx SpecContext) {
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	root, err := filepath.Abs("../..")
	Expect(err).NotTo(HaveOccurred())
	work, err := os.MkdirTemp("", "urutau-faults-")
	Expect(err).NotTo(HaveOccurred())
	workDir = work

	By("building the hub")
	hubBinary := filepath.Join(work, "hub")
	build := exec.CommandContext(ctx, "go", "build", "-o", hubBinary, "./cmd/hub")
	build.Dir = root
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./cmd/hub: %s", out)

	By("starting the local fleet: hub, member-a, member-b")
	fleetOpts = localfleet.Options{BinDir: bin, WorkDir: filepath.Join(work, "fleet"),
		Log: func(format string, args ...any) { GinkgoWriter.Printf(format+"\n", args...) }}
	start := time.Now()
	lf, err = localfleet.Up(ctx, localfleet.FleetOptions{
		Options:   fleetOpts,
		RepoRoot:  root,
		HubBinary: hubBinary,
		HubArgs: []string{
			"--coordinator-image=" + image,
			"--leader-elect=false",
			"--metrics-bind-address=0",
			"--health-probe-bind-address=0",
			"--member-timeout=" + memberTimeout.String(),
			"--tombstone-grace=" + tombstoneGrace.String(),
		},
		Members:    []localfleet.Member{{Name: memberA}, {Name: memberB}},
		Namespaces: []string{nsMemberRestart, nsHubRestart, nsLeader, nsBadSecret, nsRBAC},
	})
	if lf == nil && err != nil {
		// Up failed half way: stop whatever it started.
		_ = localfleet.Teardown(context.WithoutCancel(ctx), localfleet.FleetOptions{Options: fleetOpts,
			Members: []localfleet.Member{{Name: memberA}, {Name: memberB}}})
	}
	upErr = err
	Expect(err).NotTo(HaveOccurred())
	logf("fleet up in %s (hub log %s)", time.Since(start).Round(100*time.Millisecond), lf.HubLog())
	hub, err = lf.Client("hub")
	Expect(err).NotTo(HaveOccurred())
	for _, m := range []string{memberA, memberB} {
		members[m], err = lf.Client(m)
		Expect(err).NotTo(HaveOccurred())
		for _, ns := range []string{nsMemberRestart, nsHubRestart, nsLeader, nsBadSecret, nsRBAC} {
			Expect(ensureSourceSecret(ctx, members[m], ns, m)).To(Succeed())
		}
	}
}, NodeTimeout(10*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if lf == nil {
		return
	}
	if os.Getenv(keepEnv) == "1" {
		logf("%s=1: leaving the local fleet running; hub log %s", keepEnv, lf.HubLog())
		return
	}
	Expect(lf.Down(ctx)).To(Succeed())
	Expect(os.RemoveAll(workDir)).To(Succeed())
}, NodeTimeout(3*time.Minute))

// On failure, the tail of every hub log goes to the report: the hub is a child process whose
// work dir the suite removes.
var _ = AfterEach(func() {
	if lf == nil || !CurrentSpecReport().Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(lf.HubLog()), "hub*.log"))
	for _, l := range logs {
		raw, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(string(raw), "\n")
		GinkgoWriter.Printf("=== last lines of %s\n%s\n", l, strings.Join(lines[max(0, len(lines)-120):], "\n"))
	}
})

func ensureSourceSecret(ctx context.Context, c client.Client, ns, member string) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sourceSecret,
			Labels: map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}},
		StringData: map[string]string{"uri": "mysql://faults@db." + member + ".example:3306/shop"},
	}
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// logf writes a measured figure to the spec's output (shown with -v, and on failure).
func logf(format string, args ...any) {
	GinkgoWriter.Printf(format+"\n", args...)
	AddReportEntry(fmt.Sprintf(format, args...))
}
