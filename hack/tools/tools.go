//go:build tools

// Package tools pins the developer tools built from this module: golangci-lint (`make lint`) and
// kind (`make test-e2e-kind`, hack/kind-e2e.sh).
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
	_ "sigs.k8s.io/kind"
)
