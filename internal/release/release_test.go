package release

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const goodDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestValidate(t *testing.T) {
	ok := Options{Version: "0.1.0", HubRepository: DefaultHubRepository, CoordinatorImage: "ghcr.io/urutau-io/urutau:v0.3.0"}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string // substring of the error; empty: valid
	}{
		{"valid", func(*Options) {}, ""},
		{"pre-release", func(o *Options) { o.Version = "1.2.3-rc.1" }, ""},
		{"hub by digest", func(o *Options) { o.HubDigest = goodDigest }, ""},
		{"coordinator by digest", func(o *Options) { o.CoordinatorImage = "ghcr.io/urutau-io/urutau@" + goodDigest }, ""},
		{"leading v", func(o *Options) { o.Version = "v0.1.0" }, `VERSION "v0.1.0": must be a semantic version`},
		{"no version", func(o *Options) { o.Version = "" }, "VERSION"},
		{"short digest", func(o *Options) { o.HubDigest = "sha256:abc" }, "HUB_DIGEST"},
		{"coordinator latest", func(o *Options) { o.CoordinatorImage = "ghcr.io/urutau-io/urutau:latest" }, "COORDINATOR_IMAGE"},
		{"coordinator untagged", func(o *Options) { o.CoordinatorImage = "ghcr.io/urutau-io/urutau" }, "COORDINATOR_IMAGE"},
		{"coordinator registry port only", func(o *Options) { o.CoordinatorImage = "localhost:5000/urutau" }, "COORDINATOR_IMAGE"},
		{"repository with tag", func(o *Options) { o.HubRepository = "x@sha256:1" }, "hub repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("want valid, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("want an error naming %q, got %v", tc.want, err)
			}
		})
	}
}

func TestHubImage(t *testing.T) {
	o := Options{Version: "0.1.0", HubRepository: "r/hub"}
	if got := o.HubImage(); got != "r/hub:v0.1.0" {
		t.Errorf("by tag: %s", got)
	}
	o.HubDigest = goodDigest
	if got := o.HubImage(); got != "r/hub@"+goodDigest {
		t.Errorf("by digest: %s", got)
	}
}

func TestPinValuesFile(t *testing.T) {
	in := "image:\n  repository: old\n  # comment\n  digest: \"\"\ncoordinatorImage: old:latest\nother:\n  repository: untouched\n"
	got := string(pinValuesFile([]byte(in), Options{HubRepository: "r/hub", HubDigest: goodDigest, CoordinatorImage: "c:v1"}))
	want := "image:\n  repository: r/hub\n  # comment\n  digest: \"" + goodDigest + "\"\ncoordinatorImage: c:v1\nother:\n  repository: untouched\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestCheckApplyOrder(t *testing.T) {
	ns := obj("v1", "Namespace", "", "sys")
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com")
	crd.Object["spec"] = map[string]any{"group": "example.com", "names": map[string]any{"kind": "Widget"}}
	sa := obj("v1", "ServiceAccount", "sys", "hub")
	widget := obj("example.com/v1", "Widget", "", "w")
	svc := obj("v1", "Service", "sys", "webhook")
	vwc := obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "hooks")
	vwc.Object["webhooks"] = []any{map[string]any{"clientConfig": map[string]any{"service": map[string]any{"namespace": "sys", "name": "webhook"}}}}
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
		want []string // substrings of the error; none: in order
	}{
		{"in order", []*unstructured.Unstructured{ns, crd, sa, widget, svc, vwc}, nil},
		{"a Namespace that is not in the file is someone else's", []*unstructured.Unstructured{sa}, nil},
		{"namespaced object first", []*unstructured.Unstructured{sa, ns}, []string{"ServiceAccount hub (document 1) comes before Namespace/sys (document 2)"}},
		{"custom resource before its CRD", []*unstructured.Unstructured{widget, crd}, []string{"Widget w (document 1) comes before CustomResourceDefinition/example.com/Widget"}},
		{"webhook before its Service", []*unstructured.Unstructured{ns, vwc, svc}, []string{"ValidatingWebhookConfiguration hooks (document 2) comes before Service/sys/webhook (document 3)"}},
		{"every problem", []*unstructured.Unstructured{sa, widget, ns, crd}, []string{"ServiceAccount hub", "Widget w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckApplyOrder(tc.objs)
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("want no error, got %v", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("want an error saying %q, got %v", w, err)
				}
			}
		})
	}
}

func obj(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// TestInstallManifestsApplyInOrder builds every install manifest from this repository: each must
// come out in an order `kubectl apply -f` can follow (InstallManifest refuses otherwise), with the
// Namespace and the CRDs first.
func TestInstallManifestsApplyInOrder(t *testing.T) {
	o := Options{Version: "0.1.0", HubRepository: DefaultHubRepository, CoordinatorImage: "ghcr.io/urutau-io/urutau:v0.3.0"}
	for _, v := range Variants {
		t.Run(v.File, func(t *testing.T) {
			raw, err := InstallManifest("../..", v, o)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, doc := range strings.Split(string(raw), "\n---\n")[1:] {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, u.GetKind())
			}
			if len(kinds) < 5 || kinds[0] != "Namespace" || kinds[1] != "CustomResourceDefinition" {
				t.Errorf("%s starts with %v, want the Namespace, then the CRDs", v.File, kinds[:min(len(kinds), 5)])
			}
		})
	}
}

func TestDigestFromRecord(t *testing.T) {
	o := Options{Version: "0.2.0", HubRepository: "ghcr.io/urutau-io/urutau-fleet-hub"}
	for _, tc := range []struct {
		name, record string
		want         string // the digest, or a substring of the error
		ok           bool
	}{
		{"this release", "ghcr.io/urutau-io/urutau-fleet-hub:v0.2.0@" + goodDigest + "\n", goodDigest, true},
		{"the previous release", "ghcr.io/urutau-io/urutau-fleet-hub:v0.1.0@" + goodDigest, "records ghcr.io/urutau-io/urutau-fleet-hub:v0.1.0, not ghcr.io/urutau-io/urutau-fleet-hub:v0.2.0", false},
		{"another repository", "example.com/fork/hub:v0.2.0@" + goodDigest, "records example.com/fork/hub:v0.2.0", false},
		{"a bare digest, of who knows which build", goodDigest, "run `make release-image VERSION=0.2.0` again", false},
		{"empty", "", "not ghcr.io/urutau-io/urutau-fleet-hub:v0.2.0@sha256:<digest>", false},
		{"a short digest", "ghcr.io/urutau-io/urutau-fleet-hub:v0.2.0@sha256:abc", "not ghcr.io", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DigestFromRecord(tc.record, o)
			switch {
			case tc.ok && (err != nil || got != tc.want):
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %q, %v; want an error saying %q", got, err, tc.want)
			}
		})
	}
}
