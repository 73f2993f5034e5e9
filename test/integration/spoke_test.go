package integration

import (
	"path/filepath"
	"strings"
	"testing"

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
	"github.com/urutau-io/fleet/internal/testenv"
)

const spokeUser = "system:serviceaccount:urutau-fleet-system:urutau-fleet-hub"

// TestSpokeIdentity installs config/spoke in a real API server and proves the hub's identity in a
// member can do each thing the hub does there and nothing else: a SubjectAccessReview table, then
// the real thing as that identity (every golden workload applied, including the coordinator
// Role, which RBAC only lets it create because it holds every permission the Role grants).
func TestSpokeIdentity(t *testing.T) {
	c := startOne(t)
	ctx := t.Context()
	objs := kustomizeBuild(t, "../../config/spoke")
	for _, o := range objs {
		if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s from config/spoke: %v", o.GetKind(), o.GetName(), err)
		}
	}

	allowed := []access{}
	for _, r := range []access{
		{"", "", "serviceaccounts", "shop", ""}, {"", "", "configmaps", "shop", ""}, {"", "", "services", "shop", ""},
		{"", "apps", "statefulsets", "shop", ""}, {"", "policy", "poddisruptionbudgets", "shop", ""},
		{"", "rbac.authorization.k8s.io", "roles", "shop", ""}, {"", "rbac.authorization.k8s.io", "rolebindings", "shop", ""},
	} {
		for _, v := range []string{"get", "list", "watch", "create", "patch", "delete"} {
			allowed = append(allowed, access{v, r.group, r.resource, "shop", ""})
		}
	}
	for _, v := range []string{"get", "list", "create", "patch", "delete"} {
		allowed = append(allowed, access{v, "keda.sh", "scaledobjects", "shop", ""})
	}
	allowed = append(allowed,
		access{"get", "", "secrets", "shop", ""},
		access{"list", "", "pods", "shop", ""},
		// Held only to grant the coordinator Role (RBAC forbids granting what one does not hold).
		access{"get", "", "pods", "shop", ""}, access{"create", "", "pods", "shop", ""}, access{"delete", "", "pods", "shop", ""},
		access{"update", "apps", "statefulsets", "shop", ""}, access{"update", "", "services", "shop", ""},
	)
	denied := []access{
		{"list", "", "secrets", "shop", ""}, {"watch", "", "secrets", "shop", ""}, {"create", "", "secrets", "shop", ""}, {"update", "", "secrets", "shop", ""},
		{"patch", "", "secrets", "shop", ""}, {"delete", "", "secrets", "shop", ""},
		{"create", "apps", "deployments", "shop", ""}, {"create", "apps", "daemonsets", "shop", ""}, {"create", "batch", "jobs", "shop", ""},
		{"get", "", "nodes", "shop", ""}, {"create", "", "namespaces", "shop", ""}, {"delete", "", "namespaces", "shop", ""},
		{"escalate", "rbac.authorization.k8s.io", "roles", "shop", ""}, {"bind", "rbac.authorization.k8s.io", "roles", "shop", ""},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "shop", ""}, {"create", "rbac.authorization.k8s.io", "clusterroles", "shop", ""},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "shop", ""},
		{"update", "rbac.authorization.k8s.io", "roles", "shop", ""}, {"patch", "", "pods", "shop", ""}, {"watch", "", "pods", "shop", ""},
		{"get", "urutau.io", "cdcpipelines", "shop", ""}, {"update", "keda.sh", "scaledobjects", "shop", ""},
		{"create", "", "serviceaccounts/token", "shop", ""}, {"create", "", "pods/exec", "shop", ""},
	}
	checkAccess(t, c, "urutau-fleet-system", "urutau-fleet-hub", allowed, denied)

	// The real thing, as that identity.
	as := rest.CopyConfig(c.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: spokeUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:urutau-fleet-system", "system:authenticated"}}
	hub, err := client.New(as, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
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
		var uid string
		for _, o := range readObjects(t, g) {
			o.SetNamespace(ns.Name)
			unstructured.RemoveNestedField(o.Object, "status")
			uid = o.GetLabels()[urutauv1alpha1.LabelHubPipelineUID]
			if err := hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("urutau-operator@member"), client.ForceOwnership); err != nil {
				t.Fatalf("%s: the hub's member identity cannot apply %s %s: %v", filepath.Base(g), o.GetKind(), o.GetName(), err)
			}
		}
		// Cleanup as the hub does it: by the UID label.
		for _, gvk := range []string{"ServiceAccount", "ConfigMap", "Service"} {
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion("v1")
			l.SetKind(gvk + "List")
			if err := hub.List(ctx, l, client.InNamespace(ns.Name), client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: uid}); err != nil {
				t.Fatal(err)
			}
			for i := range l.Items {
				if err := hub.Delete(ctx, &l.Items[i]); err != nil {
					t.Fatalf("the hub's member identity cannot delete %s %s: %v", gvk, l.Items[i].GetName(), err)
				}
			}
		}
	}

	// And the Secrets it must not read wholesale.
	err = hub.List(ctx, &corev1.SecretList{}, client.InNamespace("default"))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing Secrets as the hub's member identity: want Forbidden, got %v", err)
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
