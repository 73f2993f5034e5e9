package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/testenv"
)

// TestHubConfigApplies builds both install overlays of config/hub and applies them server-side to
// a real API server. cert-manager is not installed there, so its two objects are checked for what
// ties them to the rest: the Certificate must name the webhook Service as built, and the
// webhook configuration must ask cert-manager for that Certificate's CA.
func TestHubConfigApplies(t *testing.T) {
	for _, overlay := range []string{"default", "self-signed"} {
		t.Run(overlay, func(t *testing.T) {
			c := startOne(t)
			ctx := t.Context()
			objs := kustomizeBuild(t, "../../config/hub/"+overlay)
			// Namespaces and CRDs first, as kubectl apply orders them.
			slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
			var service, certificate, issuer, vwc *unstructured.Unstructured
			kinds := map[string]bool{}
			for _, o := range objs {
				kinds[o.GetKind()] = true
				switch o.GetKind() {
				case "Certificate":
					certificate = o
					continue
				case "Issuer":
					issuer = o
					continue
				case "Service":
					service = o
				case "ValidatingWebhookConfiguration":
					vwc = o
				}
				if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
					t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			for _, k := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
				"ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "PodDisruptionBudget", "Service",
				"ValidatingWebhookConfiguration"} {
				if !kinds[k] {
					t.Errorf("config/hub/%s has no %s", overlay, k)
				}
			}
			if service == nil || vwc == nil {
				t.Fatal("no webhook Service or ValidatingWebhookConfiguration")
			}
			hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
			ref, _, _ := unstructured.NestedStringMap(hooks[0].(map[string]any), "clientConfig", "service")
			if ref["name"] != service.GetName() || ref["namespace"] != service.GetNamespace() {
				t.Errorf("the webhook points at %s/%s, the Service is %s/%s", ref["namespace"], ref["name"], service.GetNamespace(), service.GetName())
			}
			switch overlay {
			case "default":
				if certificate == nil {
					t.Fatal("the cert-manager overlay has no Certificate")
				}
				dns, _, _ := unstructured.NestedStringSlice(certificate.Object, "spec", "dnsNames")
				want := fmt.Sprintf("%s.%s.svc", service.GetName(), service.GetNamespace())
				if !slices.Contains(dns, want) {
					t.Errorf("the Certificate is for %v, the API server calls %s", dns, want)
				}
				ref, _, _ := unstructured.NestedString(certificate.Object, "spec", "issuerRef", "name")
				if issuer == nil || ref != issuer.GetName() {
					t.Errorf("the Certificate's issuerRef names %q, which is not the Issuer the overlay ships", ref)
				}
				inject := vwc.GetAnnotations()["cert-manager.io/inject-ca-from"]
				if inject != certificate.GetNamespace()+"/"+certificate.GetName() {
					t.Errorf("the webhook injects the CA of %q, the Certificate is %s/%s", inject, certificate.GetNamespace(), certificate.GetName())
				}
			case "self-signed":
				if certificate != nil {
					t.Error("the self-signed overlay must not need cert-manager")
				}
			}
			checkHubIdentity(t, c, overlay == "self-signed")
		})
	}
}

// checkHubIdentity: the hub's ServiceAccount can do what the hub does on the hub cluster, reads
// Namespaces and PlacementPolicies (the tenancy boundary) but writes neither, reads Secrets and
// writes ConfigMaps and Leases only in its own namespace, and may write a Secret (its webhook CA,
// by name) and the webhook configuration's caBundle only in the self-signed overlay.
func checkHubIdentity(t *testing.T, c *testenv.Cluster, selfSigned bool) {
	t.Helper()
	const ns = "urutau-system"
	allowed := []access{
		{"list", "urutau.io", "cdcpipelines", "", ""}, {"watch", "urutau.io", "cdcpipelines", "", ""},
		{"patch", "urutau.io", "cdcpipelines", "shop", ""}, {"patch", "urutau.io", "cdcpipelines/status", "shop", ""},
		{"list", "urutau.io", "placementpolicies", "", ""}, {"watch", "urutau.io", "placementpolicies", "", ""},
		{"get", "", "namespaces", "shop", "shop"}, {"list", "", "namespaces", "", ""}, {"watch", "", "namespaces", "", ""},
		{"create", "", "events", "shop", ""}, {"create", "events.k8s.io", "events", "shop", ""},
		{"list", "", "secrets", ns, ""}, {"watch", "", "secrets", ns, ""},
		{"list", "multicluster.x-k8s.io", "clusterprofiles", ns, ""},
		{"update", "coordination.k8s.io", "leases", ns, ""},
		{"create", "urutau.io", "readerleases", ns, ""}, {"update", "urutau.io", "readerleases", ns, ""}, {"delete", "urutau.io", "readerleases", ns, ""},
		{"create", "authentication.k8s.io", "tokenreviews", "", ""}, {"create", "authorization.k8s.io", "subjectaccessreviews", "", ""},
	}
	denied := []access{
		{"get", "", "secrets", "shop", ""}, {"list", "", "secrets", "", ""}, {"get", "", "secrets", "default", ""},
		{"get", "", "secrets", ns, "eu-1"}, {"create", "", "secrets", ns, ""}, {"update", "", "secrets", ns, "eu-1"}, {"delete", "", "secrets", ns, "eu-1"},
		{"create", "", "configmaps", "shop", ""}, {"create", "", "configmaps", ns, ""}, {"update", "coordination.k8s.io", "leases", "kube-system", ""},
		{"create", "urutau.io", "readerleases", "shop", ""},
		{"delete", "urutau.io", "cdcpipelines", "shop", ""}, {"update", "urutau.io", "cdcpipelines", "shop", ""}, {"create", "", "pods", "shop", ""},
		{"create", "urutau.io", "placementpolicies", "", ""}, {"update", "", "namespaces", "shop", "shop"},
		{"patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "someone-elses"},
		{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", ""},
	}
	certSecret := access{"update", "", "secrets", ns, "urutau-fleet-webhook-cert"}
	caBundle := access{"patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "urutau-fleet-validating-webhook-configuration"}
	if selfSigned {
		allowed = append(allowed, certSecret, caBundle, access{"get", "", "secrets", ns, "urutau-fleet-webhook-cert"})
	} else {
		denied = append(denied, certSecret, caBundle)
	}
	checkAccess(t, c, ns, "urutau-fleet-hub", allowed, denied)
}

func rank(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	}
	return 2
}

// TestMonitoringScrapeIdentity installs config/hub and config/monitoring (but the Prometheus
// Operator's kinds, which no test API server serves) on a real API server: the ServiceAccount
// whose token the ServiceMonitor sends may get /metrics, and nothing else of the hub's.
func TestMonitoringScrapeIdentity(t *testing.T) {
	c := startOne(t)
	applyAll(t, c.Client, append(kustomizeBuild(t, "../../config/hub/self-signed"), kustomizeBuild(t, "../../config/monitoring")...))
	user := "system:serviceaccount:urutau-system:urutau-fleet-metrics-scraper"
	may := func(attrs authorizationv1.SubjectAccessReviewSpec) bool {
		attrs.User, attrs.Groups = user, []string{"system:serviceaccounts", "system:authenticated"}
		r := &authorizationv1.SubjectAccessReview{Spec: attrs}
		mustDo(t, c.Client.Create(t.Context(), r))
		return r.Status.Allowed
	}
	metrics := authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}
	waitFor(t, 15*time.Second, "the scraper's binding", func() error {
		if !may(metrics) {
			return fmt.Errorf("%s may not get /metrics", user)
		}
		return nil
	})
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "get", Resource: "secrets", Namespace: "urutau-system", Name: "urutau-fleet-webhook-cert"},
		{Verb: "list", Group: "urutau.io", Resource: "cdcpipelines"},
	} {
		if may(authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &a}) {
			t.Errorf("the metrics scraper may %s %s", a.Verb, a.Resource)
		}
	}
}
