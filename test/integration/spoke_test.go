package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/tenancy"
	"github.com/urutau-io/fleet/internal/testenv"
)

const spokeUser = "system:serviceaccount:urutau-fleet-system:urutau-fleet-hub"

// TestSpokeIdentity installs config/spoke in a real API server, opens one namespace ("shop") with
// config/spoke/pipeline-namespace, and proves the hub's identity in a member can do each thing the
// hub does there and nothing else: a SubjectAccessReview table (including everything it must not
// do in kube-system, in its own namespace, in the hub's namespace and in a namespace nobody
// opened), then the real thing as that identity (every golden workload applied, including the
// coordinator Role, which RBAC only lets it create because it holds every permission the Role
// grants).
func TestSpokeIdentity(t *testing.T) {
	c := startOne(t)
	ctx := t.Context()
	applyToCluster(t, c, kustomizeBuild(t, "../../config/spoke"))
	for _, ns := range []string{"shop", "unopened", "urutau-system"} {
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	openNamespace(t, c, "shop")

	checkAccess(t, c, "urutau-fleet-system", "urutau-fleet-hub", spokeAllowed("shop"), spokeDenied())

	// The real thing, as that identity.
	as := rest.CopyConfig(c.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: spokeUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:urutau-fleet-system", "system:authenticated"}}
	hub, err := client.New(as, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// What the hub reads about the member: kube-system's UID (its identity) and the opt-in label of
	// an opened namespace; not any other namespace.
	if err := hub.Get(ctx, client.ObjectKey{Name: "kube-system"}, &corev1.Namespace{}); err != nil {
		t.Errorf("the hub's member identity cannot read namespace kube-system: %v", err)
	}
	if err := hub.Get(ctx, client.ObjectKey{Name: "shop"}, &corev1.Namespace{}); err != nil {
		t.Errorf("the hub's member identity cannot read the namespace opened to it: %v", err)
	}
	if err := hub.Get(ctx, client.ObjectKey{Name: "unopened"}, &corev1.Namespace{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading an unopened namespace: want Forbidden, got %v", err)
	}
	goldens, err := filepath.Glob("../../internal/coordinator/testdata/*.golden.yaml")
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no golden workloads: %v", err)
	}
	for _, g := range goldens {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "spoke-" + sanitize(strings.TrimSuffix(filepath.Base(g), ".golden.yaml"))}}
		if err := c.Client.Create(ctx, ns); err != nil { // namespaces are the platform team's, not the hub's
			t.Fatal(err)
		}
		openNamespace(t, c, ns.Name)
		applyGoldenAs(t, hub, g, ns.Name)
	}

	// And the Secrets it must not read wholesale, nor write where nobody opened a namespace.
	err = hub.List(ctx, &corev1.SecretList{}, client.InNamespace("shop"))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing Secrets as the hub's member identity: want Forbidden, got %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "unopened", Name: "x-coordinator"}}
	if err := hub.Create(ctx, cm); !apierrors.IsForbidden(err) {
		t.Fatalf("writing into an unopened namespace: want Forbidden, got %v", err)
	}
}

// spokeAllowed is what the hub does in an opened namespace ns.
func spokeAllowed(ns string) []access {
	var allowed []access
	for _, r := range []access{
		{"", "", "serviceaccounts", ns, ""}, {"", "", "configmaps", ns, ""}, {"", "", "services", ns, ""},
		{"", "apps", "statefulsets", ns, ""}, {"", "policy", "poddisruptionbudgets", ns, ""},
		{"", "rbac.authorization.k8s.io", "roles", ns, ""}, {"", "rbac.authorization.k8s.io", "rolebindings", ns, ""},
	} {
		for _, v := range []string{"get", "list", "watch", "create", "patch", "delete"} {
			allowed = append(allowed, access{v, r.group, r.resource, ns, ""})
		}
	}
	for _, v := range []string{"get", "list", "create", "patch", "delete"} {
		allowed = append(allowed, access{v, "keda.sh", "scaledobjects", ns, ""})
	}
	return append(allowed,
		access{"get", "", "secrets", ns, ""},
		access{"list", "", "pods", ns, ""},
		access{"get", "", "namespaces", ns, ns},
		access{"get", "", "namespaces", "", "kube-system"},
		// Held only to grant the coordinator Role (RBAC forbids granting what one does not hold).
		access{"get", "", "pods", ns, ""}, access{"create", "", "pods", ns, ""}, access{"delete", "", "pods", ns, ""},
		access{"update", "apps", "statefulsets", ns, ""}, access{"update", "", "services", ns, ""},
		// The member cache (components/cluster-watch): list and watch our kinds everywhere.
		access{"list", "apps", "statefulsets", "", ""}, access{"watch", "", "configmaps", "", ""},
	)
}

// spokeDenied is what the hub must never do: in the opened namespace beyond its verbs, and
// anything but cached reads in kube-system, in its own namespace, in the hub's namespace (a hub
// that is also a member keeps the member credentials there) and in a namespace nobody opened.
func spokeDenied() []access {
	denied := []access{
		{"list", "", "secrets", "shop", ""}, {"watch", "", "secrets", "shop", ""}, {"create", "", "secrets", "shop", ""}, {"update", "", "secrets", "shop", ""},
		{"patch", "", "secrets", "shop", ""}, {"delete", "", "secrets", "shop", ""},
		{"create", "apps", "deployments", "shop", ""}, {"create", "apps", "daemonsets", "shop", ""}, {"create", "batch", "jobs", "shop", ""},
		{"get", "", "nodes", "", ""}, {"create", "", "namespaces", "", ""}, {"delete", "", "namespaces", "", "shop"},
		{"list", "", "namespaces", "", ""}, {"get", "", "namespaces", "", "default"}, {"update", "", "namespaces", "shop", "shop"},
		{"escalate", "rbac.authorization.k8s.io", "roles", "shop", ""}, {"bind", "rbac.authorization.k8s.io", "roles", "shop", ""},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "shop", ""}, {"create", "rbac.authorization.k8s.io", "clusterroles", "", ""},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", ""},
		{"update", "rbac.authorization.k8s.io", "roles", "shop", ""}, {"patch", "", "pods", "shop", ""}, {"watch", "", "pods", "shop", ""},
		{"get", "urutau.io", "cdcpipelines", "shop", ""}, {"update", "keda.sh", "scaledobjects", "shop", ""},
		{"create", "", "serviceaccounts/token", "shop", ""}, {"create", "", "pods/exec", "shop", ""},
		// Cluster-wide, no pods and no Secrets.
		{"list", "", "pods", "", ""}, {"list", "", "secrets", "", ""}, {"create", "", "pods", "", ""},
	}
	for _, ns := range []string{"kube-system", "urutau-fleet-system", "urutau-system", "unopened", "default"} {
		denied = append(denied,
			access{"create", "", "pods", ns, ""}, access{"get", "", "pods", ns, ""}, access{"list", "", "pods", ns, ""},
			access{"get", "", "secrets", ns, ""}, access{"create", "", "serviceaccounts/token", ns, "urutau-fleet-hub"},
			access{"create", "apps", "statefulsets", ns, ""}, access{"patch", "apps", "statefulsets", ns, "x"}, access{"delete", "apps", "statefulsets", ns, "x"},
			access{"create", "", "configmaps", ns, ""}, access{"patch", "", "services", ns, "x"}, access{"delete", "", "serviceaccounts", ns, "x"},
			access{"create", "rbac.authorization.k8s.io", "roles", ns, ""}, access{"create", "rbac.authorization.k8s.io", "rolebindings", ns, ""},
			access{"create", "keda.sh", "scaledobjects", ns, ""},
		)
		if ns != "kube-system" { // its identity: readable (spokeAllowed)
			denied = append(denied, access{"get", "", "namespaces", ns, ns})
		}
	}
	return denied
}

// openNamespace opens namespace ns as a member's platform team does: config/spoke/pipeline-namespace
// from an overlay naming ns, and the label the hub checks.
func openNamespace(t *testing.T, c *testenv.Cluster, ns string) {
	t.Helper()
	dir := t.TempDir()
	base, err := filepath.Abs("../../config/spoke/pipeline-namespace")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("namespace: "+ns+"\nresources:\n  - "+rel+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := kustomizeBuild(t, dir)
	if len(objs) != 1 || objs[0].GetKind() != "RoleBinding" || objs[0].GetNamespace() != ns {
		t.Fatalf("config/spoke/pipeline-namespace built for %s: %v", ns, objs)
	}
	applyToCluster(t, c, objs)
	n := &corev1.Namespace{}
	if err := c.Client.Get(t.Context(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[urutauv1alpha1.LabelFleetManaged] = "true"
	n.Labels[tenancy.LabelPodSecurityEnforce] = tenancy.PodSecurityRestricted
	if err := c.Client.Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

func applyToCluster(t *testing.T, c *testenv.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if err := c.Client.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o), fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// applyGoldenAs applies one golden workload into ns as the hub's member identity, then cleans
// it up as the hub does: by the UID label.
func applyGoldenAs(t *testing.T, hub client.Client, golden, ns string) {
	t.Helper()
	ctx := t.Context()
	var uid string
	for _, o := range readObjects(t, golden) {
		o.SetNamespace(ns)
		unstructured.RemoveNestedField(o.Object, "status")
		uid = o.GetLabels()[urutauv1alpha1.LabelHubPipelineUID]
		var err error
		// RBAC bindings take effect a moment after the write: retry a Forbidden briefly.
		for range 50 {
			if err = hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("urutau-operator@member"), client.ForceOwnership); !apierrors.IsForbidden(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s: the hub's member identity cannot apply %s %s: %v", filepath.Base(golden), o.GetKind(), o.GetName(), err)
		}
	}
	for _, gvk := range []string{"ServiceAccount", "ConfigMap", "Service"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("v1")
		l.SetKind(gvk + "List")
		if err := hub.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: uid}); err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			if err := hub.Delete(ctx, &l.Items[i]); err != nil {
				t.Fatalf("the hub's member identity cannot delete %s %s: %v", gvk, l.Items[i].GetName(), err)
			}
		}
	}
}

// kustomizeBuild builds a kustomization with the kustomize Go API.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		// Through YAML, not r.Map(): unstructured objects hold JSON numbers, not Go ints.
		raw, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}
