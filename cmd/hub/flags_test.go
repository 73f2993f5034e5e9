package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/urutau-io/fleet/internal/credentials"
)

// defaults is what parseFlags returns for --coordinator-image=img alone.
func defaults() options {
	return options{
		coordinatorImage:        "img",
		fieldManager:            "urutau-operator",
		enableWebhook:           true,
		webhookPort:             9443,
		webhookService:          "urutau-fleet-webhook-service",
		metricsService:          "urutau-fleet-metrics-service",
		webhookConfiguration:    "urutau-fleet-validating-webhook-configuration",
		webhookCertSecret:       "urutau-fleet-webhook-cert",
		kedaThreshold:           "30",
		metricsAddr:             ":8443",
		metricsSecure:           true,
		probeAddr:               ":8081",
		leaderElect:             true,
		clusterProvider:         "kubeconfig",
		providerNamespace:       "urutau-system",
		memberTimeout:           10 * time.Second,
		tombstoneGrace:          2 * time.Minute,
		scaleDownPatience:       2 * time.Minute,
		leaseNamespace:          "urutau-system",
		maxConcurrentReconciles: 4,
		orphanScanInterval:      5 * time.Minute,
		secretRecheckInterval:   time.Minute,
		fenceTTL:                30 * time.Second,
		fenceGrace:              15 * time.Second,
		fenceMargin:             10 * time.Second,
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    func(*options) // edits defaults(); nil when an error is expected
		wantErr []string       // substrings of the error
	}{
		{name: "defaults", args: []string{"--coordinator-image=img"}, want: func(*options) {}},
		{
			name: "watch-namespaces trimmed, empties and repeats dropped",
			args: []string{"--coordinator-image=img", "--watch-namespaces= team-a, ,team-b,,team-a ,"},
			want: func(o *options) { o.watchNamespaces = []string{"team-a", "team-b"} },
		},
		{name: "watch-namespaces only commas", args: []string{"--coordinator-image=img", "--watch-namespaces= , ,"}, want: func(*options) {}},
		{name: "coordinator image trimmed", args: []string{"--coordinator-image", "  img "}, want: func(*options) {}},
		{
			name: "every flag",
			args: []string{
				"--coordinator-image=reg/urutau:1", "--field-manager=fm", "--enable-webhook=false",
				"--watch-namespaces=a", "--keda-prometheus-address=http://prom:9090", "--keda-threshold=7.5",
				"--metrics-bind-address=0", "--health-probe-bind-address=:9999", "--leader-elect=false",
				"--cluster-provider=cluster-profile", "--cluster-provider-namespace=fleet",
				"--member-timeout=3s", "--tombstone-grace=30s", "--scale-down-patience=45s", "--lease-namespace=graves",
				"--max-concurrent-reconciles=9", "--zap-devel", "--kubeconfig=/hub/config",
				"--webhook-port=10443", "--webhook-cert-dir=/certs", "--webhook-cert-hosts=127.0.0.1,hub.local",
				"--metrics-secure=false", "--metrics-cert-dir=/mcerts",
				"--member-allow-proxy", "--member-allow-insecure-tls", "--member-server-allowlist=*.members.example, 10.0.0.0/8",
				"--member-health-interval=4s", "--orphan-scan-interval=1m", "--delete-orphans",
				"--secret-recheck-interval=20s",
				"--allowed-images=ghcr.io/urutau-io/urutau, registry.example.com/team/*", "--require-image-digests", "--allow-weak-pod-security",
				"--fence-image=reg/hub:2", "--fence-ttl=20s", "--fence-grace=5s", "--fence-margin=3s",
			},
			want: func(o *options) {
				*o = options{
					coordinatorImage: "reg/urutau:1", fieldManager: "fm", enableWebhook: false,
					webhookPort: 10443, webhookCertDir: "/certs", webhookCertHosts: []string{"127.0.0.1", "hub.local"},
					metricsSecure: false, metricsCertDir: "/mcerts",
					memberPolicy:         credentials.Policy{AllowProxy: true, AllowInsecure: true, Servers: mustAllowlist("*.members.example", "10.0.0.0/8")},
					webhookService:       "urutau-fleet-webhook-service",
					metricsService:       "urutau-fleet-metrics-service",
					webhookConfiguration: "urutau-fleet-validating-webhook-configuration",
					webhookCertSecret:    "urutau-fleet-webhook-cert",
					watchNamespaces:      []string{"a"}, kedaPrometheusAddress: "http://prom:9090", kedaThreshold: "7.5",
					metricsAddr: "0", probeAddr: ":9999", leaderElect: false,
					clusterProvider: "cluster-profile", providerNamespace: "fleet",
					memberTimeout: 3 * time.Second, tombstoneGrace: 30 * time.Second, scaleDownPatience: 45 * time.Second, leaseNamespace: "graves",
					maxConcurrentReconciles: 9, zap: zap.Options{Development: true}, kubeconfig: "/hub/config",
					healthInterval: 4 * time.Second, orphanScanInterval: time.Minute, deleteOrphans: true,
					secretRecheckInterval: 20 * time.Second,
					allowedImages:         []string{"ghcr.io/urutau-io/urutau", "registry.example.com/team/*"}, requireImageDigests: true, allowWeakPodSecurity: true,
					fenceImage: "reg/hub:2", fenceTTL: 20 * time.Second, fenceGrace: 5 * time.Second, fenceMargin: 3 * time.Second,
				}
			},
		},
		{
			name: "lease namespace follows the provider namespace",
			args: []string{"--coordinator-image=img", "--cluster-provider-namespace=fleet"},
			want: func(o *options) { o.providerNamespace, o.leaseNamespace = "fleet", "fleet" },
		},
		{
			// The single-cluster operator used the default for an empty value; manifests rely on it.
			name: "empty keda-threshold means the default",
			args: []string{"--coordinator-image=img", "--keda-threshold= "},
			want: func(*options) {},
		},
		{name: "keda-threshold not a number", args: []string{"--coordinator-image=img", "--keda-threshold=lots"}, wantErr: []string{`--keda-threshold must be a positive number, not "lots"`}},
		{name: "tombstone-grace zero", args: []string{"--coordinator-image=img", "--tombstone-grace=0s"}, wantErr: []string{"--tombstone-grace must be positive"}},
		{name: "scale-down-patience zero", args: []string{"--coordinator-image=img", "--scale-down-patience=0s"}, wantErr: []string{"--scale-down-patience must be positive"}},
		{name: "coordinator image missing", args: nil, wantErr: []string{"--coordinator-image is required"}},
		{name: "fence ttl not whole seconds", args: []string{"--coordinator-image=img", "--fence-ttl=2500ms"}, wantErr: []string{"--fence-ttl must be a whole number of seconds"}},
		{name: "fence grace negative", args: []string{"--coordinator-image=img", "--fence-grace=-1s"}, wantErr: []string{"--fence-grace must be a whole number of seconds"}},
		{name: "coordinator image blank", args: []string{"--coordinator-image= "}, wantErr: []string{"--coordinator-image is required"}},
		{
			name:    "every invalid value reported at once",
			args:    []string{"--cluster-provider=kind", "--keda-threshold=0", "--member-timeout=0s", "--tombstone-grace=-1s", "--max-concurrent-reconciles=0", "--field-manager=", "--cluster-provider-namespace=", "--webhook-port=70000"},
			wantErr: []string{"--coordinator-image", "--cluster-provider must be", "--keda-threshold", "--member-timeout", "--tombstone-grace", "--max-concurrent-reconciles", "--field-manager", "--cluster-provider-namespace", "--webhook-port must be a port number"},
		},
		{name: "bad server allow-list", args: []string{"--coordinator-image=img", "--member-server-allowlist=api.example:6443"}, wantErr: []string{"--member-server-allowlist", "without a port"}},
		{name: "bad image pattern", args: []string{"--coordinator-image=img", "--allowed-images=registry.example.com/*/x,Upper"},
			wantErr: []string{"--allowed-images", `image pattern "registry.example.com/*/x"`, `image pattern "Upper"`}},
		{name: "unknown flag", args: []string{"--coordinator-image=img", "--nope"}, wantErr: []string{"unknown flag: --nope"}},
		{name: "bad duration", args: []string{"--coordinator-image=img", "--member-timeout=soon"}, wantErr: []string{"member-timeout"}},
		{name: "positional argument", args: []string{"--coordinator-image=img", "serve"}, wantErr: []string{"unexpected arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, want one containing %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(options{}), cmp.Comparer(func(a, b zap.Options) bool {
				return a.Development == b.Development
			}), cmp.Comparer(func(a, b credentials.Allowlist) bool { return a.String() == b.String() })); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func mustAllowlist(patterns ...string) credentials.Allowlist {
	a, err := credentials.ParseAllowlist(patterns)
	if err != nil {
		panic(err)
	}
	return a
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		if _, err := parseFlags([]string{arg}); !errors.Is(err, pflag.ErrHelp) {
			t.Errorf("parseFlags(%s) = %v, want pflag.ErrHelp", arg, err)
		}
	}
	var out bytes.Buffer
	if err := run([]string{"--help"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hub runs the urutau fleet hub", "--coordinator-image", "--cluster-provider", "--zap-log-level", "--watch-namespaces"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %q:\n%s", want, out.String())
		}
	}
}

func TestRunRejectsBadFlagsBeforeTouchingAnyCluster(t *testing.T) {
	// No kubeconfig is needed to fail: validation comes first.
	t.Setenv("KUBECONFIG", "/nonexistent")
	err := run(nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--coordinator-image is required") {
		t.Fatalf("run() = %v, want the missing --coordinator-image error", err)
	}
}
