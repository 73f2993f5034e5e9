package main

import (
	"fmt"
	"io"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/urutau-io/fleet/internal/version"
)

// The manager serves controller-runtime's registry: the build gauge is there from the start.
func init() {
	if err := version.RegisterBuildInfo(metrics.Registry); err != nil {
		panic(fmt.Sprintf("registering %s: %v", version.BuildInfoMetric, err))
	}
}

// versionRequested is true for `hub --version`, `hub -version` and `hub version`: the version is
// printed whatever else the command line says, without the flags being validated (a bare
// `hub --version` lacks the required --coordinator-image).
func versionRequested(args []string) bool {
	if len(args) > 0 && args[0] == "version" {
		return true
	}
	return slices.ContainsFunc(args, func(a string) bool { return a == "--version" || a == "-version" })
}

// printVersion writes the line `hub --version` prints.
func printVersion(w io.Writer) {
	fmt.Fprintln(w, "hub", version.Get())
}
