package webhook

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/tenancy"
	"github.com/urutau-io/fleet/internal/testenv"
)

// suiteDefaultImage is the suite's --coordinator-image; --allowed-images is "urutau" (every tag of
// docker.io/library/urutau).
const suiteDefaultImage = "ghcr.io/urutau-io/urutau:suite"

// The envtest suite: a real kube-apiserver and etcd with the CRD from config/hub/crd/bases and the
// ValidatingWebhookConfiguration generated into config/hub/webhook (`make manifests`), served by a
// controller-runtime manager registered through SetupWithManager.
var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	// warned is a client that records the admission warnings the API server returns.
	warned   client.Client
	warnings = &testenv.WarningRecorder{}
	scheme   = runtime.NewScheme()
	stopMgr  context.CancelFunc
)

// TestWebhookSuite runs the envtest suite. It needs KUBEBUILDER_ASSETS (kube-apiserver, etcd,
// kubectl): without it, it fails rather than skip silently; `-short` skips it.
func TestWebhookSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the envtest suite needs a real kube-apiserver: skipped with -short")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: this suite runs the webhook against a real kube-apiserver and etcd. " +
			"Build them with `make control-plane`, then run KUBEBUILDER_ASSETS=$(hack/control-plane.sh print-dir) go test ./internal/webhook/, " +
			"or pass -short to run only the tests that need no API server.")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "CDCPipeline webhook (envtest)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(urutauv1alpha1.AddToScheme(scheme)).To(Succeed())

	root := filepath.Join("..", "..")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "hub", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "hub", "webhook")},
		},
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(testEnv.Stop()).To(Succeed())
	})

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = nil
	wcfg.WarningHandlerWithContext = warnings
	warned, err = client.New(wcfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	wo := &testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host:    wo.LocalServingHost,
			Port:    wo.LocalServingPort,
			CertDir: wo.LocalServingCertDir,
		}),
	})
	Expect(err).NotTo(HaveOccurred())
	// The tenancy boundary with a fixed inventory, and one policy that opens every namespace not
	// labelled for the tenancy specs (tenancy_envtest_test.go) to every member.
	Expect(SetupWithManager(mgr, &CDCPipelineValidator{Tenancy: &TenancyCheck{
		Reader: mgr.GetAPIReader(), Inventory: staticInventory(suiteMembers), Reserved: []string{"urutau-system"},
		Images: tenancy.ImageSettings{Default: suiteDefaultImage, Allowed: []string{"urutau"}},
	}})).To(Succeed())
	Expect(k8sClient.Create(ctx, &urutauv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "suite-open"},
		Spec: urutauv1alpha1.PlacementPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: tenancyTestLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}},
			ClusterSelector:   &metav1.LabelSelector{},
		},
	})).To(Succeed())

	mgrCtx, cancel := context.WithCancel(context.Background())
	stopMgr = cancel
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mgrCtx)).To(Succeed())
	}()
	DeferCleanup(func() {
		stopMgr()
		Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed())
	})

	Eventually(func() error {
		return mgr.GetWebhookServer().StartedChecker()(nil)
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}, NodeTimeout(3*time.Minute))
