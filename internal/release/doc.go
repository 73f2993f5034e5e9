// Package release builds what a release ships: dist/install.yaml (the hub with a self-signed
// webhook certificate), dist/install-cert-manager.yaml (the same with cert-manager issuing it),
// both with their images pinned, and the packaged Helm chart. It also renders the chart as
// `helm template` does, with Helm's own Go packages, for the tests that hold the chart equal to
// config/hub.
//
// hack/release is its command line (`make release VERSION=x.y.z`). It reads the repository and
// writes files; it never talks to a cluster or a registry.
package release
