package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set by the linker, e.g.
//
//	go build -ldflags "-X github.com/urutau-io/fleet/internal/version.version=v0.1.0 \
//	  -X github.com/urutau-io/fleet/internal/version.revision=$(git rev-parse HEAD) \
//	  -X github.com/urutau-io/fleet/internal/version.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// Unexported variables so that only the linker sets them; Get is how to read them.
var (
	version   string
	revision  string
	buildDate string
)

// Info describes one build.
type Info struct {
	// Version is the release, e.g. v0.1.0; "(devel)" for a build from a work tree that was not
	// stamped, or the module version when the binary was built with `go install ...@vX`.
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from, with "-dirty" when the tree had
	// changes; "unknown" when neither the linker nor the toolchain recorded one.
	Revision string `json:"revision"`
	// BuildDate is when it was built (RFC 3339), or the commit time when only the toolchain
	// recorded it; "unknown" otherwise.
	BuildDate string `json:"buildDate"`
	// GoVersion is the Go toolchain that built it.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns this binary's build: the stamped values, completed from the build information the
// Go toolchain embeds (module version, vcs.revision, vcs.time, vcs.modified).
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, revision, buildDate, bi)
}

// resolve is Get without globals, for tests.
func resolve(stampedVersion, stampedRevision, stampedDate string, bi *debug.BuildInfo) Info {
	info := Info{
		Version:   stampedVersion,
		Revision:  stampedRevision,
		BuildDate: stampedDate,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi != nil {
		info.GoVersion = bi.GoVersion
		fromBuildInfo(&info, bi)
	}
	info.Version = orDefault(info.Version, "(devel)")
	info.Revision = orDefault(info.Revision, "unknown")
	info.BuildDate = orDefault(info.BuildDate, "unknown")
	return info
}

// fromBuildInfo fills what the linker left empty from the toolchain's record.
func fromBuildInfo(info *Info, bi *debug.BuildInfo) {
	if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if info.Revision == "" && settings["vcs.revision"] != "" {
		info.Revision = settings["vcs.revision"]
		if settings["vcs.modified"] == "true" {
			info.Revision += "-dirty"
		}
	}
	if info.BuildDate == "" {
		info.BuildDate = settings["vcs.time"]
	}
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// String is the one line `hub --version` prints.
func (i Info) String() string {
	return fmt.Sprintf("%s (revision %s, built %s, %s, %s)", i.Version, i.Revision, i.BuildDate, i.GoVersion, i.Platform)
}
