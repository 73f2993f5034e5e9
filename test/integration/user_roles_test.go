package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	for _, v := range []string{"update", "patch"} {
		// Status is the hub's; a namespace admin may clear a termination, an editor may not.
		checks = append(checks, check{"viola", v, "cdcpipelines/status", ns, false}, check{"eddie", v, "cdcpipelines/status", ns, false},
			check{"ada", v, "cdcpipelines/status", ns, true}, check{"eddie", v, "cdcpipelines/finalizers", ns, false})
	}
	// Wait for the aggregation to reach the roles, then check everything.
	waitUntil(t, 60*time.Second, "view to aggregate urutau-fleet-viewer", func() bool {
		return userCan(t, c, "viola", "list", group, "cdcpipelines", ns)
	})
	waitUntil(t, 60*time.Second, "admin to aggregate urutau-fleet-admin", func() bool {
		return userCan(t, c, "ada", "patch", group, "cdcpipelines/status", ns)
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
