// Package spoke embeds this directory, what a member cluster needs, so that `hub join` and
// `kubectl urutau join` apply exactly these manifests to a member without a checkout of the
// repository (internal/join builds them with kustomize).
package spoke

import "embed"

// FS holds the kustomizations of this directory and its subdirectories.
//
//go:embed *
var FS embed.FS
