package webhook

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// TestImageDenials: the admission side of the image policy, without an API server. An image no
// policy of the namespace (nor the hub) allows is an error at its field; one allowed somewhere but
// not on a member of placement.clusters is an error there, and on a member only the selector picks
// a warning.
func TestImageDenials(t *testing.T) {
	b := tenancy.Boundary{Images: tenancy.ImageSettings{Default: "ghcr.io/urutau-io/urutau:1"}, Policies: []urutauv1alpha1.PlacementPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-eu"}, Spec: urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, Clusters: []string{"eu-1"},
			Images: &urutauv1alpha1.ImagePolicy{Allowed: []string{"registry.example.com/shop/*"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-us"}, Spec: urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"},
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}}},
	}}
	members := []inventory.Member{{Name: "eu-1"}, {Name: "us-1", Labels: map[string]string{"region": "us"}}}
	hubNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}

	p := pipeline(named("shop", "orders"), clusters("eu-1"), func(p *urutauv1alpha1.CDCPipeline) {
		p.Spec.Image = "evil.example/miner:1"
		p.Spec.Overrides = []urutauv1alpha1.ClusterOverride{{Clusters: []string{"eu-1"}, Image: "registry.example.com/shop/app:1"}}
	})
	errs := namespaceImageErrors(b, hubNS, p)
	if len(errs) != 1 || errs[0].Field != "spec.image" || errs[0].Type != field.ErrorTypeForbidden ||
		!strings.Contains(errs[0].Detail, `image "evil.example/miner:1" is not allowed`) || strings.HasPrefix(errs[0].Detail, "spec.image") {
		t.Fatalf("namespace errors = %v", errs)
	}

	// Allowed on eu-1 by its policy, named on us-1 whose policy allows no image: an error.
	p = pipeline(named("shop", "orders"), clusters("eu-1", "us-1"), func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Image = "registry.example.com/shop/app:1" })
	if errs := namespaceImageErrors(b, hubNS, p); len(errs) != 0 {
		t.Fatalf("allowed by a policy of the namespace, refused: %v", errs)
	}
	errs, warns := memberImageDenials(b, hubNS, p, members, nil)
	if len(errs) != 1 || errs[0].Field != "spec.image" || !strings.Contains(errs[0].Detail, `on member "us-1"`) || len(warns) != 0 {
		t.Fatalf("member errors = %v, warnings %v", errs, warns)
	}

	// The same member picked by the selector only: a warning.
	p = pipeline(named("shop", "orders"), clusters("eu-1"), selector(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}),
		func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Image = "registry.example.com/shop/app:1" })
	errs, warns = memberImageDenials(b, hubNS, p, members, nil)
	if len(errs) != 0 || len(warns) != 1 || !strings.Contains(warns[0], `on member "us-1"`) {
		t.Fatalf("member errors = %v, warnings %v", errs, warns)
	}

	// A field refused for the namespace is not reported again per member.
	p.Spec.Image = "evil.example/miner:1"
	p.Spec.Placement.ClusterSelector = nil
	have := namespaceImageErrors(b, hubNS, p)
	if errs, _ := memberImageDenials(b, hubNS, p, members, have); len(errs) != 0 {
		t.Fatalf("reported twice: %v", errs)
	}
}

// TestWorkerNameErrors: the inline pipeline must be the CR's name, reported at its field once.
func TestWorkerNameErrors(t *testing.T) {
	if errs := workerNameErrors(pipeline(named("shop", "orders"))); len(errs) != 1 || errs[0].Field != "spec.definition.inline.pipeline" ||
		!strings.HasPrefix(errs[0].Detail, `must equal metadata.name "orders" (it is "shop")`) {
		t.Fatalf("errors = %v", errs)
	}
	if errs := workerNameErrors(pipeline(named("shop", "orders"), edit(func(d doc) { d["pipeline"] = "orders" }))); len(errs) != 0 {
		t.Fatalf("bound pipeline refused: %v", errs)
	}
	// An update that renames the pipeline gets the immutability error alone at that field.
	imm := field.ErrorList{field.Invalid(pipelinePath, "x", "is immutable")}
	if got := appendNewFields(imm, workerNameErrors(pipeline(named("shop", "orders")))); len(got) != 1 {
		t.Errorf("two answers for one field: %v", got)
	}
}

// A table whose worker group is named like a coordinator is refused at its target, once; the
// rest of the definition is judged as before.
func TestWorkerGroupNamedLikeACoordinator(t *testing.T) {
	for _, target := range []string{"coordinator", "orders.coordinator"} {
		p := pipeline(edit(func(d doc) { d["tables"].([]any)[1].(doc)["target"] = target }))
		errs, _ := ValidateSpec(p)
		if len(errs) != 1 || errs[0].Field != "spec.definition.inline.tables[1].target" || !strings.Contains(errs[0].Detail, "-coordinator") {
			t.Errorf("target %q: errors = %v", target, errs)
		}
	}
	if errs, _ := ValidateSpec(pipeline(edit(func(d doc) { d["tables"].([]any)[1].(doc)["target"] = "raw.coordinators" }))); len(errs) != 0 {
		t.Errorf("target raw.coordinators refused: %v", errs)
	}
}

// With maintenance on, a table whose maintenance pod name is cut to 63 characters is refused at
// its target: cut, it names whatever the target spells (the underscores become dashes, which the
// cut trims), here the coordinator pod of pipeline
// shop-orders. With maintenance off the Role grants no pods, and the same table passes.
func TestMaintenanceNameCut(t *testing.T) {
	target := "orders.coordinator-0" + strings.Repeat("_", 42) + "x" // a label value: 63, alphanumeric ends
	if got := coordinator.MaintenanceWorkerName("shop", target); got != "shop-orders-coordinator-0" {
		t.Fatalf("the attack no longer spells a coordinator pod: %q", got)
	}
	withTarget := func(target string, maintenance bool) *urutauv1alpha1.CDCPipeline {
		return pipeline(edit(func(d doc) {
			d["tables"].([]any)[1].(doc)["target"] = target
			if maintenance {
				d["sink"].(doc)["maintenance"] = doc{"enabled": true}
			}
		}))
	}
	errs, _ := ValidateSpec(withTarget(target, true))
	if len(errs) != 1 || errs[0].Field != "spec.definition.inline.tables[1].target" || !strings.Contains(errs[0].Detail, `"shop-orders-coordinator-0"`) {
		t.Fatalf("cut maintenance name: errors = %v", errs)
	}
	if errs, _ := ValidateSpec(withTarget(target, false)); len(errs) != 0 {
		t.Errorf("maintenance off: errors = %v", errs)
	}
	if errs, _ := ValidateSpec(withTarget("raw.customers_history", true)); len(errs) != 0 {
		t.Errorf("a short target with maintenance on: errors = %v", errs)
	}
}
