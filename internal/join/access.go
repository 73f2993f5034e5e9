package join

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// Access is one thing the hub's identity must be allowed in a member.
type Access = authorizationv1.ResourceAttributes

// RequiredAccess lists what config/spoke grants the hub's ServiceAccount: every verb of every rule
// of each role bound to it, cluster-wide for a ClusterRoleBinding and in the binding's namespace
// for a RoleBinding. Join checks each with the new token, so a member whose RBAC does not give the
// hub what it needs is refused before it is registered.
func RequiredAccess(objs []*unstructured.Unstructured) ([]Access, error) {
	roles := map[string][]rbacv1.PolicyRule{} // "ClusterRole/name" or "Role/ns/name"
	var out []Access
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "Role":
			var r rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				return nil, err
			}
			roles[roleKey(o.GetKind(), o.GetNamespace(), o.GetName())] = r.Rules
		}
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(b.Subjects, isHubSubject) {
			continue
		}
		ns := b.Namespace // "" for a ClusterRoleBinding: cluster-wide
		key := roleKey(b.RoleRef.Kind, ns, b.RoleRef.Name)
		rules, ok := roles[key]
		if !ok {
			return nil, fmt.Errorf("%s %s binds %s, which config/spoke does not define", o.GetKind(), o.GetName(), key)
		}
		out = append(out, accessOf(rules, ns)...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("config/spoke binds no role to %s/%s", SpokeNamespace, SpokeServiceAccount)
	}
	return out, nil
}

func roleKey(kind, ns, name string) string {
	if kind == "ClusterRole" {
		return "ClusterRole/" + name
	}
	return "Role/" + ns + "/" + name
}

func isHubSubject(s rbacv1.Subject) bool {
	return s.Kind == rbacv1.ServiceAccountKind && s.Name == SpokeServiceAccount && s.Namespace == SpokeNamespace
}

// accessOf expands rules into one access per group, resource, verb (and name, when restricted).
func accessOf(rules []rbacv1.PolicyRule, namespace string) []Access {
	var out []Access
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range r.Verbs {
					for _, n := range names {
						out = append(out, Access{Namespace: namespace, Verb: v, Group: g, Resource: resource, Subresource: sub, Name: n})
					}
				}
			}
		}
	}
	return out
}

// VerifyAccess asks the member, as the identity of c, whether it may do each access
// (SelfSubjectAccessReview), and reports every one it may not.
func VerifyAccess(ctx context.Context, c kubernetes.Interface, required []Access) error {
	var denied []string
	for _, a := range required {
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("asking the member what the hub's identity may do: %w", err)
		}
		if !r.Status.Allowed {
			denied = append(denied, describe(a))
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("the hub's identity in the member lacks %d permissions config/spoke grants: %s", len(denied), strings.Join(denied, "; "))
	}
	return nil
}

// describe is an access as `kubectl auth can-i` spells it.
func describe(a Access) string {
	res := a.Resource
	if a.Group != "" {
		res += "." + a.Group
	}
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Name != "" {
		res += "/" + a.Name
	}
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in " + a.Namespace
	}
	return a.Verb + " " + res + " " + where
}
