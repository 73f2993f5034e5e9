# urutau fleet. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
# The real control plane (kube-apiserver, etcd, kubectl, ...) lives in a per-user cache outside the
# clone, keyed by version, so fresh clones reuse it. hack/control-plane.sh fills it: from your own
# KUBEBUILDER_ASSETS when it is set, else prebuilt binaries (setup-envtest) when they can be had,
# else built from the Go module proxy; it says which.
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

# What `make build` stamps into the binaries (internal/version; `hub --version`, `kubectl urutau
# version`): v$(VERSION) when given, else what `git describe` says of the newest release tag
# (v0.1.0-3-gabc1234 three commits past it), else no version ("(devel)"); the commit and the date.
BUILD_VERSION ?= $(if $(VERSION),v$(VERSION),$(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null))
BUILD_LDFLAGS = -X $(VERSION_PKG).version=$(BUILD_VERSION) \
	-X $(VERSION_PKG).revision=$(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty) \
	-X $(VERSION_PKG).buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

.PHONY: build
build: ## Build the hub binary, the fence and the kubectl plugin into bin/, stamped with BUILD_VERSION (bin/hub, bin/fence, bin/kubectl-urutau).
	$(GO) build -ldflags "$(BUILD_LDFLAGS)" -o bin/hub ./cmd/hub
	CGO_ENABLED=0 $(GO) build -ldflags "$(BUILD_LDFLAGS)" -o bin/fence ./cmd/fence
	$(GO) build -ldflags "$(BUILD_LDFLAGS)" -o bin/kubectl-urutau ./cmd/kubectl-urutau
	@# kubectl runs kubectl_complete-urutau to complete `kubectl urutau ...`.
	ln -sf kubectl-urutau bin/kubectl_complete-urutau

.PHONY: demo
demo: control-plane build ## Run a local fleet (hub + 2 members, no Docker) with sample pipelines; Ctrl-C stops it.
	$(GO) run ./hack/demo up --bin-dir $(CONTROL_PLANE_DIR) $(DEMO_FLAGS)

.PHONY: demo-down
demo-down: ## Stop whatever `make demo` left running.
	$(GO) run ./hack/demo down --bin-dir $(CONTROL_PLANE_DIR)

##@ Test

.PHONY: control-plane
control-plane: ## Get kube-apiserver, etcd, kubectl, kwok... into the per-user cache: KUBEBUILDER_ASSETS, prebuilt, or built (idempotent).
	hack/control-plane.sh

.PHONY: test
test: control-plane test-monitoring ## Run every test, unit and integration, against real API servers.
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) $(GO) test ./... -count=1 -timeout 40m

.PHONY: test-e2e
test-e2e: control-plane ## Run only the multi-cluster e2e suite (test/kind) on a local fleet.
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) $(GO) test ./test/kind/ -count=1 -timeout 30m -v -ginkgo.v

.PHONY: test-e2e-kind
test-e2e-kind: ## Run the e2e suite on kind clusters with real kubelets; builds its node image (root; docker.io, debootstrap).
	hack/kind-e2e.sh $(KIND_E2E_FLAGS)

.PHONY: kind-up
kind-up: ## Create the kind hub and members of test-e2e-kind with the hub deployed, and keep them.
	hack/kind-e2e.sh up

.PHONY: kind-down
kind-down: ## Delete what kind-up or `KIND_E2E_FLAGS=--keep make test-e2e-kind` left, and stop its Docker engine.
	hack/kind-e2e.sh down

.PHONY: test-unit
test-unit: ## Run only the tests that need no API server.
	$(GO) test ./... -count=1 -short

# Targets of self-contained tools (bench, fault tests, ...) live next to them.
include $(wildcard hack/make/*.mk)
