package version

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestResolve(t *testing.T) {
	vcs := func(rev, at, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified},
		}}
	}
	for _, tc := range []struct {
		name                  string
		version, revision, at string
		bi                    *debug.BuildInfo
		want                  Info
	}{{
		name: "stamped by the linker wins", version: "v0.1.0", revision: "abc", at: "2026-12-01T00:00:00Z",
		bi:   vcs("def", "2026-11-30T00:00:00Z", "true"),
		want: Info{Version: "v0.1.0", Revision: "abc", BuildDate: "2026-12-01T00:00:00Z", GoVersion: "go1.26.8"},
	}, {
		name: "a work tree build: revision and time from the toolchain, dirty marked",
		bi:   vcs("def", "2026-11-30T00:00:00Z", "true"),
		want: Info{Version: "(devel)", Revision: "def-dirty", BuildDate: "2026-11-30T00:00:00Z", GoVersion: "go1.26.8"},
	}, {
		name: "go install module@version",
		bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}},
		want: Info{Version: "v0.2.0", Revision: "unknown", BuildDate: "unknown", GoVersion: "go1.26.8"},
	}, {
		name: "no build information at all",
		want: Info{Version: "(devel)", Revision: "unknown", BuildDate: "unknown"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.version, tc.revision, tc.at, tc.bi)
			if tc.want.GoVersion == "" {
				tc.want.GoVersion = got.GoVersion // runtime.Version(): whatever runs the test
			}
			tc.want.Platform = got.Platform
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if !strings.HasPrefix(got.String(), got.Version+" (revision "+got.Revision) {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

func TestBuildInfoMetric(t *testing.T) {
	r := prometheus.NewRegistry()
	if err := RegisterBuildInfo(r); err != nil {
		t.Fatal(err)
	}
	if err := RegisterBuildInfo(r); err != nil {
		t.Fatalf("registering twice: %v", err)
	}
	info := Get()
	want := `# HELP urutau_fleet_build_info Build of the running urutau fleet hub: always 1, with its version, revision and Go version as labels.
# TYPE urutau_fleet_build_info gauge
urutau_fleet_build_info{goversion="` + info.GoVersion + `",revision="` + info.Revision + `",version="` + info.Version + `"} 1
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), BuildInfoMetric); err != nil {
		t.Error(err)
	}
}
