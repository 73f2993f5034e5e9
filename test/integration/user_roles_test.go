package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/testenv"
)

// TestUserRolesAggregate installs config/hub on a real API server, runs kube-controller-manager's
// ClusterRole aggregation controller (what fills view, edit and admin in a real cluster), binds
// users to the built-in roles in one namespace, and asks the API server's authorizer
// (SubjectAccessReview) what each may do with CDCPipelines.
func TestUserRolesAggregate(t *testing.T) {
	c := startOne(t)
	applyAll(t, c.Client, kustomizeBuild(t, "../../config/hub/self-signed"))
	startAggregationController(t, c)

	ctx := t.Context()
	for user, role := range map[string]string{"viola": "view", "eddie": "edit", "ada": "admin"} {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
		}
		if err := c.Client.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	const group, ns = "urutau.io", "default"
	read := []string{"get", "list", "watch"}
	write := []string{"create", "update", "patch", "delete", "deletecollection"}
	type check struct {
		user, verb, resource, namespace string
		want                            bool
	}
	var checks []check
	for _, v := range read {
		for _, u := range []string{"viola", "eddie", "ada"} {
			checks = append(checks, check{u, v, "cdcpipelines", ns, true}, check{u, v, "cdcpipelines/status", ns, true},
				check{u, v, "cdcpipelines", "elsewhere", false})
		}
	}
	for _, v := range write {
		checks = append(checks, check{"viola", v, "cdcpipelines", ns, false}, check{"eddie", v, "cdcpipelines", ns, true},
			check{"ada", v, "cdcpipelines", ns, true}, check{"eddie", v, "cdcpipelines", "elsewhere", false})
	}
	for _, v := range []string{"create", "update", "patch", "delete"} {
		// Status is the hub's alone (it reads status.inventory and status.clusters back): no
		// tenant role writes it, not even a namespace admin's.
		checks = append(checks, check{"viola", v, "cdcpipelines/status", ns, false}, check{"eddie", v, "cdcpipelines/status", ns, false},
			check{"ada", v, "cdcpipelines/status", ns, false}, check{"eddie", v, "cdcpipelines/finalizers", ns, false},
			check{"ada", v, "cdcpipelines/finalizers", ns, false})
	}
	// Wait for the aggregation to reach the roles (admin takes edit's rules through edit itself),
	// then check everything.
	waitUntil(t, 60*time.Second, "view to aggregate urutau-fleet-viewer", func() bool {
		return userCan(t, c, "viola", "list", group, "cdcpipelines", ns)
	})
	waitUntil(t, 60*time.Second, "admin to aggregate urutau-fleet-editor through edit", func() bool {
		return userCan(t, c, "ada", "create", group, "cdcpipelines", ns)
	})
	for _, ch := range checks {
		if got := userCan(t, c, ch.user, ch.verb, group, ch.resource, ch.namespace); got != ch.want {
			t.Errorf("%s %s %s in %s: allowed=%v, want %v", ch.user, ch.verb, ch.resource, ch.namespace, got, ch.want)
		}
	}
}

// userCan asks the authorizer whether user may verb resource ("x" or "x/subresource").
func userCan(t *testing.T, c *testenv.Cluster, user, verb, group, resource, namespace string) bool {
	t.Helper()
	res, sub, _ := strings.Cut(resource, "/")
	r := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: group, Resource: res, Subresource: sub},
	}}
	if err := c.Client.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

func waitUntil(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startAggregationController runs kube-controller-manager with only the ClusterRole aggregation
// controller against c, until the test ends.
func startAggregationController(t *testing.T, c *testenv.Cluster) {
	t.Helper()
	kubeconfig, err := c.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(os.Getenv(testenv.AssetsEnv), "kube-controller-manager"),
		"--kubeconfig="+path, "--controllers=clusterrole-aggregation", "--leader-elect=false", "--secure-port=0", "--v=1")
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			raw, _ := os.ReadFile(logFile.Name())
			t.Logf("kube-controller-manager:\n%s", raw)
		}
		_ = logFile.Close()
	})
}

// TestKubectlGetUrutau runs the real kubectl, impersonating each kind of user, on a hub with
// config/hub installed: `kubectl get urutau` (every kind of the urutau category) works for a
// namespace's viewer and editor, and in the hub's namespace for the fleet operator; the
// PlacementPolicies, cluster-scoped and so kept out of the category, are for the fleet operator
// (`kubectl get plpol`), and a namespace viewer may not list them.
func TestKubectlGetUrutau(t *testing.T) {
	c := startOne(t)
	ctx := t.Context()
	applyAll(t, c.Client, kustomizeBuild(t, "../../config/hub/self-signed"))
	startAggregationController(t, c)
	// No hub process serves admission here: the webhook would refuse every write.
	mustDo(t, c.Client.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "urutau-fleet-validating-webhook-configuration"}}))
	mustDo(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}))
	mustDo(t, c.Client.Create(ctx, rbacPipeline("orders", 7001, "eu-1")))
	mustDo(t, c.Client.Create(ctx, &urutauv1alpha1.ReaderLease{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: "mysql-7001"},
		Spec: urutauv1alpha1.ReaderLeaseSpec{Holder: urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "orders", UID: "u1"}}}))
	mustDo(t, c.Client.Create(ctx, &urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop-eu"},
		Spec: urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, Clusters: []string{"eu-1"}}}))
	bindUsers(t, c)

	kubeconfig, err := c.Kubeconfig()
	mustDo(t, err)
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	mustDo(t, os.WriteFile(path, kubeconfig, 0o600))
	kubectlAs := func(user string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(os.Getenv(testenv.AssetsEnv), "kubectl"), append([]string{"--kubeconfig", path, "--as", user}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	waitUntil(t, 60*time.Second, "view and edit to aggregate the urutau-fleet roles", func() bool {
		return userCan(t, c, "viola", "list", "urutau.io", "readerleases", "shop") && userCan(t, c, "eddie", "list", "urutau.io", "readerleases", "shop")
	})
	for _, tc := range []struct {
		user string
		args []string
		want string
	}{
		{"viola", []string{"get", "urutau", "-n", "shop"}, "cdcpipeline.urutau.io/orders"},
		{"eddie", []string{"get", "urutau", "-n", "shop"}, "cdcpipeline.urutau.io/orders"},
		{"olga", []string{"get", "urutau", "-n", hubNS}, "readerlease.urutau.io/mysql-7001"},
		{"olga", []string{"get", "urutau", "-A"}, "cdcpipeline.urutau.io/orders"},
		{"olga", []string{"get", "plpol"}, "shop-eu   [\"shop\"]     [\"eu-1\"]"},
	} {
		out, err := kubectlAs(tc.user, tc.args...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("kubectl --as %s %s: %v, want output with %q:\n%s", tc.user, strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
	if out, err := kubectlAs("viola", "get", "plpol"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("a namespace viewer lists PlacementPolicies (err %v):\n%s", err, out)
	}
}

// bindUsers binds viola to view and eddie to edit in shop, and olga to the fleet operator's
// roles, as the comments of config/hub/rbac/user_roles.yaml say.
func bindUsers(t *testing.T, c *testenv.Cluster) {
	t.Helper()
	ctx := t.Context()
	user := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: name}}
	}
	for _, b := range []client.Object{
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "viola"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: user("viola")},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "eddie"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}, Subjects: user("eddie")},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "olga-fleet-operator"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "urutau-fleet-operator"}, Subjects: user("olga")},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: "olga-fleet-operator"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "urutau-fleet-operator"}, Subjects: user("olga")},
	} {
		mustDo(t, c.Client.Create(ctx, b))
	}
}

// TestFleetOperatorRole asks the authorizer, for the fleet operator bound as user_roles.yaml says,
// about every request `kubectl urutau join|leave|members|status` sends to the hub (internal/join,
// internal/fleetview), and about what stays the platform admin's or the hub's.
func TestFleetOperatorRole(t *testing.T) {
	c := startOne(t)
	applyAll(t, c.Client, kustomizeBuild(t, "../../config/hub/self-signed"))
	mustDo(t, c.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}))
	bindUsers(t, c)
	type check struct{ verb, group, resource, namespace string }
	allowed := []check{
		// members and status (fleetview)
		{"list", "urutau.io", "cdcpipelines", ""}, {"get", "urutau.io", "cdcpipelines", "shop"}, {"list", "", "secrets", hubNS},
		{"list", "multicluster.x-k8s.io", "clusterprofiles", hubNS}, {"list", "coordination.k8s.io", "leases", hubNS},
		{"get", "coordination.k8s.io", "leases", hubNS}, {"list", "urutau.io", "readerleases", hubNS},
		// join: the inventory entry, and the placement notes
		{"create", "", "secrets", hubNS}, {"patch", "", "secrets", hubNS}, {"list", "urutau.io", "placementpolicies", ""}, {"get", "", "namespaces", ""},
		// leave: drain and remove the entry
		{"get", "", "secrets", hubNS}, {"patch", "urutau.io", "cdcpipelines", "shop"}, {"delete", "", "secrets", hubNS},
		{"list", "", "events", hubNS},
	}
	denied := []check{
		{"create", "urutau.io", "placementpolicies", ""}, {"update", "urutau.io", "placementpolicies", ""},
		{"get", "", "secrets", "shop"}, {"list", "", "secrets", ""}, {"patch", "urutau.io", "cdcpipelines/status", "shop"},
		{"create", "urutau.io", "cdcpipelines", "shop"}, {"delete", "urutau.io", "cdcpipelines", "shop"},
		{"update", "coordination.k8s.io", "leases", hubNS}, {"delete", "urutau.io", "readerleases", hubNS},
		{"create", "rbac.authorization.k8s.io", "rolebindings", hubNS},
	}
	waitUntil(t, 15*time.Second, "the fleet operator's bindings", func() bool {
		return userCan(t, c, "olga", "list", "", "secrets", hubNS)
	})
	for _, a := range allowed {
		if !userCan(t, c, "olga", a.verb, a.group, a.resource, a.namespace) {
			t.Errorf("the fleet operator may not %s %s.%s in %q, which kubectl urutau needs", a.verb, a.resource, a.group, a.namespace)
		}
	}
	for _, a := range denied {
		if userCan(t, c, "olga", a.verb, a.group, a.resource, a.namespace) {
			t.Errorf("the fleet operator may %s %s.%s in %q", a.verb, a.resource, a.group, a.namespace)
		}
	}
}
