package integration

import (
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/urutau-io/fleet/internal/testenv"
)

// access is one thing a ServiceAccount may or may not do; resource may name a subresource
// ("cdcpipelines/status"), name may restrict it to one object.
type access struct {
	verb, group, resource, namespace, name string
}

// canI asks the API server's authorizer whether ServiceAccount ns/name may do a.
func canI(t *testing.T, c *testenv.Cluster, saNamespace, saName string, a access) bool {
	t.Helper()
	res, sub, _ := strings.Cut(a.resource, "/")
	r := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + saNamespace + ":" + saName,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: a.namespace, Verb: a.verb, Group: a.group,
			Resource: res, Subresource: sub, Name: a.name},
	}}
	if err := c.Client.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// checkAccess waits for the bindings to take effect (RBAC sees them through its informers, a
// moment after the write), then checks every allowed and every denied access.
func checkAccess(t *testing.T, c *testenv.Cluster, saNamespace, saName string, allowed, denied []access) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !canI(t, c, saNamespace, saName, allowed[0]) {
		if time.Now().After(deadline) {
			t.Fatalf("the bindings of %s/%s never took effect", saNamespace, saName)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, a := range allowed {
		if !canI(t, c, saNamespace, saName, a) {
			t.Errorf("%s/%s cannot %s %s.%s in %q (name %q), which it needs", saNamespace, saName, a.verb, a.resource, a.group, a.namespace, a.name)
		}
	}
	for _, a := range denied {
		if canI(t, c, saNamespace, saName, a) {
			t.Errorf("%s/%s can %s %s.%s in %q (name %q), which it must not", saNamespace, saName, a.verb, a.resource, a.group, a.namespace, a.name)
		}
	}
}
