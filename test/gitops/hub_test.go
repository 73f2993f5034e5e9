package gitops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/testenv"
	"github.com/urutau-io/fleet/internal/webhook"
)

// fieldOwner is the field manager Flux's kustomize-controller applies with.
const fieldOwner = client.FieldOwner("kustomize-controller")

// hub is a real kube-apiserver + etcd with the CRDs every test cluster gets (testenv.CRDPaths)
// and the hub's validating webhook registered from config/hub/webhook and served in-process.
// testenv.Start installs no webhook, hence this environment of its own.
type hub struct {
	client     client.Client
	warnings   *testenv.WarningRecorder
	kubeconfig string
}

func startHub(t *testing.T) *hub {
	t.Helper()
	requireAssets(t)
	ctrl.SetLogger(logr.Discard())
	crds, err := testenv.CRDPaths(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: os.Getenv(testenv.AssetsEnv),
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                testenv.Scheme(),
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(RepoRoot(), "config", "hub", "webhook")},
		},
		ControlPlaneStopTimeout: 10 * time.Second,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		t.Fatalf("starting the hub API server: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})

	wo := &env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.SetupWithManager(mgr, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for mgr.GetWebhookServer().StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the webhook server did not start within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	h := &hub{warnings: &testenv.WarningRecorder{}}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = nil
	wcfg.WarningHandlerWithContext = h.warnings
	if h.client, err = client.New(wcfg, client.Options{Scheme: env.Scheme}); err != nil {
		t.Fatal(err)
	}
	h.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(h.kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cdc"}}
	if err := h.client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return h
}

// kubectl runs the control plane's kubectl against the hub.
func (h *hub) kubectl(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(os.Getenv(testenv.AssetsEnv), "kubectl"), append([]string{"--kubeconfig", h.kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// TestGitOpsOnARealHub applies what the GitOps tools would apply to a real hub API server with
// the CRD and the admission webhook, and reads the results the way the tools do.
func TestGitOpsOnARealHub(t *testing.T) {
	h := startHub(t)

	t.Run("overlays", func(t *testing.T) { testOverlaysOnHub(t, h) })
	t.Run("samples", func(t *testing.T) { testSamplesOnHub(t, h) })
	t.Run("kubectl", func(t *testing.T) { testKubectlDocs(t, h) })
}

// testOverlaysOnHub: every overlay is admitted by the webhook (called directly, then through the
// API server) and the CRD schema, together (source identities unique across the hub), stored
// unchanged, stays at generation 1 when re-applied as a GitOps tool does at every sync, and right
// after submit no tool reports it healthy.
func testOverlaysOnHub(t *testing.T, h *hub) {
	ctx := t.Context()
	built := buildOverlays(t)
	validator := &webhook.CDCPipelineValidator{Client: h.client}
	for _, o := range built {
		t.Run(o.dir, func(t *testing.T) {
			warns, err := validator.ValidateCreate(ctx, o.typed.DeepCopy())
			if err != nil {
				t.Fatalf("the webhook's validator rejects it: %v", err)
			}
			assertWarnings(t, "validator", warns, o.warnings)

			h.warnings.Take()
			if err := h.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.obj.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
				t.Fatalf("the hub rejects it: %v", err)
			}
			assertWarnings(t, "API server", h.warnings.Take(), o.warnings)

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.obj.GroupVersionKind())
			if err := h.client.Get(ctx, client.ObjectKeyFromObject(o.obj), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonValue(t, o.obj.Object["spec"]), jsonValue(t, got.Object["spec"])); diff != "" {
				t.Errorf("the hub changed or pruned the spec (-sent +stored):\n%s", diff)
			}

			// Re-applying the same manifest (every sync interval) changes nothing. The first write
			// after create may persist the status the CRD defaults on read; after that, nothing.
			for range 2 {
				if err := h.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.obj.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.client.Get(ctx, client.ObjectKeyFromObject(o.obj), got); err != nil {
				t.Fatal(err)
			}
			if err := h.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.obj.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
			again := got.DeepCopy()
			if err := h.client.Get(ctx, client.ObjectKeyFromObject(o.obj), again); err != nil {
				t.Fatal(err)
			}
			if again.GetGeneration() != 1 || again.GetResourceVersion() != got.GetResourceVersion() {
				t.Errorf("re-applying moved generation to %d / resourceVersion %s -> %s",
					again.GetGeneration(), got.GetResourceVersion(), again.GetResourceVersion())
			}

			// Submitted, no hub controller yet: every reader waits.
			if a, err := ArgoHealth(again); err != nil || a.Status != "Progressing" {
				t.Errorf("Argo CD right after submit: %+v, %v; want Progressing", a, err)
			}
			if f, err := FluxHealth(again); err != nil || f != status.InProgressStatus {
				t.Errorf("Flux right after submit: %s, %v; want InProgress", f, err)
			}
			// The CRD defaults status to {observedGeneration: 0}, so kstatus sees generation 1 not
			// yet observed.
			if k, msg, err := testenv.KStatus(again); err != nil || k != "InProgress" {
				t.Errorf("kstatus right after submit: %s %q, %v", k, msg, err)
			}
		})
	}
}

func assertWarnings(t *testing.T, who string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s warnings: got %q, want %d matching %q", who, got, len(want), want)
		return
	}
	for _, frag := range want {
		if !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, frag) }) {
			t.Errorf("%s warnings %q: none contains %q", who, got, frag)
		}
	}
}

// testSamplesOnHub replays every sample on a real object: created through the webhook, its spec
// changed until its generation is the sample's, deleted when the sample is being deleted, and its
// status written through the status subresource as the hub writes it. The CRD must accept each
// status as written, and Argo CD, kstatus and Flux must conclude on the stored object what they
// conclude on the sample.
func testSamplesOnHub(t *testing.T, h *hub) {
	ctx := t.Context()
	argo := map[string]Health{}
	for _, tc := range readHealthTests(t).Tests {
		argo[filepath.Base(tc.InputPath)] = tc.HealthStatus
	}
	for _, name := range sampleFiles(t) {
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			sample, err := ReadObject(filepath.Join(RepoRoot(), CustomizationDir, "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": sample.GetAPIVersion(), "kind": sample.GetKind(),
				"metadata": map[string]any{"name": sample.GetName(), "namespace": sample.GetNamespace()},
				"spec":     sample.Object["spec"],
			}}
			obj.SetFinalizers(sample.GetFinalizers())
			if err := h.client.Create(ctx, obj); err != nil {
				t.Fatalf("creating: %v", err)
			}
			for i := obj.GetGeneration(); i < sample.GetGeneration(); i++ {
				patch := fmt.Sprintf(`{"spec":{"coordinator":{"snapshot":{"chunkSize":%d}}}}`, 1000*(i+1))
				if err := h.client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
					t.Fatalf("changing the spec: %v", err)
				}
			}
			if obj.GetGeneration() != sample.GetGeneration() {
				t.Fatalf("generation %d, want %d", obj.GetGeneration(), sample.GetGeneration())
			}
			if sample.GetDeletionTimestamp() != nil {
				if err := h.client.Delete(ctx, obj); err != nil {
					t.Fatal(err)
				}
				if err := h.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
					t.Fatal(err)
				}
			}
			if st, ok := sample.Object["status"]; ok {
				obj.Object["status"] = st
				if err := h.client.Status().Update(ctx, obj); err != nil {
					t.Fatalf("the CRD rejects the sample's status: %v", err)
				}
			}
			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(sample.GroupVersionKind())
			if err := h.client.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonValue(t, sample.Object["status"]), jsonValue(t, stored.Object["status"])); diff != "" {
				t.Errorf("the hub stored another status (-sample +stored):\n%s", diff)
			}
			got, err := ArgoHealth(stored)
			if err != nil {
				t.Fatal(err)
			}
			if got != argo[name] {
				t.Errorf("Argo CD on the stored object: got %+v, want %+v", got, argo[name])
			}
			assertVerdict(t, stored, verdicts[name])
		})
	}
}

// testKubectlDocs runs the commands of docs/is-my-pipeline-running.md against the stored samples.
func testKubectlDocs(t *testing.T, h *hub) {
	out, err := h.kubectl("get", "cdcpipelines", "-n", "cdc")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"NAME", "READY", "REASON", "CLUSTERS", "TERMINATED", "AGE"}) {
		t.Errorf("columns: %v", got)
	}
	row := func(name string) []string {
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name {
				return f
			}
		}
		t.Fatalf("no row for %s in:\n%s", name, out)
		return nil
	}
	expect(t, "healthy row", row("healthy")[:4], []string{"healthy", "True", "Ready", "2/2"})
	expect(t, "terminated row", row("terminated")[:5], []string{"terminated", "False", "Terminated", "0/2", "SecretValidationFailed"})
	expect(t, "first-rollout row", row("first-rollout")[:4], []string{"first-rollout", "False", "WaitingForCoordinator", "0/2"})

	// -o wide adds the generations, the members and the Ready message (docs/is-my-pipeline-running.md).
	out, err = h.kubectl("get", "cdcp", "-n", "cdc", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(strings.SplitN(out, "\n", 2)[0]); !slices.Equal(got, []string{"NAME", "READY", "REASON", "CLUSTERS", "TERMINATED", "AGE", "GENERATION", "OBSERVED", "MEMBERS", "MESSAGE"}) {
		t.Errorf("-o wide columns: %v", got)
	}

	out, err = h.kubectl("get", "cdcpipeline", "member-unreachable", "-n", "cdc", "-o",
		`jsonpath={range .status.clusters[*]}{.name}{"\t"}{.phase}{"\t"}{.coordinatorReadyReplicas}{"\t"}{.message}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "per-member jsonpath", out,
		"eu-1\tReady\t1\t\nus-1\tUnreachable\t\tcluster does not answer: dial tcp 10.0.3.7:6443: connect: connection refused\n")

	out, err = h.kubectl("get", "cdcpipeline", "terminated", "-n", "cdc", "-o",
		`jsonpath={.status.terminated.reason}{" on "}{.status.terminated.cluster}{": "}{.status.terminated.message}{"\n"}`)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "terminated jsonpath", out, "SecretValidationFailed on us-1: Secret cdc/orders-mysql in cluster \"us-1\" has no key \"uri\"\n")

	out, err = h.kubectl("describe", "cdcpipeline", "terminated", "-n", "cdc")
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"Conditions:", "Stalled", "Terminated:", "SecretValidationFailed"} {
		if !strings.Contains(out, frag) {
			t.Errorf("kubectl describe lacks %q:\n%s", frag, out)
		}
	}

	if _, err := h.kubectl("wait", "--for=condition=Ready", "cdcpipeline/healthy", "-n", "cdc", "--timeout=10s"); err != nil {
		t.Errorf("kubectl wait on a ready pipeline: %v", err)
	}
	// A Ready=True left from generation 2 does not satisfy kubectl wait at generation 3.
	if _, err := h.kubectl("wait", "--for=condition=Ready", "cdcpipeline/new-generation", "-n", "cdc", "--timeout=2s"); err == nil {
		t.Error("kubectl wait took a Ready condition of an older generation")
	}

	if _, err := h.kubectl("patch", "cdcpipeline", "terminated", "-n", "cdc", "--subresource=status", "--type=merge",
		"-p", `{"status":{"terminated":null}}`); err != nil {
		t.Fatalf("clearing the termination: %v", err)
	}
	out, err = h.kubectl("get", "cdcpipeline", "terminated", "-n", "cdc", "-o", "jsonpath={.status.terminated}")
	if err != nil || out != "" {
		t.Errorf("status.terminated after clearing: %q, %v", out, err)
	}
}

// jsonValue round-trips v through JSON so both sides compare with the same number types.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
