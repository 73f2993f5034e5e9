package release

import (
	"strings"
	"testing"
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
