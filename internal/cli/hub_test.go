package cli

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/urutau-io/fleet/internal/testenv"
)

// runErr runs the plugin and returns stdout, stderr and the exit code.
func runErr(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(t.Context(), "kubectl urutau", args, Streams{Out: &out, Err: &errOut})
	return out.String(), errOut.String(), code
}

// checkConnectionFlags: --context, --as, --server and --request-timeout change how the plugin
// reaches the hub, as they do for kubectl.
func checkConnectionFlags(t *testing.T, hub *testenv.Cluster, kubeconfig string) {
	// A kubeconfig whose current context is a server that is not there; --context picks the hub.
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	hubContext := raw.CurrentContext
	raw.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	raw.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: raw.Contexts[hubContext].AuthInfo}
	raw.CurrentContext = "nowhere"
	two := filepath.Join(t.TempDir(), "two-contexts")
	if err := clientcmd.WriteToFile(*raw, two); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runErr(t, "members", "--kubeconfig", two); code != ExitError || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("members in context nowhere: exit code %d, stderr %q; want a failure to reach 127.0.0.1:1", code, stderr)
	}
	if out, _, code := runErr(t, "members", "--kubeconfig", two, "--context", hubContext); code != ExitUnhealthy || !strings.Contains(out, "eu-1") {
		t.Errorf("members --context %s: exit code %d, want the hub's members:\n%s", hubContext, code, out)
	}

	// --as: the hub answers as that user, who may read nothing.
	_, stderr, code := runErr(t, "status", "-n", "shop", "--kubeconfig", kubeconfig, "--as", "jane")
	if code != ExitError || !strings.Contains(stderr, `User "jane" cannot list resource "cdcpipelines"`) {
		t.Errorf("status --as jane: exit code %d, stderr %q; want Forbidden for jane", code, stderr)
	}

	// --server and --request-timeout: through a proxy that forwards nothing, a request gives up
	// after the timeout rather than hanging.
	u, err := url.Parse(hub.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := testenv.NewProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	server := "https://" + proxy.Addr()
	if out, _, code := runErr(t, "members", "--kubeconfig", kubeconfig, "--server", server); code != ExitUnhealthy || !strings.Contains(out, "eu-1") {
		t.Errorf("members --server %s (the proxy, forwarding): exit code %d:\n%s", server, code, out)
	}
	proxy.Hang()
	start := time.Now()
	_, stderr, code = runErr(t, "members", "--kubeconfig", kubeconfig, "--server", server, "--request-timeout", "1s")
	if took := time.Since(start); code != ExitError || took > 20*time.Second {
		t.Errorf("members --request-timeout 1s through a hung proxy: exit code %d after %s, stderr %q; want a failure within seconds", code, took, stderr)
	}
	proxy.Resume()
}

// checkCompletion: names complete from the hub.
func checkCompletion(t *testing.T, kubeconfig string) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", "-n", "shop", ""}, []string{"clicks", "orders"}},
		{[]string{"status", "-n", ""}, []string{"shop", "urutau-system"}},
		{[]string{"leave", ""}, []string{"eu-1", "gone", "us-1"}},
		{[]string{"join", "eu-1", "--member-context", ""}, nil}, // the test kubeconfig's one context, below
	} {
		args := append([]string{"__complete", "--kubeconfig", kubeconfig}, tc.args...)
		out, _, code := runErr(t, args...)
		if code != ExitOK {
			t.Errorf("%v: exit code %d", tc.args, code)
		}
		lines := strings.Split(out, "\n")
		for _, w := range tc.want {
			if !anyMatch(`^`+w+`$`, lines) {
				t.Errorf("%v completes %q, want %s among them", tc.args, out, w)
			}
		}
		if tc.want == nil && len(lines) < 3 {
			t.Errorf("%v completes %q, want the kubeconfig's contexts", tc.args, out)
		}
	}
}

// checkHubVersion: version reads the hub's release from its Deployment.
func checkHubVersion(t *testing.T, hub *testenv.Cluster, kubeconfig string) {
	ctx := t.Context()
	image := "ghcr.io/urutau-io/urutau-fleet-hub@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	labels := map[string]string{"app.kubernetes.io/name": "urutau-fleet-hub"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: HubDeployment,
			Labels: map[string]string{"app.kubernetes.io/name": "urutau-fleet-hub", LabelVersion: "v0.1.0"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "hub", Image: image}}}}},
	}
	mustCreate(ctx, t, hub, d)
	d.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 2}
	if err := hub.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}

	out, stderr, code := runErr(t, "version", "--kubeconfig", kubeconfig)
	if code != ExitOK || !strings.Contains(out, "Client Version: ") ||
		!strings.Contains(out, "Hub Version: v0.1.0 (Deployment urutau-system/urutau-fleet-hub, 2/2 ready, image "+image+")") {
		t.Errorf("version: exit code %d, stderr %q:\n%s", code, stderr, out)
	}
	out, _, _ = runErr(t, "version", "--kubeconfig", kubeconfig, "-o", "json")
	var v struct {
		ClientVersion struct{ Version string }
		HubVersion    struct {
			Version       string
			ReadyReplicas int
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.ClientVersion.Version == "" || v.HubVersion.Version != "v0.1.0" || v.HubVersion.ReadyReplicas != 2 {
		t.Errorf("version -o json (%v):\n%s", err, out)
	}
	out, stderr, code = runErr(t, "version", "--kubeconfig", kubeconfig, "--hub-namespace", "elsewhere")
	if code != ExitError || !strings.Contains(out, "Client Version: ") || !strings.Contains(stderr, "no Deployment urutau-fleet-hub runs in namespace elsewhere") {
		t.Errorf("version --hub-namespace elsewhere: exit code %d, stderr %q:\n%s", code, stderr, out)
	}
}

// checkNotInstalled removes the urutau CRDs: every command that reads the hub says that it is not
// installed and how to install it.
func checkNotInstalled(t *testing.T, hub *testenv.Cluster, kubeconfig string) {
	ctx := t.Context()
	for _, name := range []string{"cdcpipelines.urutau.io", "readerleases.urutau.io", "placementpolicies.urutau.io"} {
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := hub.Client.Delete(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(hub.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	want := "the urutau fleet hub is not installed on the cluster at https://" + u.Host + ": it serves no CDCPipeline API (urutau.io/v1alpha1)"
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, stderr, _ := runErr(t, "members", "--kubeconfig", kubeconfig)
		if strings.Contains(stderr, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the CRDs went, members still says:\n%s", stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	member := filepath.Join(t.TempDir(), "member")
	if err := os.WriteFile(member, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"members"}, {"status", "-A"}, {"status", "orders", "-n", "shop", "-o", "json"}, {"version"},
		{"join", "eu-2", "--member-kubeconfig", member}, {"leave", "eu-1"},
	} {
		out, stderr, code := runErr(t, append(args, "--kubeconfig", kubeconfig)...)
		if code != ExitError || !strings.Contains(stderr, want) ||
			!strings.Contains(stderr, "kubectl apply --server-side -f https://github.com/urutau-io/fleet/releases/latest/download/install.yaml") ||
			!strings.Contains(stderr, "helm install urutau-fleet") {
			t.Errorf("%v without the CRDs: exit code %d, stderr:\n%s", args, code, stderr)
		}
		if args[0] != "version" && out != "" {
			t.Errorf("%v without the CRDs printed:\n%s", args, out)
		}
	}
}

func TestInstallHint(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"v0.1.0", "kubectl apply --server-side -f https://github.com/urutau-io/fleet/releases/download/v0.1.0/install.yaml\n" +
			"or with Helm:\n  helm install urutau-fleet https://github.com/urutau-io/fleet/releases/download/v0.1.0/urutau-fleet-0.1.0.tgz --namespace urutau-system --create-namespace"},
		{"v1.2.3-rc.1", "https://github.com/urutau-io/fleet/releases/download/v1.2.3-rc.1/urutau-fleet-1.2.3-rc.1.tgz"},
		{"(devel)", "kubectl apply --server-side -f https://github.com/urutau-io/fleet/releases/latest/download/install.yaml\n" +
			"or with Helm:\n  helm install urutau-fleet https://github.com/urutau-io/fleet/releases/download/vX.Y.Z/urutau-fleet-X.Y.Z.tgz"},
		{"v0.0.0-20261201120000-abcdef123456", "releases/download/v0.0.0-20261201120000-abcdef123456/install.yaml"},
	} {
		if got := installHint(tc.version); !strings.Contains(got, tc.want) {
			t.Errorf("installHint(%q) =\n%s\nwant it to contain\n%s", tc.version, got, tc.want)
		}
	}
}

func TestHubVersionOf(t *testing.T) {
	deployment := func(label, image string, replicas *int32, ready int32) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: HubDeployment}}
		if label != "" {
			d.Labels = map[string]string{LabelVersion: label}
		}
		d.Spec.Replicas = replicas
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "sidecar", Image: "proxy:v9.9.9"}, {Name: "hub", Image: image}}
		d.Status.ReadyReplicas = ready
		return d
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want hubVersion
	}{
		{"the release's label", deployment("v0.1.0", "r/hub@sha256:abc", ptr.To[int32](2), 1),
			hubVersion{Version: "v0.1.0", Deployment: "urutau-system/urutau-fleet-hub", Image: "r/hub@sha256:abc", Replicas: 2, ReadyReplicas: 1}},
		{"no label: the image's release tag", deployment("", "r/hub:v0.2.0-rc.1", nil, 1),
			hubVersion{Version: "v0.2.0-rc.1", Deployment: "urutau-system/urutau-fleet-hub", Image: "r/hub:v0.2.0-rc.1", Replicas: 1, ReadyReplicas: 1}},
		{"from a checkout: unknown", deployment("", "ghcr.io/urutau-io/urutau-fleet-hub:latest", ptr.To[int32](2), 0),
			hubVersion{Version: "unknown", Deployment: "urutau-system/urutau-fleet-hub", Image: "ghcr.io/urutau-io/urutau-fleet-hub:latest", Replicas: 2}},
		{"a registry port is no tag", deployment("", "localhost:5000/hub", ptr.To[int32](1), 1),
			hubVersion{Version: "unknown", Deployment: "urutau-system/urutau-fleet-hub", Image: "localhost:5000/hub", Replicas: 1, ReadyReplicas: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hubVersionOf(tc.d); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSkew(t *testing.T) {
	for _, tc := range []struct {
		client, hub string
		warn        bool
	}{
		{"v0.1.0", "v0.1.3", false},
		{"v0.2.0", "v0.1.0", true},
		{"v1.1.0", "v0.1.0", true},
		{"(devel)", "v0.1.0", false},
		{"v0.1.0", "unknown", false},
	} {
		if got := skew(tc.client, tc.hub) != ""; got != tc.warn {
			t.Errorf("skew(%s, %s) warns %v, want %v", tc.client, tc.hub, got, tc.warn)
		}
	}
}
