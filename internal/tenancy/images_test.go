package tenancy

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

const digestA = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestImagePatternMatches(t *testing.T) {
	tests := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		{pattern: "registry.example.com/team/*",
			yes: []string{"registry.example.com/team/a", "registry.example.com/team/a/b:v1", "REGISTRY.example.com/team/a@" + digestA},
			no:  []string{"registry.example.com/team", "registry.example.com/team-b/a", "registry.example.com.evil/team/a", "registry.example.com:443/team/a", "team/a", "evil.com/registry.example.com/team/a"}},
		{pattern: "ghcr.io/urutau-io/urutau",
			yes: []string{"ghcr.io/urutau-io/urutau", "ghcr.io/urutau-io/urutau:v1.8.0", "ghcr.io/urutau-io/urutau@" + digestA, "ghcr.io/urutau-io/urutau:v1@" + digestA},
			no:  []string{"ghcr.io/urutau-io/urutau-evil:v1", "ghcr.io/urutau-io/urutau/x:v1", "ghcr.io/urutau-io/urutaux"}},
		{pattern: "ghcr.io/urutau-io/urutau:*", yes: []string{"ghcr.io/urutau-io/urutau:v2"}, no: []string{"ghcr.io/urutau-io/other:v2"}},
		{pattern: "ghcr.io/urutau-io/urutau:v1.8.0", yes: []string{"ghcr.io/urutau-io/urutau:v1.8.0"}, no: []string{"ghcr.io/urutau-io/urutau:v1.8.1", "ghcr.io/urutau-io/urutau"}},
		{pattern: "ghcr.io/urutau-io/urutau@" + digestA, yes: []string{"ghcr.io/urutau-io/urutau:any@" + digestA}, no: []string{"ghcr.io/urutau-io/urutau:v1"}},
		// Docker Hub names are made explicit, as the runtime pulls them.
		{pattern: "urutau", yes: []string{"docker.io/library/urutau:1", "index.docker.io/library/urutau", "urutau:dev"}, no: []string{"evil/urutau", "ghcr.io/urutau"}},
		{pattern: "docker.io/acme/*", yes: []string{"acme/x:1", "docker.io/acme/y"}, no: []string{"acme", "acmex/y"}},
		{pattern: "localhost:5000/x", yes: []string{"localhost:5000/x:1"}, no: []string{"localhost/x", "localhost:5001/x"}},
		{pattern: "registry.example.com/*", yes: []string{"registry.example.com/a", "registry.example.com/a/b:1"}, no: []string{"registry.example.com.evil/a", "other.example/registry.example.com/a"}},
		{pattern: "my.app", yes: []string{"my.app:1", "docker.io/library/my.app"}, no: []string{"my.app/x"}},
		{pattern: "*", yes: []string{"anything:1", "evil.example/x@" + digestA}},
	}
	for _, tt := range tests {
		p, err := parseImagePattern(tt.pattern)
		if err != nil {
			t.Fatalf("pattern %q: %v", tt.pattern, err)
		}
		for _, img := range tt.yes {
			r, err := parseImageRef(img)
			if err != nil || !p.matches(r) {
				t.Errorf("%q should allow %q (%v)", tt.pattern, img, err)
			}
		}
		for _, img := range tt.no {
			if r, err := parseImageRef(img); err == nil && p.matches(r) {
				t.Errorf("%q should not allow %q", tt.pattern, img)
			}
		}
	}
	for _, bad := range []string{"", "registry/*/x", "*.example.com/x", "Upper/Case", "x:not a tag", "x@sha256:short", "registry.example.com/team/**"} {
		if err := ParseImagePatterns([]string{bad}); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

// TestImagePolicy: which images a pipeline may run, by the hub's flags and by the PlacementPolicy
// that grants each member. Nothing configured: only the default image.
func TestImagePolicy(t *testing.T) {
	const def = "ghcr.io/urutau-io/urutau:v1.8.0"
	policies := []urutauv1alpha1.PlacementPolicy{
		policy("shop-eu", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, Clusters: []string{"eu-1"},
			Images: &urutauv1alpha1.ImagePolicy{Allowed: []string{"registry.example.com/shop/*"}}}),
		policy("shop-pci", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, Clusters: []string{"pci-1"},
			Images: &urutauv1alpha1.ImagePolicy{Allowed: []string{"registry.example.com/shop/vetted"}, RequireDigest: true}}),
		policy("everyone", urutauv1alpha1.PlacementPolicySpec{NamespaceSelector: &metav1.LabelSelector{}, Clusters: []string{"lab-1"}}),
	}
	hub := ImageSettings{Default: def, Allowed: []string{"ghcr.io/urutau-io/urutau"}}
	b := Boundary{Policies: policies, Images: hub}
	shop := namespace("shop", nil)
	eu1, pci1, lab1 := inventory.Member{Name: "eu-1"}, inventory.Member{Name: "pci-1"}, inventory.Member{Name: "lab-1"}
	tests := []struct {
		name     string
		boundary Boundary
		member   inventory.Member
		image    string
		wantIn   []string // empty: allowed
	}{
		{name: "no image: the default", boundary: b, member: lab1},
		{name: "the default, named", boundary: b, member: lab1, image: def},
		{name: "the default, spelled out", boundary: b, member: lab1, image: "ghcr.io/urutau-io/urutau:v1.8.0"},
		{name: "hub-wide allowed repository", boundary: b, member: lab1, image: "ghcr.io/urutau-io/urutau:v1.9.0"},
		{name: "policy of the member", boundary: b, member: eu1, image: "registry.example.com/shop/app:1"},
		{name: "another member's policy does not carry over", boundary: b, member: lab1, image: "registry.example.com/shop/app:1",
			wantIn: []string{`spec.image: image "registry.example.com/shop/app:1" is not allowed on member "lab-1"`, `PlacementPolicy "everyone" allows no images`}},
		{name: "policy requires a digest", boundary: b, member: pci1, image: "registry.example.com/shop/vetted:1",
			wantIn: []string{`PlacementPolicy "shop-pci" allows it on member "pci-1" only by digest`}},
		{name: "by digest", boundary: b, member: pci1, image: "registry.example.com/shop/vetted@" + digestA},
		{name: "the pci member does not take the eu images", boundary: b, member: pci1, image: "registry.example.com/shop/app@" + digestA,
			wantIn: []string{`"shop-pci" [registry.example.com/shop/vetted] (by digest)`}},
		{name: "an attacker's image", boundary: b, member: eu1, image: "evil.example/miner:latest",
			wantIn: []string{"not allowed", `--allowed-images [ghcr.io/urutau-io/urutau]`, `PlacementPolicy "shop-eu" [registry.example.com/shop/*]`}},
		{name: "closed by default", boundary: Boundary{Policies: policies, Images: ImageSettings{Default: def}}, member: lab1, image: "ghcr.io/urutau-io/urutau:v1.9.0",
			wantIn: []string{`the hub's default image "ghcr.io/urutau-io/urutau:v1.8.0"`}},
		{name: "hub requires digests", boundary: Boundary{Policies: policies, Images: ImageSettings{Default: def, Allowed: []string{"*"}, RequireDigest: true}}, member: lab1,
			image: "ghcr.io/urutau-io/urutau:v1.9.0", wantIn: []string{"--require-image-digests", "ghcr.io/urutau-io/urutau:v1.9.0@sha256:<digest>"}},
		{name: "hub requires digests, but not of the default", boundary: Boundary{Images: ImageSettings{Default: def, RequireDigest: true}}, member: lab1, image: def},
		{name: "not an image reference", boundary: b, member: eu1, image: "registry.example.com/shop/App",
			wantIn: []string{"is not an image reference"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
			p.Spec.Image = tt.image
			err := tt.boundary.CheckImages(shop, tt.member, "shop", p)
			if len(tt.wantIn) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var d *Denial
			if !errors.As(err, &d) || d.Reason != ReasonImageNotAllowed {
				t.Fatalf("err = %v, want a %s denial", err, ReasonImageNotAllowed)
			}
			for _, w := range tt.wantIn {
				if !strings.Contains(d.Message, w) {
					t.Errorf("message %q does not contain %q", d.Message, w)
				}
			}
		})
	}
}

// TestImageFor: the image a member runs comes from the last override naming it that sets one,
// and the denial names that field.
func TestImageFor(t *testing.T) {
	p := &urutauv1alpha1.CDCPipeline{}
	p.Spec.Image = "a:1"
	p.Spec.Overrides = []urutauv1alpha1.ClusterOverride{
		{Clusters: []string{"x", "y"}, Image: "b:1"},
		{Clusters: []string{"y"}, LogLevel: "debug"},
		{Clusters: []string{"y", "z"}, Image: "c:1"},
	}
	for member, want := range map[string][2]string{
		"x": {"spec.overrides[0].image", "b:1"}, "y": {"spec.overrides[2].image", "c:1"},
		"z": {"spec.overrides[2].image", "c:1"}, "w": {"spec.image", "a:1"},
	} {
		if f, img := ImageFor(p, member); f != want[0] || img != want[1] {
			t.Errorf("ImageFor(%s) = %s %s, want %v", member, f, img, want)
		}
	}
	b := Boundary{Images: ImageSettings{Default: "a:1"}, Policies: []urutauv1alpha1.PlacementPolicy{
		policy("p", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"n"}, ClusterSelector: &metav1.LabelSelector{}}),
	}}
	err := b.CheckImages(namespace("n", nil), inventory.Member{Name: "y"}, "n", p)
	if err == nil || !strings.HasPrefix(err.Error(), `spec.overrides[2].image: image "c:1" is not allowed on member "y"`) {
		t.Errorf("err = %v", err)
	}
	if err := b.CheckImages(namespace("n", nil), inventory.Member{Name: "w"}, "n", p); err != nil {
		t.Errorf("spec.image is the default: %v", err)
	}
	if got := ImageFields(p); len(got) != 3 || got[1] != (ImageField{"spec.overrides[0].image", "b:1"}) {
		t.Errorf("ImageFields = %v", got)
	}
}

// TestImagePolicyForNamespace: at admission, before a member is chosen, an image is refused when
// no policy that governs the namespace allows it anywhere.
func TestImagePolicyForNamespace(t *testing.T) {
	b := Boundary{Images: ImageSettings{Default: "d:1"}, Policies: []urutauv1alpha1.PlacementPolicy{
		policy("a", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"n"}, Clusters: []string{"m1"}, Images: &urutauv1alpha1.ImagePolicy{Allowed: []string{"r.example/a/*"}}}),
		policy("other", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"o"}, Clusters: []string{"m1"}, Images: &urutauv1alpha1.ImagePolicy{Allowed: []string{"*"}}}),
	}}
	ip := b.ImagePolicyForNamespace(namespace("n", nil))
	if err := ip.Check("spec.image", "r.example/a/x:1"); err != nil {
		t.Errorf("allowed by the governing policy: %v", err)
	}
	if err := ip.Check("spec.image", "r.example/b/x:1"); err == nil || strings.Contains(err.Error(), `"other"`) {
		t.Errorf("err = %v: want a refusal that does not consider another namespace's policy", err)
	}
}
