# urutau fleet. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
# The real control plane (kube-apiserver, etcd, kubectl, ...) lives in a per-user cache outside the
# clone, keyed by version, so fresh clones reuse it. hack/control-plane.sh builds it.
CONTROL_PLANE_DIR := $(shell hack/control-plane.sh print-dir)
# Linters are pinned in their own module (hack/tools) so their dependencies stay out of go.mod;
# the binary is cached per user, keyed by its version.
URUTAU_CACHE := $(or $(URUTAU_CACHE_DIR),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/urutau-fleet)
GOLANGCI_LINT_VERSION := $(shell awk '$$1 == "require" && $$2 ~ /golangci-lint/ {print $$3}' hack/tools/go.mod)
GOLANGCI_LINT := $(URUTAU_CACHE)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: ## Generate deepcopy code for the API types, and docs/api.md from the CRD.
	$(CONTROLLER_GEN) object paths=./api/...
	$(GO) run ./hack/apidocs

.PHONY: manifests
manifests: ## Generate the CRD, RBAC and webhook manifests from markers, and the chart's copy of them.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/hub/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=hub paths=./internal/... output:rbac:artifacts:config=config/hub/rbac
	$(CONTROLLER_GEN) webhook paths=./internal/webhook/... output:webhook:artifacts:config=config/hub/webhook
	$(GO) run ./hack/chartgen
	$(GO) run ./hack/apidocs

# What generate and manifests write: the chart's copy of config/hub (hack/chartgen) and the API
# reference (hack/apidocs) too.
GENERATED_PATHS := api config charts docs/api.md

.PHONY: verify-gen
verify-gen: generate manifests ## Regenerate everything and fail if the tree changed.
	@git diff --exit-code -- $(GENERATED_PATHS) || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- $(GENERATED_PATHS))" || { git status --porcelain -- $(GENERATED_PATHS); echo "untracked generated files: commit them"; exit 1; }

.PHONY: fmt
fmt: ## Format the Go code.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

$(GOLANGCI_LINT):
	cd hack/tools && GOWORK=off $(GO) build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

##@ Build and run

.PHONY: build
build: ## Build the hub binary and the kubectl plugin into bin/ (bin/hub, bin/kubectl-urutau).
	$(GO) build -o bin/hub ./cmd/hub
	$(GO) build -o bin/kubectl-urutau ./cmd/kubectl-urutau

.PHONY: demo
demo: control-plane build ## Run a local fleet (hub + 2 members, no Docker) with sample pipelines; Ctrl-C stops it.
	$(GO) run ./hack/demo up --bin-dir $(CONTROL_PLANE_DIR) $(DEMO_FLAGS)

.PHONY: demo-down
demo-down: ## Stop whatever `make demo` left running.
	$(GO) run ./hack/demo down --bin-dir $(CONTROL_PLANE_DIR)

##@ Test

.PHONY: control-plane
control-plane: ## Build kube-apiserver, etcd, kubectl, kwok... into the per-user cache (idempotent).
	hack/control-plane.sh

.PHONY: test
test: control-plane test-monitoring ## Run every test, unit and integration, against real API servers.
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) $(GO) test ./... -count=1 -timeout 40m

.PHONY: test-e2e
test-e2e: control-plane ## Run only the multi-cluster e2e suite (test/kind) on a local fleet.
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) $(GO) test ./test/kind/ -count=1 -timeout 30m -v -ginkgo.v

.PHONY: test-e2e-kind
test-e2e-kind: ## Run the same e2e suite on kind clusters (needs Docker and kind node images).
	hack/kind-e2e.sh

.PHONY: test-unit
test-unit: ## Run only the tests that need no API server.
	$(GO) test ./... -count=1 -short

# Targets of self-contained tools (bench, fault tests, ...) live next to them.
include $(wildcard hack/make/*.mk)
