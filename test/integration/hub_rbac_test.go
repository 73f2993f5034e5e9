package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/inventory/clusterprofile"
	"github.com/urutau-io/fleet/internal/inventory/inventorytest"
	"github.com/urutau-io/fleet/internal/tenancy"
	"github.com/urutau-io/fleet/internal/testenv"
)

const (
	hubNS   = "urutau-system"
	hubUser = "system:serviceaccount:urutau-system:urutau-fleet-hub"
)

// notYetUsed are shipped rights no code path of this tree exercises yet, each with the reason it
// ships anyway. Anything else shipped and unused fails TestShippedRBAC.
var notYetUsed = map[string]string{
	"urutau.io/readerleases":     "the lease per source identity (DESIGN.md §5 rule 3) is the reconciler's next step; its resource is granted ahead",
	"events.k8s.io/events patch": "patch only turns a repeated event into a series, which a short run does not repeat",
	"/events patch":              "the same, for the core events API",
}

// TestShippedRBAC runs the hub binary on a real API server with exactly the RBAC config/hub/self-signed
// ships, as its own ServiceAccount, through every path that touches the hub cluster: both member
// providers, leader election, the self-signed certificate, admission (tenancy, uniqueness), a
// placement under its ReaderLease, deletion with cleanup, and the authenticated metrics endpoint. The API server's audit log then says what the hub did: it must never have
// been refused (the code needs nothing that is not shipped), and every verb shipped must have
// been used (nothing is shipped that the code does not need), but for notYetUsed.
func TestShippedRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real API servers and the hub")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	ctx := t.Context()
	work := t.TempDir()
	auditLog := filepath.Join(work, "audit.log")
	cfg := startAudited(t, work, auditLog)
	// A path that fails half way is most likely a missing right: say which, whatever failed.
	defer func() {
		if t.Failed() {
			_, refused := readAudit(t, auditLog)
			for _, r := range refused {
				t.Errorf("the hub was refused %s: the code needs a right that is not shipped", r)
			}
		}
	}()
	c, err := client.New(cfg, client.Options{Scheme: rbacScheme()})
	if err != nil {
		t.Fatal(err)
	}
	members, err := testenv.Start(ctx, "rbac-member")
	if err != nil {
		t.Fatal(err)
	}
	member := members[0]
	t.Cleanup(func() { _ = member.Stop() })
	bin := buildHub(t, work)

	webhookPort, metricsPort := freePort(t), freePort(t)
	shipped := installShipped(t, c, webhookPort)
	prepareFleet(t, c, member)
	kubeconfig := hubKubeconfig(t, c, cfg, work)

	// Run 1: the kubeconfig provider, through a pipeline's whole life.
	hub := startHubProcess(t, bin, work, "kubeconfig", kubeconfig, webhookPort, metricsPort)
	exercise(t, c, member, metricsPort)
	hub.stop(t)

	// Run 2: the ClusterProfile provider engaging the same member.
	if err := inventorytest.InstallClusterProfileCRD(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	profile := &clusterinventoryv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: "member-a"},
		Spec:       clusterinventoryv1alpha1.ClusterProfileSpec{ClusterManager: clusterinventoryv1alpha1.ClusterManager{Name: "test"}},
	}
	mustDo(t, c.Create(ctx, profile))
	profile.Status.AccessProviders = []clusterinventoryv1alpha1.AccessProvider{
		clusterprofile.NewAccessProvider(member.Config.Host, member.Config.CAData, clusterprofile.SecretRef{Name: "member-a"})}
	mustDo(t, c.Status().Update(ctx, profile))
	hub = startHubProcess(t, bin, work, "cluster-profile", kubeconfig, webhookPort, 0)
	waitAudited(t, auditLog, "multicluster.x-k8s.io/clusterprofiles", "watch")
	hub.stop(t)

	used, refused := readAudit(t, auditLog)
	if len(refused) > 0 {
		t.Fatalf("the hub was refused rights the code needs (listed below)")
	}
	for _, need := range shipped {
		if used[need.keyWithName()] { // a named right is used only on that name
			continue
		}
		if watched := need; need.verb == "list" {
			// Informers stream their initial list through the watch (WatchList) on this API
			// server; one that does not serve streaming lists gets a LIST instead.
			if watched.verb = "watch"; used[watched.keyWithName()] {
				continue
			}
		}
		if why, ok := notYetUsed[need.group+"/"+need.resource]; ok {
			t.Logf("shipped, not yet used: %s (%s)", need, why)
			continue
		}
		if why, ok := notYetUsed[need.group+"/"+need.resource+" "+need.verb]; ok {
			t.Logf("shipped, not used in this run: %s (%s)", need, why)
			continue
		}
		t.Errorf("shipped but never used by the hub: %s", need)
	}
}

// right is one verb on one resource, as shipped (in namespace, on name when set).
type right struct {
	group, resource, verb, namespace, name string
}

func (r right) key() string { return r.group + "/" + r.resource + " " + r.verb + " " + r.namespace }
func (r right) keyWithName() string {
	if r.name == "" {
		return r.key()
	}
	return r.key() + " " + r.name
}
func (r right) String() string {
	s := r.verb + " " + r.group + "/" + r.resource
	if r.namespace != "" {
		s += " in " + r.namespace
	}
	if r.name != "" {
		s += " named " + r.name
	}
	return s
}

// startAudited starts the hub API server with an audit log of the hub's own requests.
func startAudited(t *testing.T, work, auditLog string) *rest.Config {
	t.Helper()
	policy := filepath.Join(work, "audit-policy.yaml")
	mustDo(t, os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["`+hubUser+`"]
- level: None
`), 0o600))
	crds, err := testenv.CRDPaths(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: os.Getenv(testenv.AssetsEnv), CRDDirectoryPaths: crds,
		ErrorIfCRDPathMissing: true, ControlPlaneStopTimeout: 3 * time.Second}
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).Set("audit-log-path", auditLog).Set("audit-log-format", "json")
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}

func rbacScheme() *runtime.Scheme {
	s := testenv.Scheme()
	_ = clusterinventoryv1alpha1.AddToScheme(s)
	return s
}

// installShipped applies config/hub/self-signed but the Deployment, and points the webhook at the
// hub process on this machine. It returns every right bound to the hub's ServiceAccount.
func installShipped(t *testing.T, c client.Client, webhookPort int) []right {
	t.Helper()
	objs := kustomizeBuild(t, "../../config/hub/self-signed")
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	var roles []*unstructured.Unstructured
	bound := map[string]bool{} // "Role/ns/name", "ClusterRole//name"
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition", "Deployment", "PodDisruptionBudget", "Service":
			continue
		case "ValidatingWebhookConfiguration":
			url := fmt.Sprintf("https://127.0.0.1:%d/validate-urutau-io-v1alpha1-cdcpipeline", webhookPort)
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for i := range hooks {
				h := hooks[i].(map[string]any)
				h["clientConfig"] = map[string]any{"url": url}
			}
			mustDo(t, unstructured.SetNestedSlice(o.Object, hooks, "webhooks"))
		case "Role", "ClusterRole":
			roles = append(roles, o)
		case "RoleBinding", "ClusterRoleBinding":
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			ref, _, _ := unstructured.NestedStringMap(o.Object, "roleRef")
			for _, s := range subjects {
				sm := s.(map[string]any)
				if sm["kind"] == "ServiceAccount" && sm["name"] == "urutau-fleet-hub" && sm["namespace"] == hubNS {
					ns := ""
					if ref["kind"] == "Role" {
						ns = o.GetNamespace()
					}
					bound[ref["kind"]+"/"+ns+"/"+ref["name"]] = true
				}
			}
		}
		mustDo(t, c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership))
	}
	var out []right
	for _, r := range roles {
		if !bound[r.GetKind()+"/"+r.GetNamespace()+"/"+r.GetName()] {
			continue
		}
		raw, _ := json.Marshal(r.Object)
		var role rbacv1.ClusterRole // a Role's rules have the same shape
		mustDo(t, json.Unmarshal(raw, &role))
		for _, rule := range role.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						names := rule.ResourceNames
						if len(names) == 0 {
							names = []string{""}
						}
						for _, n := range names {
							out = append(out, right{group: g, resource: res, verb: v, namespace: r.GetNamespace(), name: n})
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no rights bound to the hub's ServiceAccount in config/hub/self-signed")
	}
	return out
}

// prepareFleet: a namespace for pipelines on the hub and in the member, an open PlacementPolicy,
// and the member's Secret.
func prepareFleet(t *testing.T, c client.Client, member *testenv.Cluster) {
	t.Helper()
	ctx := t.Context()
	for _, cl := range []client.Client{c, member.Client} {
		mustDo(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop",
			Labels: map[string]string{urutauv1alpha1.LabelFleetManaged: "true", tenancy.LabelPodSecurityEnforce: tenancy.PodSecurityRestricted}}}))
	}
	mustDo(t, member.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders-mysql",
		Labels: map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}}, StringData: map[string]string{"uri": "mysql://u@db:3306/shop"}}))
	mustDo(t, c.Create(ctx, &urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: "open"},
		Spec: urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, ClusterSelector: &metav1.LabelSelector{}}}))
	kc, err := member.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, c.Create(ctx, inventory.NewKubeconfigSecret(hubNS, "member-a", kc, nil, nil)))
	// The health record of a member that left while no hub ran: the hub removes it.
	mustDo(t, c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: urutauv1alpha1.MemberHealthPrefix + "departed",
		Labels:      map[string]string{urutauv1alpha1.LabelMemberHealth: "true"},
		Annotations: map[string]string{urutauv1alpha1.AnnotationMember: "departed", urutauv1alpha1.AnnotationReachable: "False"}}}))
}

// hubKubeconfig is a kubeconfig with a token of the hub's ServiceAccount.
func hubKubeconfig(t *testing.T, c client.Client, cfg *rest.Config, work string) string {
	t.Helper()
	return saKubeconfig(t, c, cfg, work, "urutau-fleet-hub")
}

func saKubeconfig(t *testing.T, c client.Client, cfg *rest.Config, work, sa string) string {
	t.Helper()
	path := filepath.Join(work, sa+".kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: saToken(t, c, sa)}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: sa}
	kc.CurrentContext = "hub"
	mustDo(t, clientcmd.WriteToFile(*kc, path))
	return path
}

func saToken(t *testing.T, c client.Client, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: name}}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sa), sa); err != nil {
		mustDo(t, c.Create(t.Context(), sa))
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	mustDo(t, c.SubResource("token").Create(t.Context(), sa, tr))
	return tr.Status.Token
}

type hubProcess struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

func startHubProcess(t *testing.T, bin, work, provider, kubeconfig string, webhookPort, metricsPort int) *hubProcess {
	t.Helper()
	metrics := "0"
	if metricsPort != 0 {
		metrics = fmt.Sprintf("127.0.0.1:%d", metricsPort)
	}
	logPath := filepath.Join(work, "hub-"+provider+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--coordinator-image=img", "--kubeconfig="+kubeconfig, "--cluster-provider="+provider,
		"--leader-elect=true", "--webhook-self-signed", fmt.Sprintf("--webhook-port=%d", webhookPort),
		"--webhook-cert-dir="+filepath.Join(work, "certs-"+provider), "--webhook-cert-hosts=127.0.0.1",
		"--metrics-bind-address="+metrics, "--health-probe-bind-address=0",
		"--member-timeout=2s", "--scale-down-patience=1s") // no StatefulSet controller runs in the member
	cmd.Stdout, cmd.Stderr = logFile, logFile
	mustDo(t, cmd.Start())
	h := &hubProcess{cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() { h.done <- cmd.Wait(); _ = logFile.Close() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(90 * time.Second)
	for !portOpen(webhookPort) {
		select {
		case err := <-h.done:
			t.Fatalf("the hub exited: %v\n%s", err, tailFile(logPath))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub's webhook did not come up\n%s", tailFile(logPath))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return h
}

// stop ends the hub as Kubernetes would (SIGTERM): it releases its Lease on the way out.
func (h *hubProcess) stop(t *testing.T) {
	t.Helper()
	_ = h.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-h.done:
		if err != nil {
			t.Logf("the hub exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the hub did not stop within 30s\n%s", tailFile(h.log))
		_ = h.cmd.Process.Kill()
	}
}

// exercise drives the paths the hub takes on the hub cluster.
func exercise(t *testing.T, c client.Client, member *testenv.Cluster, metricsPort int) {
	t.Helper()
	ctx := t.Context()
	p := rbacPipeline("orders", 7001, "member-a")
	waitFor(t, 60*time.Second, "the webhook admits a pipeline", func() error { return c.Create(ctx, p) })
	waitFor(t, 60*time.Second, "orders applied to member-a", func() error { return memberPhase(ctx, c, p, "member-a", urutauv1alpha1.ClusterApplied) })
	waitFor(t, 30*time.Second, "member-a's health record, and none for a member that left", func() error {
		rec := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: urutauv1alpha1.MemberHealthPrefix + "member-a"}, rec); err != nil {
			return err
		}
		if rec.Annotations[urutauv1alpha1.AnnotationReachable] != "True" {
			return fmt.Errorf("member-a's record: %v", rec.Annotations)
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: urutauv1alpha1.MemberHealthPrefix + "departed"}, &coordinationv1.Lease{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the record of a member that left is still there (%w)", err)
		}
		return nil
	})

	waitFor(t, 30*time.Second, "orders' ReaderLease", func() error {
		got := &urutauv1alpha1.CDCPipeline{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if got.Status.ReaderLease == "" {
			return fmt.Errorf("no status.readerLease yet")
		}
		return c.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: got.Status.ReaderLease}, &urutauv1alpha1.ReaderLease{})
	})

	checkMetricsEndpoint(t, c, metricsPort)

	mustDo(t, c.Delete(ctx, p))
	waitFor(t, 60*time.Second, "orders deleted, and its ReaderLease", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &urutauv1alpha1.CDCPipeline{}); err == nil {
			return fmt.Errorf("orders still there")
		}
		var leases urutauv1alpha1.ReaderLeaseList
		if err := c.List(ctx, &leases, client.InNamespace(hubNS)); err != nil {
			return err
		}
		if len(leases.Items) > 0 {
			return fmt.Errorf("%d ReaderLeases left", len(leases.Items))
		}
		return nil
	})
}

// checkMetricsEndpoint: the metrics are served only to callers allowed get on /metrics.
func checkMetricsEndpoint(t *testing.T, c client.Client, port int) {
	t.Helper()
	ctx := t.Context()
	mustDo(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "urutau-fleet-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: hubNS, Name: "prometheus"}}}))
	allowed, other := saToken(t, c, "prometheus"), saToken(t, c, "someone")
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the endpoint's own self-signed certificate
	get := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		return resp.StatusCode, b.String()
	}
	waitFor(t, 30*time.Second, "metrics for Prometheus' ServiceAccount", func() error {
		if code, body := get(allowed); code != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
			return fmt.Errorf("HTTP %d", code)
		}
		return nil
	})
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: HTTP %d, want 401", code)
	}
	if code, _ := get(other); code != http.StatusForbidden {
		t.Errorf("metrics for a ServiceAccount not allowed /metrics: HTTP %d, want 403", code)
	}
}

func rbacPipeline(name string, serverID int, clusters ...string) *urutauv1alpha1.CDCPipeline {
	inline := fmt.Sprintf(`{"pipeline":%q,"source":{"kind":"mysql","serverId":"%d"},"sink":{"type":"iceberg+rest","uri":"http://catalog.lake:8181/api/catalog","namespace":"raw","warehouse":"s3://lake/x"},"tables":[{"source":"shop.orders","target":"raw.orders","primaryKey":["id"]}]}`, name, serverID)
	return &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: []byte(inline)}},
				Secrets:    urutauv1alpha1.Secrets{Source: "orders-mysql"},
			},
			Placement: urutauv1alpha1.Placement{Clusters: clusters},
		},
	}
}

func memberPhase(ctx context.Context, c client.Client, p *urutauv1alpha1.CDCPipeline, member string, phases ...urutauv1alpha1.ClusterPhase) error {
	got := &urutauv1alpha1.CDCPipeline{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		return err
	}
	for _, cs := range got.Status.Clusters {
		if cs.Name == member && slices.Contains(phases, cs.Phase) {
			return nil
		}
	}
	return fmt.Errorf("%s on %s: %+v", p.Name, member, got.Status.Clusters)
}

// readAudit returns what the hub did ("group/resource verb namespace" and the same with " name")
// and what it was refused.
func readAudit(t *testing.T, path string) (map[string]bool, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	used := map[string]bool{}
	var refused []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct {
			Verb string `json:"verb"`
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef *struct {
				Resource, Subresource, APIGroup, Namespace, Name string
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.User.Username != hubUser || e.ObjectRef == nil {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		r := right{group: e.ObjectRef.APIGroup, resource: res, verb: e.Verb, namespace: e.ObjectRef.Namespace, name: e.ObjectRef.Name}
		if e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusForbidden {
			refused = append(refused, r.String())
			continue
		}
		used[r.key()] = true
		used[r.keyWithName()] = true
		// A cluster-wide right also covers a namespaced use, as RBAC does.
		r.namespace, r.name = "", ""
		used[r.key()] = true
	}
	sort.Strings(refused)
	return used, slices.Compact(refused)
}

// waitAudited waits until the audit log shows the hub doing verb on group/resource.
func waitAudited(t *testing.T, path, groupResource, verb string) {
	t.Helper()
	waitFor(t, 60*time.Second, "the hub to "+verb+" "+groupResource, func() error {
		used, _ := readAudit(t, path)
		for k := range used {
			if strings.HasPrefix(k, groupResource+" "+verb+" ") {
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
}

func buildHub(t *testing.T, work string) string {
	t.Helper()
	bin := filepath.Join(work, "hub")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/hub")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/hub: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func portOpen(port int) bool {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func waitFor(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: %v", what, err)
}

func tailFile(path string) string {
	raw, _ := os.ReadFile(path)
	lines := strings.Split(string(raw), "\n")
	return strings.Join(lines[max(0, len(lines)-60):], "\n")
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
