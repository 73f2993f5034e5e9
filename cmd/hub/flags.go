package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// Cluster providers --cluster-provider accepts.
const (
	providerKubeconfig     = "kubeconfig"
	providerClusterProfile = "cluster-profile"
)

// defaultKEDAThreshold is the single-cluster operator's: a string, as KEDA's trigger metadata is.
const defaultKEDAThreshold = "30"

// description heads --help.
const description = `hub runs the urutau fleet hub: it watches CDCPipelines (urutau.io/v1alpha1) on this
cluster, places each one on the member clusters its spec.placement selects, and Server-Side-Applies
the same coordinator workload the single-cluster urutau operator renders into each of them. Members
come from kubeconfig Secrets (--cluster-provider=kubeconfig, the default) or ClusterProfiles
(--cluster-provider=cluster-profile) in --cluster-provider-namespace; their labels are what
spec.placement.clusterSelector matches. 'hub member-secret --help' prints a member's kubeconfig Secret.

Usage:
  hub [flags]
  hub member-secret [flags]
  hub members|status|join|leave [flags]   (as kubectl urutau; 'hub join --help')
  hub --version

Flags:
`

// options are the hub's settings, as parsed and validated from its command line.
type options struct {
	coordinatorImage      string
	fieldManager          string
	enableWebhook         bool
	webhookPort           int
	webhookCertDir        string
	webhookSelfSigned     bool
	webhookService        string
	metricsService        string
	webhookConfiguration  string
	webhookCertSecret     string
	webhookCertHosts      []string
	watchNamespaces       []string
	kedaPrometheusAddress string
	kedaThreshold         string
	metricsAddr           string
	metricsSecure         bool
	metricsCertDir        string
	probeAddr             string
	pprofAddr             string
	leaderElect           bool
	kubeconfig            string

	clusterProvider         string
	providerNamespace       string
	memberTimeout           time.Duration
	tombstoneGrace          time.Duration
	scaleDownPatience       time.Duration
	leaseNamespace          string
	maxConcurrentReconciles int
	healthInterval          time.Duration
	orphanScanInterval      time.Duration
	secretRecheckInterval   time.Duration
	deleteOrphans           bool
	networkPolicy           bool

	// fenceImage holds /fence (the hub's own image); fenceTTL, fenceGrace and fenceMargin are
	// the fence's bound and what the hub waits beyond it (docs/failover.md).
	fenceImage                        string
	fenceTTL, fenceGrace, fenceMargin time.Duration

	// memberPolicy is what member credentials may use beyond the safe default.
	memberPolicy credentials.Policy

	// allowedImages and requireImageDigests are the hub's image rules besides its default image
	// (tenancy.ImageSettings); allowWeakPodSecurity lets pipelines into member namespaces that
	// enforce less than the Pod Security baseline level.
	allowedImages        []string
	requireImageDigests  bool
	allowWeakPodSecurity bool

	zap zap.Options
}

// newFlagSet binds every flag to o, with its default.
func newFlagSet(o *options, watchNamespaces *string, serverAllowlist *[]string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("hub", pflag.ContinueOnError)
	fs.SortFlags = false
	// Parse reports errors to the caller, which prints them once (and --help on request).
	fs.SetOutput(io.Discard)

	// The single-cluster operator's flags, same names and defaults.
	fs.StringVar(&o.coordinatorImage, "coordinator-image", "",
		"Image of the coordinator and the workers when a pipeline names none. Required.")
	fs.StringVar(&o.fenceImage, "fence-image", "",
		"Image that holds the fence (/fence): the hub's own image. Fenced placements (spec.placement.fenced) copy it into their coordinator pod; without it they wait, stalled.")
	fs.DurationVar(&o.fenceTTL, "fence-ttl", fleet.DefaultFenceTTL,
		"A fenced coordinator runs while the hub's last renewal of its fence Lease is younger than this; the hub renews every quarter of it. Whole seconds. A hub down for longer stops fenced coordinators.")
	fs.DurationVar(&o.fenceGrace, "fence-grace", fleet.DefaultFenceGrace,
		"How long a fenced coordinator has between SIGTERM and SIGKILL once its renewals stopped. Whole seconds.")
	fs.DurationVar(&o.fenceMargin, "fence-margin", fleet.DefaultFenceMargin,
		"What the hub waits beyond --fence-ttl + --fence-grace after its last renewal before it counts a member it cannot reach as drained of a fenced coordinator: clock rate drift, the fence's loop, a process's death.")
	fs.StringVar(&o.fieldManager, "field-manager", "urutau-operator",
		"Base Server-Side Apply field manager: hub writes use it as is, writes into member X use <base>@X. Never change it once released.")
	fs.BoolVar(&o.enableWebhook, "enable-webhook", true,
		"Serve the CDCPipeline validating webhook.")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "",
		"Directory holding the webhook's tls.crt and tls.key (default: <tmp>/k8s-webhook-server/serving-certs, where config/hub mounts them).")
	fs.BoolVar(&o.webhookSelfSigned, "webhook-self-signed", false,
		"Provision the webhook certificate without cert-manager: a self-signed certificate kept in --webhook-cert-secret (shared by replicas), written to --webhook-cert-dir, its CA set on --webhook-configuration.")
	fs.StringVar(&o.webhookService, "webhook-service", "urutau-fleet-webhook-service",
		"With --webhook-self-signed: the Service (in --cluster-provider-namespace) the certificate is for.")
	fs.StringVar(&o.webhookConfiguration, "webhook-configuration", "urutau-fleet-validating-webhook-configuration",
		"With --webhook-self-signed: the ValidatingWebhookConfiguration whose caBundle is set.")
	fs.StringVar(&o.webhookCertSecret, "webhook-cert-secret", "urutau-fleet-webhook-cert",
		"With --webhook-self-signed: the Secret (in --cluster-provider-namespace) holding the certificate.")
	fs.StringVar(watchNamespaces, "watch-namespaces", "",
		"Comma-separated namespaces whose CDCPipelines the hub serves; empty means all. Scopes the hub's cache only, not RBAC, and never member clusters.")
	fs.StringVar(&o.kedaPrometheusAddress, "keda-prometheus-address", "",
		"Prometheus address of KEDA ScaledObjects; empty disables KEDA. A member's inventory entry overrides it with the annotation urutau.io/keda-prometheus-address.")
	fs.StringVar(&o.kedaThreshold, "keda-threshold", defaultKEDAThreshold,
		"KEDA trigger threshold (a positive number); empty means the default, as in the single-cluster operator.")
	fs.StringSliceVar(&o.webhookCertHosts, "webhook-cert-hosts", nil,
		"With --webhook-self-signed: further DNS names or IP addresses the serving certificate is for (when the API server calls the webhook by URL).")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS, only to callers the hub cluster authenticates and authorizes for get on /metrics (TokenReview and SubjectAccessReview). false serves plain HTTP to anyone who can connect.")
	fs.StringVar(&o.metricsService, "metrics-service", "urutau-fleet-metrics-service",
		"Service of the metrics endpoint: with --webhook-self-signed the certificate is for it too, so --metrics-cert-dir may be the webhook's certificate directory.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "",
		"Directory holding the metrics endpoint's tls.crt and tls.key; empty: a self-signed certificate generated at start.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof profiling endpoints (e.g. 127.0.0.1:6060); empty or \"0\" disables them.")
	fs.BoolVar(&o.leaderElect, "leader-elect", true,
		"Elect a leader (Lease urutau-fleet-hub-lock in --cluster-provider-namespace) so that only one hub replica writes. Turn off only for tests and demos.")

	fs.StringVar(&o.kubeconfig, "kubeconfig", "",
		"Kubeconfig of the hub cluster. Default: $KUBECONFIG, then the in-cluster config, then ~/.kube/config.")

	// Fleet flags.
	fs.StringVar(&o.clusterProvider, "cluster-provider", providerKubeconfig,
		"Where members come from: \"kubeconfig\" (Secrets labelled sigs.k8s.io/multicluster-runtime-kubeconfig=true, key kubeconfig) or \"cluster-profile\" (ClusterProfiles, multicluster.x-k8s.io).")
	fs.StringVar(&o.providerNamespace, "cluster-provider-namespace", "urutau-system",
		"Namespace of the hub holding the kubeconfig Secrets or ClusterProfiles.")
	fs.DurationVar(&o.memberTimeout, "member-timeout", 10*time.Second,
		"Bound on each member's part of a reconcile, on member requests sent without a deadline, on each health check, and on the first sync of a member's cache. A reconcile stops waiting for a member after half of this, or sooner once its requests have had no answer for 500ms (a fixed limit that no flag sets); its work there goes on in the background. A member whose requests time out is treated as down until a health check finds it answering.")
	fs.DurationVar(&o.healthInterval, "member-health-interval", 0,
		"How often each member is checked, idle or not (one request; default: --member-timeout). A member that stops answering shows as Unreachable within this plus --member-timeout.")
	fs.DurationVar(&o.tombstoneGrace, "tombstone-grace", 2*time.Minute,
		"How long deletion waits for a member to be emptied (unreachable, or its coordinator pods still there) before it keeps a tombstone for that member (its ReaderLease entry) and lets the CDCPipeline go.")
	fs.DurationVar(&o.scaleDownPatience, "scale-down-patience", 2*time.Minute,
		"How long a member's StatefulSet controller has to see a coordinator scaled to zero before the hub deletes the StatefulSet anyway. The hub scales a coordinator to zero and deletes it once the controller has seen that, so that a controller whose cache lags cannot make its pod again after the member was found empty; a controller silent this long is taken as not running (its pods are deleted then as pods no StatefulSet controls).")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", "",
		"Namespace of the hub holding the ReaderLeases: one per source identity, recording where each pipeline runs, and the tombstones of deleted ones (default: --cluster-provider-namespace).")
	fs.DurationVar(&o.orphanScanInterval, "orphan-scan-interval", 5*time.Minute,
		"How often each member's cache is scanned for orphans: objects the hub wrote for a pipeline no ReaderLease records there.")
	fs.DurationVar(&o.secretRecheckInterval, "secret-recheck-interval", time.Minute,
		"How often the hub reads again, in each member, the Secrets a placed pipeline references (Secrets make no event it watches): a Secret closed to the fleet stops the coordinator that mounts it, and of two members whose source Secrets name one database, the one that started later stops (docs/architecture.md).")
	fs.BoolVar(&o.networkPolicy, "coordinator-network-policy", false,
		"Render a NetworkPolicy for each coordinator: its control-plane port open to the pipeline's own workers only, its metrics port to anyone. Off by default, as in the single-cluster operator; it needs a network plugin that enforces NetworkPolicies.")
	fs.BoolVar(&o.deleteOrphans, "delete-orphans", false,
		"Delete orphans in every member instead of only reporting them (per member: annotation urutau.io/delete-orphans=\"true\" on its inventory entry).")
	fs.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", 4, "CDCPipelines reconciled in parallel.")

	// Member credentials (docs/security.md): refused unless the admin allows them here.
	fs.BoolVar(&o.memberPolicy.AllowProxy, "member-allow-proxy", false,
		"Let member kubeconfigs and ClusterProfiles set proxy-url. Off: a credential with a proxy is refused.")
	fs.BoolVar(&o.memberPolicy.AllowInsecure, "member-allow-insecure-tls", false,
		"Let member kubeconfigs and ClusterProfiles set insecure-skip-tls-verify instead of certificate-authority-data. Off: refused.")
	fs.StringSliceVar(serverAllowlist, "member-server-allowlist", nil,
		"Comma-separated hosts a member's server may name: exact names, *.domain wildcards, CIDRs. Empty: any host but link-local, unspecified and multicast addresses.")

	// What tenants may run (docs/security.md): the platform admin's, closed by default.
	fs.StringSliceVar(&o.allowedImages, "allowed-images", nil,
		"Comma-separated image patterns every pipeline may run besides --coordinator-image: a repository (any tag or digest), repository:tag, repository@sha256:..., registry/path/* (every repository below), or *. PlacementPolicies allow more per namespace and member (spec.images). Empty: only --coordinator-image and what policies allow.")
	fs.BoolVar(&o.requireImageDigests, "require-image-digests", false,
		"Run pipeline images only when pinned by digest (image@sha256:...); --coordinator-image is exempt.")
	fs.BoolVar(&o.allowWeakPodSecurity, "allow-weak-pod-security", false,
		"Place pipelines into member namespaces whose pod-security.kubernetes.io/enforce label is missing or privileged. Off: refused (per policy: PlacementPolicy spec.allowWeakPodSecurity).")

	// zap's flags are Go flags; pflag carries them unchanged (--zap-log-level, --zap-devel, ...).
	gofs := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(gofs)
	fs.AddGoFlagSet(gofs)
	return fs
}

// parseFlags parses and validates the hub's command line (without the program name). It returns
// pflag.ErrHelp for -h/--help.
func parseFlags(args []string) (options, error) {
	var o options
	var watch string
	var allowlist []string
	fs := newFlagSet(&o, &watch, &allowlist)
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	servers, err := credentials.ParseAllowlist(allowlist)
	if err != nil {
		return options{}, fmt.Errorf("--member-server-allowlist: %w", err)
	}
	o.memberPolicy.Servers = servers
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	o.coordinatorImage = strings.TrimSpace(o.coordinatorImage)
	o.allowedImages = splitList(strings.Join(o.allowedImages, ","))
	o.watchNamespaces = splitList(watch)
	if o.kedaThreshold = strings.TrimSpace(o.kedaThreshold); o.kedaThreshold == "" {
		o.kedaThreshold = defaultKEDAThreshold
	}
	if o.leaseNamespace == "" {
		o.leaseNamespace = o.providerNamespace
	}
	if err := o.validate(); err != nil {
		return options{}, err
	}
	return o, nil
}

// validate reports every invalid setting at once.
func (o options) validate() error {
	var errs []error
	if o.coordinatorImage == "" {
		errs = append(errs, errors.New("--coordinator-image is required: it is the image of coordinators and workers whose pipeline names none"))
	}
	if o.fieldManager == "" {
		errs = append(errs, errors.New("--field-manager must not be empty"))
	}
	if o.clusterProvider != providerKubeconfig && o.clusterProvider != providerClusterProfile {
		errs = append(errs, fmt.Errorf("--cluster-provider must be %q or %q, not %q", providerKubeconfig, providerClusterProfile, o.clusterProvider))
	}
	if o.providerNamespace == "" {
		errs = append(errs, errors.New("--cluster-provider-namespace must not be empty"))
	}
	if f, err := strconv.ParseFloat(o.kedaThreshold, 64); err != nil || f <= 0 || math.IsInf(f, 0) {
		errs = append(errs, fmt.Errorf("--keda-threshold must be a positive number, not %q", o.kedaThreshold))
	}
	if o.healthInterval < 0 {
		errs = append(errs, fmt.Errorf("--member-health-interval must not be negative, not %s", o.healthInterval))
	}
	if o.orphanScanInterval <= 0 {
		errs = append(errs, fmt.Errorf("--orphan-scan-interval must be positive, not %s", o.orphanScanInterval))
	}
	if o.secretRecheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("--secret-recheck-interval must be positive, not %s", o.secretRecheckInterval))
	}
	if o.memberTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--member-timeout must be positive, not %s", o.memberTimeout))
	}
	if o.scaleDownPatience <= 0 {
		errs = append(errs, fmt.Errorf("--scale-down-patience must be positive, not %s", o.scaleDownPatience))
	}
	if o.tombstoneGrace <= 0 {
		errs = append(errs, fmt.Errorf("--tombstone-grace must be positive, not %s", o.tombstoneGrace))
	}
	if o.webhookPort < 1 || o.webhookPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port must be a port number (1-65535), not %d", o.webhookPort))
	}
	if o.maxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles must be at least 1, not %d", o.maxConcurrentReconciles))
	}
	if o.fenceTTL < 4*time.Second || o.fenceTTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--fence-ttl must be a whole number of seconds, at least 4s, not %s", o.fenceTTL))
	}
	if o.fenceGrace < 0 || o.fenceGrace%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--fence-grace must be a whole number of seconds, not negative, not %s", o.fenceGrace))
	}
	if o.fenceMargin < 0 {
		errs = append(errs, fmt.Errorf("--fence-margin must not be negative, not %s", o.fenceMargin))
	}
	if err := tenancy.ParseImagePatterns(o.allowedImages); err != nil {
		errs = append(errs, fmt.Errorf("--allowed-images: %w", err))
	}
	return errors.Join(errs...)
}

// images are the hub's image rules, for the webhook and the reconciler.
func (o options) images() tenancy.ImageSettings {
	return tenancy.ImageSettings{Default: o.coordinatorImage, Allowed: o.allowedImages, RequireDigest: o.requireImageDigests}
}

// certDir is where the webhook server reads its certificate.
func (o options) certDir() string {
	if o.webhookCertDir != "" {
		return o.webhookCertDir
	}
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// reservedNamespaces are the hub's own namespaces (--cluster-provider-namespace, --lease-namespace): no pipeline may live there, on the hub or in a
// member (tenancy.Boundary.Reserved).
func (o options) reservedNamespaces() []string {
	return splitList(o.providerNamespace + "," + o.leaseNamespace)
}

// splitList splits a comma-separated list, trimming entries and dropping empty and repeated ones.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// printUsage writes --help.
func printUsage(w io.Writer) {
	var o options
	var watch string
	var allowlist []string
	fs := newFlagSet(&o, &watch, &allowlist)
	fmt.Fprint(w, description)
	fmt.Fprint(w, fs.FlagUsagesWrapped(100))
}
