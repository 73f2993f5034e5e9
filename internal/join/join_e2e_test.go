package join_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/cli"
	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/join"
	"github.com/urutau-io/fleet/internal/localfleet"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// TestJoinRunLeave is the whole life of a member on a local fleet (real control planes, pods on a
// fake node, the hub process): a cluster joins with `kubectl urutau join`, a pipeline placed by
// label runs there, leave is refused while it does, and `leave --drain` moves it off, removes the
// entry, revokes the hub's token and removes config/spoke.
func TestJoinRunLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local fleet")
	}
	ctx := t.Context()
	f, joinerKubeconfig := startFleet(t)
	hub, err := f.Client("hub")
	if err != nil {
		t.Fatal(err)
	}
	joiner := clientFor(t, joinerKubeconfig)
	hubKubeconfig := f.Hub.KubeconfigPath
	prepareMember(t, joiner)

	// A dry run writes nothing, anywhere.
	out := mustRun(t, cli.ExitOK, "join", "joiner", "--kubeconfig", hubKubeconfig, "--member-kubeconfig", joinerKubeconfig, "--dry-run", "--labels", "region=eu", "--namespaces", "shop")
	for _, want := range []string{"would apply clusterrole/urutau-fleet-member", "would apply rolebinding/urutau-fleet-member in shop",
		"would label namespace/shop urutau.io/fleet-managed=true", "would write secret/joiner"} {
		if !strings.Contains(out, want) {
			t.Errorf("join --dry-run does not say %q:\n%s", want, out)
		}
	}
	// Namespaces the hub never writes into, and namespaces the member does not have, are refused.
	mustFail(t, "--namespaces kube-system: the hub never writes there", "join", "joiner", "--kubeconfig", hubKubeconfig, "--member-kubeconfig", joinerKubeconfig, "--namespaces", "kube-system")
	mustFail(t, "--namespaces web: the member has no such namespace", "join", "joiner", "--kubeconfig", hubKubeconfig, "--member-kubeconfig", joinerKubeconfig, "--namespaces", "web")
	if err := joiner.Get(ctx, client.ObjectKey{Name: join.SpokeNamespace}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a dry run the member has namespace %s (err %v)", join.SpokeNamespace, err)
	}

	out = mustRun(t, cli.ExitOK, "join", "joiner", "--kubeconfig", hubKubeconfig, "--member-kubeconfig", joinerKubeconfig,
		"--labels", "region=eu", "--namespaces", "shop", "--token-ttl", "1h")
	if strings.Contains(out, "note:") {
		t.Errorf("the local fleet's open PlacementPolicy lets shop place on joiner, yet join notes:\n%s", out)
	}
	entry := checkEntry(t, hub, joiner)
	checkOpened(t, joiner, "shop", true)

	// The same name for another cluster (the hub's own) is refused.
	mustRun(t, cli.ExitError, "join", "joiner", "--kubeconfig", hubKubeconfig, "--member-kubeconfig", hubKubeconfig)

	p := pipeline()
	if err := hub.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "the coordinator to run on the joined member", func() bool {
		sts := &appsv1.StatefulSet{}
		got := &urutauv1alpha1.CDCPipeline{}
		return joiner.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders-coordinator"}, sts) == nil && sts.Status.ReadyReplicas >= 1 &&
			hub.Get(ctx, client.ObjectKeyFromObject(p), got) == nil && len(got.Status.Clusters) == 1 && got.Status.Clusters[0].Phase == urutauv1alpha1.ClusterReady
	})
	out = mustRun(t, cli.ExitOK, "members", "--kubeconfig", hubKubeconfig)
	if !anyLine(out, `^joiner\s+\S+\s+True\s+True\s+(within )?\S+\s+1\s+1\s+0$`) {
		t.Errorf("members does not show joiner reachable and engaged:\n%s", out)
	}

	// Refused while a pipeline runs there.
	mustRun(t, cli.ExitError, "leave", "joiner", "--kubeconfig", hubKubeconfig, "--member-kubeconfig", joinerKubeconfig)
	mustRun(t, cli.ExitOK, "leave", "joiner", "--drain", "--drain-timeout", "90s", "--kubeconfig", hubKubeconfig, "--member-kubeconfig", joinerKubeconfig)
	checkLeft(t, hub, joiner, entry)
	checkOpened(t, joiner, "shop", false)
}

// checkOpened: namespace ns of the member is open to the fleet (the hub's RoleBinding there and
// the opt-in label), or neither.
func checkOpened(t *testing.T, member client.Client, ns string, open bool) {
	t.Helper()
	n := &corev1.Namespace{}
	if err := member.Get(t.Context(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	if got := n.Labels[urutauv1alpha1.LabelFleetManaged] == "true"; got != open {
		t.Errorf("namespace %s labels %v, want open=%v", ns, n.Labels, open)
	}
	// Opened with the restricted Pod Security level (the coordinator still runs there: the
	// test's pipeline becomes Ready); closed, join's label goes with it.
	if got := n.Labels[tenancy.LabelPodSecurityEnforce] == tenancy.PodSecurityRestricted; got != open {
		t.Errorf("namespace %s labels %v, want %s=%s %v", ns, n.Labels, tenancy.LabelPodSecurityEnforce, tenancy.PodSecurityRestricted, open)
	}
	err := member.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: join.SpokeClusterRole}, &rbacv1.RoleBinding{})
	if open && err != nil {
		t.Errorf("no RoleBinding of the hub in %s: %v", ns, err)
	}
	if !open && !apierrors.IsNotFound(err) {
		t.Errorf("the hub's RoleBinding is still in %s (err %v)", ns, err)
	}
}

// startFleet starts a hub (with its process) and, apart, a cluster that is not a member yet.
func startFleet(t *testing.T) (*localfleet.Fleet, string) {
	t.Helper()
	f, opts := startHub(t)
	opts.Names = []string{"joiner"}
	ctx := t.Context()
	t.Cleanup(func() { _ = localfleet.Delete(context.WithoutCancel(ctx), opts) })
	clusters, err := localfleet.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, clusters[0].KubeconfigPath
}

// startHub starts a local fleet of a hub cluster alone, with the hub process; it returns the
// options for more clusters of the same fleet.
func startHub(t *testing.T) (*localfleet.Fleet, localfleet.Options) {
	t.Helper()
	ctx := t.Context()
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test`")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	hubBinary := filepath.Join(work, "hub")
	build := exec.CommandContext(ctx, "go", "build", "-o", hubBinary, "./cmd/hub")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/hub: %v\n%s", err, out)
	}
	opts := localfleet.Options{BinDir: bin, WorkDir: filepath.Join(work, "fleet"), Log: t.Logf}
	f, err := localfleet.Up(ctx, localfleet.FleetOptions{
		Options: opts, RepoRoot: root, HubBinary: hubBinary, Namespaces: []string{"shop"},
		HubArgs: []string{"--coordinator-image=ghcr.io/urutau-io/urutau:e2e", "--leader-elect=false",
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--member-timeout=5s"},
	})
	if f != nil {
		t.Cleanup(func() { _ = f.Down(context.WithoutCancel(ctx)) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return f, opts
}

func clientFor(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: localfleet.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// prepareMember does what the member's own platform team does: the pipeline's namespace and the
// Secret it references, opened to pipelines of the fleet.
func prepareMember(t *testing.T, c client.Client) {
	t.Helper()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders-mysql", Labels: map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}},
			StringData: map[string]string{"uri": "mysql://cdc@db:3306/shop"}},
	} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

func pipeline() *urutauv1alpha1.CDCPipeline {
	inline := `{"pipeline":"orders","source":{"kind":"mysql","serverId":"7101"},"sink":{"type":"iceberg+rest","uri":"http://catalog.lake:8181/api/catalog","namespace":"raw","warehouse":"s3://lake/orders"},"tables":[{"source":"shop.orders","target":"raw.orders","primaryKey":["id"]}]}`
	return &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: []byte(inline)}},
				Secrets:    urutauv1alpha1.Secrets{Source: "orders-mysql"},
			},
			Placement: urutauv1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
		},
	}
}

// checkEntry: the hub's entry for the member carries its labels and identity, and a kubeconfig
// with a token, not the admin credentials join was run with.
func checkEntry(t *testing.T, hub, joiner client.Client) *corev1.Secret {
	t.Helper()
	ctx := t.Context()
	s := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: localfleet.HubNamespace, Name: "joiner"}, s); err != nil {
		t.Fatal(err)
	}
	ks := &corev1.Namespace{}
	if err := joiner.Get(ctx, client.ObjectKey{Name: "kube-system"}, ks); err != nil {
		t.Fatal(err)
	}
	if s.Labels["region"] != "eu" || s.Labels["sigs.k8s.io/multicluster-runtime-kubeconfig"] != "true" || s.Annotations[join.AnnotationClusterID] != string(ks.UID) {
		t.Errorf("entry labels %v annotations %v; want region=eu and the identity %s", s.Labels, s.Annotations, ks.UID)
	}
	cfg, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		if u.Token == "" || len(u.ClientCertificateData) > 0 {
			t.Errorf("the hub's kubeconfig holds %+v, want a token only", u)
		}
	}
	if _, err := credentials.ScreenKubeconfig(s.Data["kubeconfig"], credentials.Policy{}); err != nil {
		t.Errorf("the hub would refuse the kubeconfig join wrote: %v", err)
	}
	if _, err := time.Parse(time.RFC3339, s.Annotations[join.AnnotationCredentialsExpireAt]); err != nil {
		t.Errorf("annotation %s: %v", join.AnnotationCredentialsExpireAt, err)
	}
	return s
}

// checkLeft: the pipeline left the member, the entry is gone, the token no longer works, and
// config/spoke is going.
func checkLeft(t *testing.T, hub, joiner client.Client, entry *corev1.Secret) {
	t.Helper()
	ctx := t.Context()
	if err := hub.Get(ctx, client.ObjectKeyFromObject(entry), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the entry is still on the hub (err %v)", err)
	}
	if err := joiner.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders-coordinator"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("the coordinator is still on the member after the drain (err %v)", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(entry.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the hub's token to be revoked", func() bool {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
		return apierrors.IsUnauthorized(err)
	})
	waitFor(t, 60*time.Second, "config/spoke to leave the member", func() bool {
		err := joiner.Get(ctx, client.ObjectKey{Name: join.SpokeNamespace}, &corev1.Namespace{})
		crb := joiner.Get(ctx, client.ObjectKey{Name: join.SpokeClusterRole}, &rbacv1.ClusterRole{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(crb)
	})
}

func mustRun(t *testing.T, want int, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(t.Context(), "kubectl urutau", args, cli.Streams{Out: &out, Err: &errOut})
	t.Logf("kubectl urutau %s -> %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	if code != want {
		t.Fatalf("kubectl urutau %s: exit code %d, want %d\n%s%s", args[0], code, want, out.String(), errOut.String())
	}
	return out.String()
}

// mustFail runs a command that must fail with an error saying want.
func mustFail(t *testing.T, want string, args ...string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(t.Context(), "kubectl urutau", args, cli.Streams{Out: &out, Err: &errOut})
	t.Logf("kubectl urutau %s -> %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	if code != cli.ExitError || !strings.Contains(errOut.String(), want) {
		t.Errorf("kubectl urutau %s: exit code %d, error %q; want %d and an error saying %q", strings.Join(args, " "), code, errOut.String(), cli.ExitError, want)
	}
}

func anyLine(out, pattern string) bool {
	return regexp.MustCompile(`(?m)` + pattern).MatchString(out)
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
