package fleet_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/membercache"
	hubmembers "github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/tenancy"
	"github.com/urutau-io/fleet/internal/testenv"
)

// The suite runs one hub and three members (a, b, c) as real API servers, a multicluster
// manager with the kubeconfig provider, and the reconciler with short timeouts. Each spec works
// in its own namespace and asserts the state of every member.
const (
	systemNS       = "urutau-system"
	memberTimeout  = 5 * time.Second
	tombstoneGrace = 5 * time.Second
	retryInterval  = time.Second
	waitInterval   = 500 * time.Millisecond
	healthInterval = time.Second
	// openPolicy is the PlacementPolicy that lets every hub namespace place on every member.
	openPolicy = "open"
	image      = "ghcr.io/urutau-io/coordinator:test"
	// The fence of fenced placements: short, so failover specs finish in seconds.
	fenceImage  = "ghcr.io/urutau-io/urutau-fleet-hub:test"
	fenceTTL    = 4 * time.Second
	fenceGrace  = 2 * time.Second
	fenceMargin = time.Second
)

var (
	suiteCtx    context.Context
	suiteCancel context.CancelFunc
	hub         *testenv.Cluster
	members     map[string]*testenv.Cluster
	hubClient   client.Client
	// memberLabels are the inventory labels each member starts with.
	memberLabels = map[string]map[string]string{
		"a": {"region": "eu", "fleet": "test"},
		"b": {"region": "us", "fleet": "test"},
		"c": {"region": "eu", "fleet": "test"},
	}
)

func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("integration suite: needs real API servers (run without -short)")
	}
	if os.Getenv(testenv.AssetsEnv) == "" {
		// Fail loudly: a silently skipped suite is a suite that does not run in CI.
		t.Fatalf("%s is not set: run `make test`, or export %s=$(hack/control-plane.sh print-dir)", testenv.AssetsEnv, testenv.AssetsEnv)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "Fleet Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, suiteCancel = context.WithCancel(context.Background())

	start := time.Now()
	clusters, err := testenv.Start(suiteCtx, "hub", "a", "b", "c")
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(GinkgoWriter, "4 API servers up in %s\n", time.Since(start).Round(time.Millisecond))
	hub = clusters[0]
	members = map[string]*testenv.Cluster{"a": clusters[1], "b": clusters[2], "c": clusters[3]}
	hubClient = hub.Client

	Expect(hubClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}})).To(Succeed())
	// The tenancy boundary is closed until a platform admin opens it: every hub namespace may
	// place on every member (specs that test the boundary narrow it).
	Expect(hubClient.Create(suiteCtx, &urutauv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: openPolicy},
		Spec:       urutauv1alpha1.PlacementPolicySpec{NamespaceSelector: &metav1.LabelSelector{}, ClusterSelector: &metav1.LabelSelector{}},
	})).To(Succeed())
	for _, m := range members {
		go seeScalesToZero(suiteCtx, m)
	}
	for name, m := range members {
		kc, err := m.Kubeconfig()
		Expect(err).NotTo(HaveOccurred())
		Expect(hubClient.Create(suiteCtx, testenv.KubeconfigSecret(systemNS, name, kc, memberLabels[name]))).To(Succeed())
	}

	liveness := &hubmembers.Liveness{}
	provider := kubeconfig.New(kubeconfig.Options{
		Namespace:      systemNS,
		ClusterOptions: []cluster.Option{membercache.Options(memberTimeout)},
		RESTOptions:    []func(*rest.Config) error{hubmembers.MemberRequestDeadline(memberTimeout), liveness.Track},
	})
	mgr, err := mcmanager.New(hub.Config, provider, manager.Options{
		Scheme:  testenv.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{ByObject: fleet.HubCacheByObject(systemNS), DefaultTransform: cache.TransformStripManagedFields()},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(provider.SetupWithManager(suiteCtx, mgr)).To(Succeed())

	r := &fleet.CoordinatorReconciler{
		Inventory: inventory.KubeconfigSecrets{Client: mgr.GetLocalManager().GetClient(), Namespace: systemNS},
		Image:     image,
		// The hub's own registry, as an admin allows it (--allowed-images): the specs roll
		// coordinators to other tags of it.
		Images:             tenancy.ImageSettings{Default: image, Allowed: []string{"ghcr.io/urutau-io/*"}},
		MemberTimeout:      memberTimeout,
		Liveness:           liveness,
		TombstoneGrace:     tombstoneGrace,
		LeaseNamespace:     systemNS,
		ReservedNamespaces: []string{systemNS},
		HealthInterval:     healthInterval,
		OrphanScanInterval: time.Second,
		// Secrets make no event: a repointed source Secret is found by this recheck.
		SecretRecheckInterval: time.Second,
		RetryInterval:         retryInterval,
		WaitInterval:          waitInterval,
		FenceImage:            fenceImage,
		FenceTTL:              fenceTTL,
		FenceGrace:            fenceGrace,
		FenceMargin:           fenceMargin,
	}
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(suiteCtx)).To(Succeed())
	}()
})

// Every spec waits on real API servers and a real manager: generous, fast-polling defaults
// (make test runs this suite beside the other packages' API servers, on two cores in CI).
var _ = BeforeEach(func() {
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)
})

var _ = AfterSuite(func() {
	if suiteCancel != nil {
		suiteCancel()
	}
	for _, m := range members {
		_ = m.Stop()
	}
	if hub != nil {
		_ = hub.Stop()
	}
})
