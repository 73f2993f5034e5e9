// Command hub is the urutau fleet hub: one controller that places CDCPipelines on member clusters
// and applies their coordinator workload there, plus the CDCPipeline validating webhook. Run
// `hub --help` for its flags and `hub member-secret --help` to produce a member's kubeconfig
// Secret.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/fleetview"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/inventory/clusterprofile"
	"github.com/urutau-io/fleet/internal/membercache"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/version"
	internalwebhook "github.com/urutau-io/fleet/internal/webhook"
)

// leaderElectionID names the hub's Lease. Distinct from the single-cluster operator's
// (urutau-operator-lock) so the two never fence each other.
const leaderElectionID = fleetview.LeaderElectionID

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hub:", err)
		os.Exit(1)
	}
}

// run is the whole program; main only turns its error into an exit code.
func run(args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == memberSecretCommand {
		return runMemberSecret(args[1:], stdout)
	}
	if isFleetCommand(args) {
		return runFleetCommand(context.Background(), args, stdout)
	}
	if versionRequested(args) {
		printVersion(stdout)
		return nil
	}
	o, err := parseFlags(args)
	if errors.Is(err, pflag.ErrHelp) {
		printUsage(stdout)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w\nrun 'hub --help' for usage", err)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	log := ctrl.Log.WithName("setup")

	cfg, err := hubConfig(o.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the hub's kubeconfig: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	mgr, err := setup(ctx, o, cfg)
	if err != nil {
		return err
	}

	log.Info("Starting the hub", "version", version.Get().Version, "revision", version.Get().Revision, "clusterProvider", o.clusterProvider, "providerNamespace", o.providerNamespace,
		"watchNamespaces", o.watchNamespaces, "fieldManager", o.fieldManager, "webhook", o.enableWebhook,
		"leaderElection", o.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// selfSigned is the webhook certificate of --webhook-self-signed (config/hub/self-signed): kept in
// --webhook-cert-dir, its CA in --webhook-cert-secret and on --webhook-configuration. It reads and
// writes through an uncached client: it needs one Secret and one configuration, by name.
func selfSigned(o options, cfg *rest.Config) (internalwebhook.SelfSigned, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return internalwebhook.SelfSigned{}, err
	}
	return internalwebhook.SelfSigned{
		Client: c, Namespace: o.providerNamespace, Service: o.webhookService, OtherServices: []string{o.metricsService},
		Hosts:  o.webhookCertHosts,
		Secret: o.webhookCertSecret, WebhookConfiguration: o.webhookConfiguration, CertDir: o.certDir(),
		FieldManager: o.fieldManager,
	}, nil
}

// addSelfSigned provisions the certificate before the webhook server reads it, and keeps it
// current on every replica while the hub runs.
func addSelfSigned(ctx context.Context, o options, cfg *rest.Config, mgr manager.Manager) error {
	s, err := selfSigned(o, cfg)
	if err != nil {
		return err
	}
	if err := s.Ensure(ctx); err != nil {
		return fmt.Errorf("provisioning the self-signed webhook certificate: %w", err)
	}
	return mgr.Add(s)
}

// metricsOptions serve /metrics over HTTPS to callers the hub cluster authenticates and
// authorizes (get on the non-resource URL /metrics), unless --metrics-secure=false.
func metricsOptions(o options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.metricsAddr}
	if o.metricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.TLSOpts = []func(*tls.Config){internalwebhook.HardenTLS}
		m.CertDir = o.metricsCertDir // empty: a self-signed certificate generated in memory
	}
	return m
}

// setup builds the hub: scheme, member provider, multicluster manager, controllers, webhook, health
// checks, and the provider's own controller.
func setup(ctx context.Context, o options, cfg *rest.Config) (mcmanager.Manager, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	// Member caches hold only what the hub writes, and use our scheme so ScaledObjects decode.
	memberOptions := []cluster.Option{
		func(co *cluster.Options) { co.Scheme = scheme },
		membercache.Options(o.memberTimeout),
	}
	liveness := &members.Liveness{}
	// Screening first: the others only wrap the transport of a config that passed.
	restOptions := []func(*rest.Config) error{credentials.RESTOption(o.memberPolicy), members.MemberRequestDeadline(o.memberTimeout), liveness.Track}
	refusals := &inventory.Refusals{}
	provider, setupProvider := newProvider(o, memberOptions, restOptions, refusals)

	var leader *memberwork.LeaderFence
	if o.leaderElect {
		if leader, err = leaderLock(cfg, scheme, o.providerNamespace); err != nil {
			return nil, err
		}
	}
	mgr, err := mcmanager.New(cfg, provider, manager.Options{
		Scheme:                              scheme,
		Cache:                               hubCacheOptions(o),
		Metrics:                             metricsOptions(o),
		HealthProbeBindAddress:              o.probeAddr,
		PprofBindAddress:                    o.pprofAddr,
		LeaderElection:                      o.leaderElect,
		LeaderElectionID:                    leaderElectionID,
		LeaderElectionNamespace:             o.providerNamespace,
		LeaderElectionReleaseOnCancel:       true, // safe: the process exits as soon as Start returns
		LeaderElectionResourceLockInterface: lockOf(leader),
		LeaseDuration:                       &leaseDuration,
		RenewDeadline:                       &renewDeadline,
		RetryPeriod:                         &retryPeriod,
		WebhookServer: webhook.NewServer(webhook.Options{Port: o.webhookPort, CertDir: o.webhookCertDir,
			TLSOpts: []func(*tls.Config){internalwebhook.HardenTLS}}),
		// The kubeconfig provider engages members from one controller on kubeconfig Secrets, one
		// worker by default: a member that does not answer held every other member's engagement
		// for as long as its cache took to give up (found by test/faults). Secrets are
		// independent (the queue never runs one key twice at once).
		Controller: config.Controller{GroupKindConcurrency: map[string]int{"Secret": providerWorkers}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	hub := mgr.GetLocalManager()
	refusals.Recorder = hub.GetEventRecorder("urutau-fleet-inventory")
	if o.enableWebhook && o.webhookSelfSigned {
		if err := addSelfSigned(ctx, o, cfg, hub); err != nil {
			return nil, err
		}
	}

	members := newInventory(o, hub.GetClient())
	coordinators := &fleet.CoordinatorReconciler{
		Client:                  hub.GetClient(),
		Manager:                 mgr,
		Inventory:               members,
		Image:                   o.coordinatorImage,
		Recorder:                hub.GetEventRecorder(fleet.ControllerName),
		FieldManager:            o.fieldManager,
		KEDAPrometheusAddress:   o.kedaPrometheusAddress,
		KEDAThreshold:           o.kedaThreshold,
		NetworkPolicy:           o.networkPolicy,
		Refusals:                refusals,
		MemberTimeout:           o.memberTimeout,
		Liveness:                liveness,
		Leader:                  leader,
		TombstoneGrace:          o.tombstoneGrace,
		ControllerPatience:      o.scaleDownPatience,
		ReservedNamespaces:      o.reservedNamespaces(),
		Images:                  o.images(),
		AllowWeakPodSecurity:    o.allowWeakPodSecurity,
		LeaseNamespace:          o.leaseNamespace,
		HealthInterval:          o.healthInterval,
		OrphanScanInterval:      o.orphanScanInterval,
		SecretRecheckInterval:   o.secretRecheckInterval,
		DeleteOrphans:           o.deleteOrphans,
		MaxConcurrentReconciles: o.maxConcurrentReconciles,
		FenceImage:              o.fenceImage,
		FenceTTL:                o.fenceTTL,
		FenceGrace:              o.fenceGrace,
		FenceMargin:             o.fenceMargin,
	}
	// Also sets up the ReaderLease controller (tombstone replay) and the member health checks.
	if err := coordinators.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the CDCPipeline controllers: %w", err)
	}
	if o.enableWebhook {
		v := &internalwebhook.CDCPipelineValidator{Client: hub.GetAPIReader(), Tenancy: &internalwebhook.TenancyCheck{
			Reader: hub.GetAPIReader(), Inventory: members, Reserved: o.reservedNamespaces(), Images: o.images(),
		}}
		// The uniqueness check reads the few pipelines sharing an identity from the cache's index,
		// when the cache holds every pipeline of the hub; with --watch-namespaces it lists them live.
		if len(o.watchNamespaces) == 0 {
			if err := internalwebhook.IndexIdentities(ctx, hub.GetFieldIndexer()); err != nil {
				return nil, fmt.Errorf("indexing CDCPipelines by source identity: %w", err)
			}
			v.Identities = hub.GetClient()
		}
		if err := internalwebhook.SetupWithManager(hub, v); err != nil {
			return nil, fmt.Errorf("setting up the CDCPipeline webhook: %w", err)
		}
	}
	if err := hub.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	ready := healthz.Ping
	if o.enableWebhook {
		// Not ready until the webhook serves, so the API server never calls an absent endpoint.
		ready = hub.GetWebhookServer().StartedChecker()
	}
	if err := hub.AddReadyzCheck("readyz", ready); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}

	// Providers register their own controllers on the hub; the kubeconfig provider needs this
	// explicit call (multicluster-runtime does not make it).
	if err := setupProvider(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the %s provider: %w", o.clusterProvider, err)
	}

	return mgr, nil
}

// hubConfig loads the hub's client config: the file given, or controller-runtime's usual lookup.
func hubConfig(path string) (*rest.Config, error) {
	if path == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	// As ctrl.GetConfig does for the other sources: no client-side throttling unless the file
	// sets one (client-go's default of 5 QPS would queue every hub write).
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}

// newScheme knows client-go's types, the urutau API, KEDA's ScaledObjects and ClusterProfiles.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		urutauv1alpha1.AddToScheme,
		kedav1alpha1.AddToScheme,
		clusterinventoryv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return s, nil
}

// providerWorkers is how many members the kubeconfig provider engages at once.
const providerWorkers = 4

// setupFunc registers a provider's own controller with the manager.
type setupFunc func(context.Context, mcmanager.Manager) error

// newProvider returns the member cluster provider --cluster-provider names. Both screen member
// credentials (--member-allow-proxy, --member-allow-insecure-tls, --member-server-allowlist) and
// record refusals in refusals.
func newProvider(o options, memberOptions []cluster.Option, restOptions []func(*rest.Config) error, refusals *inventory.Refusals) (multicluster.Provider, setupFunc) {
	if o.clusterProvider == providerClusterProfile {
		p := clusterprofile.New(clusterprofile.Options{Namespace: o.providerNamespace, ClusterOptions: memberOptions,
			RESTOptions: restOptions, Policy: o.memberPolicy, Refusals: refusals})
		return p, p.SetupWithManager
	}
	p := kubeconfig.New(kubeconfig.Options{Namespace: o.providerNamespace, ClusterOptions: memberOptions, RESTOptions: restOptions})
	return p, func(ctx context.Context, mgr mcmanager.Manager) error {
		// The provider reads each Secret through this manager's client, which screens it before the
		// provider parses it (see inventory.ScreenedKubeconfigProvider).
		return p.SetupWithManager(ctx, inventory.ScreenedKubeconfigProvider(mgr, o.providerNamespace, o.memberPolicy, refusals))
	}
}

// newInventory lists the same entries the provider engages.
func newInventory(o options, hub client.Reader) inventory.Inventory {
	if o.clusterProvider == providerClusterProfile {
		return inventory.ClusterProfiles{Client: hub, Namespace: o.providerNamespace}
	}
	return inventory.KubeconfigSecrets{Client: hub, Namespace: o.providerNamespace}
}

// hubCacheOptions scopes the hub's cache to what the hub reads: inventory entries in the provider
// namespace only (so the hub needs no cluster-wide Secret access), ReaderLeases in their namespace, and
// with --watch-namespaces, CDCPipelines from those namespaces only. Cached objects drop their
// managedFields: the hub never reads them on its own objects (its merge patches diff two copies of
// one object, and an update with no managedFields keeps the server's), and they were a tenth of
// the heap at 10x1000 (docs/benchmarks.md).
func hubCacheOptions(o options) cache.Options {
	only := func(ns string) map[string]cache.Config { return map[string]cache.Config{ns: {}} }
	byObject := fleet.HubCacheByObject(o.leaseNamespace)
	byObject[&corev1.Secret{}] = cache.ByObject{Namespaces: only(o.providerNamespace)}
	if o.clusterProvider == providerClusterProfile {
		// Only in this mode: the cache resolves every ByObject type at start, and the
		// ClusterProfile CRD need not exist on a hub that uses kubeconfig Secrets.
		byObject[&clusterinventoryv1alpha1.ClusterProfile{}] = cache.ByObject{Namespaces: only(o.providerNamespace)}
	}
	opts := cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
	if len(o.watchNamespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.watchNamespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}
