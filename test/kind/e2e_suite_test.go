package kind

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/localfleet"
)

// Environment knobs. With E2E_HUB_KUBECONFIG set the suite uses existing clusters (the kind
// flow deploys the hub there first); otherwise it starts the local fleet itself.
const (
	envHubKubeconfig     = "E2E_HUB_KUBECONFIG"
	envMemberKubeconfigs = "E2E_MEMBER_KUBECONFIGS" // name=path,name=path
	envRestartCommand    = "E2E_RESTART_MEMBER"     // a command given the member name, e.g. hack/kind-restart.sh
	envKeep              = "E2E_KEEP"               // "1": leave the local fleet running for inspection
	// An image whose coordinator ignores SIGTERM (test/kind/coordinator): set by the kind flow,
	// whose kubelets run processes; the specs that need it run only then.
	envIgnoresSIGTERMImage = "E2E_IGNORES_SIGTERM_IMAGE"
	// The hub's Deployment, namespace/name: set by the kind flow, where the hub runs as one; the
	// fenced spec scales it to zero to stop the fence Lease's renewals.
	envHubDeployment = "E2E_HUB_DEPLOYMENT"
	// Every wait's bound (a Go duration; default 90s). Real kubelets take longer than kwok (a pod
	// is Ready after its startup and readiness probes, 10 s apart), more so on a busy machine:
	// the kind flow passes a longer one. Spec timeouts grow in proportion.
	envTimeout = "E2E_TIMEOUT"
)

// waitTimeout is E2E_TIMEOUT, or 90s.
func waitTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(envTimeout)); err == nil && d > 0 {
		return d
	}
	return 90 * time.Second
}

// specTimeout scales a spec's timeout, written for 90s waits, to waitTimeout. The ratio is taken
// in floating point: the product of two durations in nanoseconds overflows int64.
func specTimeout(d time.Duration) time.Duration {
	return scaleTimeout(d, waitTimeout())
}

func scaleTimeout(d, wait time.Duration) time.Duration {
	return time.Duration(float64(d) * (float64(wait) / float64(90*time.Second)))
}

const (
	e2eNamespace    = "e2e"
	e2eSourceSecret = "e2e-source"
)

var (
	input SpecInput
	fleet *localfleet.Fleet
)

func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local fleet of clusters")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "urutau fleet e2e")
	if upErr != nil {
		// Repeated last, where a CI log's tail shows it: the suite failed before any spec ran.
		t.Logf("the local fleet did not come up: %v", upErr)
	}
}

// upErr is why localfleet.Up failed in BeforeSuite, if it did.
var upErr error

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) {}, func(ctx SpecContext) {
	input = SpecInput{Namespace: e2eNamespace, SourceSecret: e2eSourceSecret, Timeout: waitTimeout(),
		Members: map[string]client.Client{}, IgnoresSIGTERMImage: os.Getenv(envIgnoresSIGTERMImage)}
	if ns, name, ok := strings.Cut(os.Getenv(envHubDeployment), "/"); ok {
		input.HubDeployment = client.ObjectKey{Namespace: ns, Name: name}
	}
	if os.Getenv(envHubKubeconfig) != "" {
		useExistingClusters(ctx)
	} else {
		startLocalFleet(ctx)
	}
	for _, name := range input.MemberNames {
		Expect(ensureSourceSecret(ctx, input.Members[name], name)).To(Succeed())
	}
}, NodeTimeout(5*time.Minute))

// A failed spec shows what each member runs, and the end of the local hub's log: whether the hub
// or a member's own controllers fell behind is the first question.
var _ = AfterEach(func(ctx SpecContext) {
	if !CurrentSpecReport().Failed() {
		return
	}
	for _, name := range input.MemberNames {
		describeMember(ctx, name, input.Members[name])
	}
	if fleet == nil {
		return
	}
	out, err := os.ReadFile(fleet.HubLog())
	if err != nil {
		GinkgoWriter.Printf("hub log: %v\n", err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	GinkgoWriter.Printf("--- the last %d lines of the hub log %s:\n%s\n", min(len(lines), hubLogTail), fleet.HubLog(), strings.Join(lines[max(0, len(lines)-hubLogTail):], "\n"))
})

// hubLogTail is how much of the hub log a failed spec shows.
const hubLogTail = 120

// describeMember writes the StatefulSets, pods and events of the e2e namespace in member name.
func describeMember(ctx context.Context, name string, c client.Client) {
	sts := &appsv1.StatefulSetList{}
	pods := &corev1.PodList{}
	events := &corev1.EventList{}
	for _, l := range []client.ObjectList{sts, pods, events} {
		if err := c.List(ctx, l, client.InNamespace(e2eNamespace)); err != nil {
			GinkgoWriter.Printf("--- %s: listing %T: %v\n", name, l, err)
		}
	}
	GinkgoWriter.Printf("--- %s, namespace %s:\n", name, e2eNamespace)
	for _, s := range sts.Items {
		GinkgoWriter.Printf("StatefulSet %s: replicas %d, ready %d, generation %d observed %d\n", s.Name, s.Status.Replicas, s.Status.ReadyReplicas, s.Generation, s.Status.ObservedGeneration)
	}
	for _, p := range pods.Items {
		GinkgoWriter.Printf("Pod %s: phase %s, node %q, deleting %v, conditions %v\n", p.Name, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil, p.Status.Conditions)
	}
	for _, e := range events.Items {
		GinkgoWriter.Printf("Event %s %s/%s %s: %s\n", e.LastTimestamp.Format(time.RFC3339), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
}

var _ = SynchronizedAfterSuite(func() {}, func(ctx SpecContext) {
	if fleet == nil {
		return
	}
	if os.Getenv(envKeep) == "1" {
		GinkgoWriter.Printf("%s=1: leaving the local fleet running; hub log %s\n", envKeep, fleet.HubLog())
		return
	}
	Expect(fleet.Down(ctx)).To(Succeed())
}, NodeTimeout(2*time.Minute))

func startLocalFleet(ctx context.Context) {
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	Expect(bin).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS is not set: run `make test` or `make test-e2e`")
	root, err := filepath.Abs("../..")
	Expect(err).NotTo(HaveOccurred())
	work, err := os.MkdirTemp("", "urutau-e2e-")
	Expect(err).NotTo(HaveOccurred())

	By("building the hub")
	hubBinary := filepath.Join(work, "hub")
	build := exec.CommandContext(ctx, "go", "build", "-o", hubBinary, "./cmd/hub")
	build.Dir = root
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./cmd/hub: %s", out)

	By("starting the local fleet: hub, member-a, member-b")
	members := []localfleet.Member{
		{Name: "member-a", Labels: map[string]string{"region": "eu"}},
		{Name: "member-b", Labels: map[string]string{"region": "us"}},
	}
	fleet, err = localfleet.Up(ctx, localfleet.FleetOptions{
		Options: localfleet.Options{BinDir: bin, WorkDir: filepath.Join(work, "fleet"),
			Log: func(format string, args ...any) { GinkgoWriter.Printf(format+"\n", args...) }},
		RepoRoot:  root,
		HubBinary: hubBinary,
		HubArgs: []string{
			"--coordinator-image=ghcr.io/urutau-io/urutau:e2e",
			"--leader-elect=false",
			"--metrics-bind-address=0",
			"--health-probe-bind-address=0",
			"--member-timeout=5s",
			"--tombstone-grace=20s",
		},
		Members:    members,
		Namespaces: []string{e2eNamespace},
	})
	upErr = err
	Expect(err).NotTo(HaveOccurred())
	input.Hub, err = fleet.Client("hub")
	Expect(err).NotTo(HaveOccurred())
	for _, m := range members {
		input.MemberNames = append(input.MemberNames, m.Name)
		input.Members[m.Name], err = fleet.Client(m.Name)
		Expect(err).NotTo(HaveOccurred())
	}
	opts := localfleet.Options{BinDir: bin, WorkDir: filepath.Join(work, "fleet")}
	input.RestartMember = func(ctx context.Context, name string, pause time.Duration) error {
		if err := localfleet.StopAPIServer(ctx, opts, name); err != nil {
			return err
		}
		time.Sleep(pause)
		return localfleet.StartAPIServer(ctx, opts, name)
	}
}

func useExistingClusters(ctx context.Context) {
	var err error
	input.Hub, err = clientFor(os.Getenv(envHubKubeconfig))
	Expect(err).NotTo(HaveOccurred())
	// The pipelines live in the same namespace on the hub as in the members.
	Expect(client.IgnoreAlreadyExists(input.Hub.Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e2eNamespace}}))).To(Succeed())
	for _, pair := range strings.Split(os.Getenv(envMemberKubeconfigs), ",") {
		name, path, ok := strings.Cut(pair, "=")
		Expect(ok).To(BeTrue(), "%s must be name=path,name=path", envMemberKubeconfigs)
		input.MemberNames = append(input.MemberNames, name)
		input.Members[name], err = clientFor(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(client.IgnoreAlreadyExists(input.Members[name].Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e2eNamespace}}))).To(Succeed())
	}
	Expect(len(input.MemberNames)).To(BeNumerically(">=", 2))
	restart := os.Getenv(envRestartCommand)
	input.RestartMember = func(ctx context.Context, name string, pause time.Duration) error {
		Expect(restart).NotTo(BeEmpty(), "%s is not set", envRestartCommand)
		return exec.CommandContext(ctx, restart, name, pause.String()).Run()
	}
}

func clientFor(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: localfleet.Scheme()})
}

func ensureSourceSecret(ctx context.Context, c client.Client, member string) error {
	s := &corev1.Secret{
		// Opened to pipelines: the hub's tenancy boundary refuses Secrets that are not.
		ObjectMeta: metav1.ObjectMeta{Namespace: e2eNamespace, Name: e2eSourceSecret,
			Labels: map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}},
		StringData: map[string]string{"uri": "mysql://e2e@db." + member + ".example:3306/shop"},
	}
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

var _ = Describe("urutau fleet", Ordered, func() {
	getInput := func() SpecInput { return input }
	It("places a pipeline on two members and reports it Ready", func(ctx SpecContext) {
		PlacedAndReadySpec(ctx, getInput)
	}, SpecTimeout(specTimeout(3*time.Minute)))
	It("moves a pipeline: stops it on the old member before starting it on the new one", func(ctx SpecContext) {
		MoveSpec(ctx, getInput)
	}, SpecTimeout(specTimeout(3*time.Minute)))
	It("deletes a pipeline from every member", func(ctx SpecContext) {
		DeleteSpec(ctx, getInput)
	}, SpecTimeout(specTimeout(3*time.Minute)))
	It("writes nothing while terminated and resumes when cleared", func(ctx SpecContext) {
		TerminateAndClearSpec(ctx, getInput)
	}, SpecTimeout(specTimeout(3*time.Minute)))
	It("converges when a member's API server restarts mid-rollout", func(ctx SpecContext) {
		MemberRestartSpec(ctx, getInput)
	}, SpecTimeout(specTimeout(4*time.Minute)))
	// Real kubelets only (make test-e2e-kind): kwok's pods have no process to ignore SIGTERM.
	if os.Getenv(envIgnoresSIGTERMImage) != "" {
		It("moves a pipeline only after the old pod's real termination grace", func(ctx SpecContext) {
			MoveWaitsForTerminationSpec(ctx, getInput)
		}, SpecTimeout(specTimeout(6*time.Minute)))
	}
	// Real kubelets and a hub Deployment only: the fence is a process in the pod.
	if os.Getenv(envHubDeployment) != "" {
		It("stops a fenced coordinator when the hub stops renewing its fence, and runs it again when it renews", func(ctx SpecContext) {
			FencedSpec(ctx, getInput)
		}, SpecTimeout(specTimeout(8*time.Minute)))
	}
})
