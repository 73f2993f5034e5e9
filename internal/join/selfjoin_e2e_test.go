package join_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fleetview"
	"github.com/urutau-io/fleet/internal/join"
	"github.com/urutau-io/fleet/internal/localfleet"
)

// The hub's identity on its own cluster, as config/hub installs it.
const (
	hubServiceAccount = "urutau-fleet-hub"
	hubUser           = "system:serviceaccount:" + localfleet.HubNamespace + ":" + hubServiceAccount
)

// TestJoinHubToItself runs pipelines on the hub's own cluster, as Argo CD's in-cluster does: the
// hub runs as installed (config/hub's ServiceAccount and RBAC, nothing more), the hub's cluster
// joins as the member "home", a pipeline placed by label runs there, and `leave --drain` moves
// it off. Throughout, the hub keeps exactly its rights (its ClusterRole unchanged; no Secret read
// or pod creation gained through the member's bindings), stays ready, and still reconciles after
// leave removed config/spoke. Join and leave talk to the hub as a fleet operator (the roles
// config/hub ships for them, nothing more), who also reads the members' health.
func TestJoinHubToItself(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local fleet")
	}
	ctx := t.Context()
	f, _ := startHub(t)
	hub, err := f.Client("hub")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", f.Hub.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	probes := runInstalledHub(t, f, hub, admin)
	role := &rbacv1.ClusterRole{}
	if err := hub.Get(ctx, client.ObjectKey{Name: hubServiceAccount}, role); err != nil {
		t.Fatal(err)
	}
	checkHubKeepsItsRights(t, hub, probes, role, "as installed")
	operator := fleetOperator(t, hub, admin)

	// The hub namespace shop is the member namespace too: it holds the Secret the pipeline reads.
	if err := hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders-mysql",
		Labels: map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}}, StringData: map[string]string{"uri": "mysql://cdc@db:3306/shop"}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = join.Join(ctx, join.Options{Name: "home", Labels: map[string]string{"region": "eu"}, HubNamespace: localfleet.HubNamespace,
		Namespaces: []string{"shop"}, TokenTTL: time.Hour}, join.Clusters{Hub: operator, Member: admin}, &out)
	t.Logf("join home:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkHubKeepsItsRights(t, hub, probes, role, "after join")

	p := pipeline()
	if err := hub.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "the coordinator to run on the hub's own cluster", func() bool {
		sts := &appsv1.StatefulSet{}
		got := &urutauv1alpha1.CDCPipeline{}
		return hub.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders-coordinator"}, sts) == nil && sts.Status.ReadyReplicas >= 1 &&
			hub.Get(ctx, client.ObjectKeyFromObject(p), got) == nil && len(got.Status.Clusters) == 1 &&
			got.Status.Clusters[0].Name == "home" && got.Status.Clusters[0].Phase == urutauv1alpha1.ClusterReady
	})
	checkHubKeepsItsRights(t, hub, probes, role, "with a pipeline running at home")
	waitFor(t, 60*time.Second, "the fleet operator to see home reachable", func() bool {
		facts, err := fleetview.Gather(ctx, operator, fleetview.GatherOptions{HubNamespace: localfleet.HubNamespace})
		if err != nil || len(facts.Warnings) > 0 {
			t.Logf("as the fleet operator: %v %v", err, facts.Warnings)
			return false
		}
		return len(facts.Entries) == 1 && facts.Entries[0].Health != nil && facts.Entries[0].Health.Reachable == "True"
	})

	out.Reset()
	err = join.Leave(ctx, join.LeaveOptions{Name: "home", HubNamespace: localfleet.HubNamespace, Drain: true, DrainTimeout: 90 * time.Second}, operator, admin, &out)
	t.Logf("leave home --drain:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders-coordinator"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("the coordinator is still on the hub's cluster after the drain (err %v)", err)
	}
	if err := hub.Get(ctx, client.ObjectKey{Name: join.SpokeClusterRole}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
		t.Errorf("leave left config/spoke's ClusterRole %s (err %v)", join.SpokeClusterRole, err)
	}
	checkHubKeepsItsRights(t, hub, probes, role, "after leave")

	// Still reconciling: a new pipeline gets its status.
	after := pipeline()
	after.Name = "after-leave"
	after.Spec.Definition.Inline.Raw = bytes.ReplaceAll(bytes.ReplaceAll(after.Spec.Definition.Inline.Raw,
		[]byte(`"orders"`), []byte(`"after-leave"`)), []byte("7101"), []byte("7102"))
	if err := hub.Create(ctx, after); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the hub to write the status of a pipeline created after leave", func() bool {
		got := &urutauv1alpha1.CDCPipeline{}
		return hub.Get(ctx, client.ObjectKeyFromObject(after), got) == nil && len(got.Status.Conditions) > 0
	})
}

// runInstalledHub gives the hub cluster config/hub's ServiceAccount and RBAC (install.yaml's
// overlay) and replaces the fleet's hub process, which ran as admin, by one running as that
// ServiceAccount, with its readiness endpoint on a port of its own. It returns that port.
func runInstalledHub(t *testing.T, f *localfleet.Fleet, hub client.Client, admin *rest.Config) int {
	t.Helper()
	ctx := t.Context()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../config/hub/self-signed")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Resources() {
		switch r.GetKind() {
		case "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
		default:
			continue
		}
		raw, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			t.Fatal(err)
		}
		if err := hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("install"), client.ForceOwnership); err != nil {
			t.Fatalf("installing %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: localfleet.HubNamespace, Name: hubServiceAccount}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := hub.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthority: admin.CAFile, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos["hub"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "hub"}
	kc.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "hub-sa.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if err := f.KillHub(); err != nil {
		t.Fatal(err)
	}
	probes := freePort(t)
	cmd, err := f.StartExtraHub(ctx, "installed", f.WebhookPort(), "--kubeconfig="+path, "--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probes))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return probes
}

// fleetOperator binds the user olga to the fleet operator's roles, as config/hub/rbac/user_roles.yaml
// says, and returns a client of the hub cluster acting as olga.
func fleetOperator(t *testing.T, hub client.Client, admin *rest.Config) client.Client {
	t.Helper()
	ctx := t.Context()
	olga := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "olga"}}
	for _, b := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "olga"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "urutau-fleet-operator"}, Subjects: olga},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: localfleet.HubNamespace, Name: "olga"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "urutau-fleet-operator"}, Subjects: olga},
	} {
		if err := hub.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "olga"}
	c, err := client.New(cfg, client.Options{Scheme: localfleet.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkHubKeepsItsRights: the hub's ClusterRole is as installed, the hub's ServiceAccount may do
// what the hub does and nothing a member's binding grants, and the hub reports ready.
func checkHubKeepsItsRights(t *testing.T, hub client.Client, probes int, installed *rbacv1.ClusterRole, when string) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.ClusterRole{}
	if err := hub.Get(ctx, client.ObjectKey{Name: hubServiceAccount}, role); err != nil {
		t.Fatalf("%s: the hub's ClusterRole: %v", when, err)
	}
	if !equality.Semantic.DeepEqual(role.Rules, installed.Rules) {
		t.Errorf("%s: the hub's ClusterRole %s changed:\n%v\nwas\n%v", when, role.Name, role.Rules, installed.Rules)
	}
	if err := hub.Get(ctx, client.ObjectKey{Name: hubServiceAccount}, &rbacv1.ClusterRoleBinding{}); err != nil {
		t.Errorf("%s: the hub's ClusterRoleBinding %s: %v", when, hubServiceAccount, err)
	}
	allowed := []authorizationv1.ResourceAttributes{
		{Verb: "list", Group: "urutau.io", Resource: "cdcpipelines"},
		{Verb: "patch", Group: "urutau.io", Resource: "cdcpipelines", Subresource: "status", Namespace: "shop"},
		{Verb: "list", Group: "urutau.io", Resource: "placementpolicies"},
		{Verb: "watch", Resource: "secrets", Namespace: localfleet.HubNamespace},
	}
	denied := []authorizationv1.ResourceAttributes{
		{Verb: "get", Resource: "secrets", Namespace: "shop"},
		{Verb: "list", Resource: "secrets"},
		{Verb: "create", Resource: "pods", Namespace: "shop"},
		{Verb: "patch", Group: "apps", Resource: "statefulsets", Namespace: "shop"},
	}
	for _, a := range allowed {
		if !hubMay(t, hub, a) {
			t.Errorf("%s: the hub may not %s %s %s/%s in %q, which it needs", when, a.Verb, a.Group, a.Resource, a.Subresource, a.Namespace)
		}
	}
	for _, a := range denied {
		if hubMay(t, hub, a) {
			t.Errorf("%s: the hub may %s %s %s in %q, which its own identity must never hold", when, a.Verb, a.Group, a.Resource, a.Namespace)
		}
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probes))
	if err != nil {
		t.Fatalf("%s: the hub's /readyz: %v", when, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s: the hub's /readyz answers HTTP %d", when, resp.StatusCode)
	}
}

func hubMay(t *testing.T, hub client.Client, a authorizationv1.ResourceAttributes) bool {
	t.Helper()
	r := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: hubUser,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + localfleet.HubNamespace, "system:authenticated"},
		ResourceAttributes: &a}}
	if err := hub.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
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
