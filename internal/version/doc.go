// Package version says which build of urutau fleet is running: the release version, the source
// revision and the build date, stamped at build time with -ldflags -X (see the Dockerfile and
// hack/make/release.mk) and otherwise taken from what the Go toolchain recorded in the binary.
//
// It also exports the build as the metric urutau_fleet_build_info. It depends on nothing of this
// module, so every binary (the hub, the kubectl plugin) can import it.
package version
