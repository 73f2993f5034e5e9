# make release VERSION=x.y.z: the install manifests and the Helm chart of a release, in dist/
# (docs/releasing.md is the whole procedure: tag, image, these files, CHANGELOG).

##@ Release

VERSION ?=
# The hub image: pinned by digest when HUB_DIGEST is given (or dist/hub-image.digest exists,
# which `make release-image` writes), else by the tag v$(VERSION).
HUB_REPOSITORY ?= ghcr.io/urutau-io/urutau-fleet-hub
HUB_DIGEST ?= $(shell cat dist/hub-image.digest 2>/dev/null)
# The default coordinator image (urutau's own release), pinned by tag or digest, never latest.
COORDINATOR_IMAGE ?= ghcr.io/urutau-io/urutau:v0.3.0
PLATFORMS ?= linux/amd64,linux/arm64
VERSION_PKG := github.com/urutau-io/fleet/internal/version
LDFLAGS = -X $(VERSION_PKG).version=v$(VERSION) -X $(VERSION_PKG).revision=$(shell git rev-parse HEAD) \
	-X $(VERSION_PKG).buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

.PHONY: release
release: ## Write dist/install.yaml, dist/install-cert-manager.yaml and the chart for VERSION=x.y.z.
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=x.y.z"; exit 1; }
	$(GO) run ./hack/release --version $(VERSION) --hub-repository $(HUB_REPOSITORY) \
		--hub-digest "$(HUB_DIGEST)" --coordinator-image $(COORDINATOR_IMAGE) --out dist

.PHONY: release-binaries
release-binaries: ## Build stamped hub and kubectl-urutau binaries for linux and darwin, amd64 and arm64, into dist/.
	@test -n "$(VERSION)" || { echo "usage: make release-binaries VERSION=x.y.z"; exit 1; }
	for os in linux darwin; do for arch in amd64 arm64; do \
		for cmd in hub kubectl-urutau; do \
			CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" \
				-o dist/$$cmd-$$os-$$arch ./cmd/$$cmd || exit 1; \
		done; \
	done; done

.PHONY: release-image
release-image: ## Build and push the multi-architecture hub image (needs Docker buildx); records its digest in dist/hub-image.digest.
	@test -n "$(VERSION)" || { echo "usage: make release-image VERSION=x.y.z"; exit 1; }
	mkdir -p dist
	docker buildx build --platform $(PLATFORMS) --push \
		--build-arg VERSION=v$(VERSION) --build-arg REVISION=$(shell git rev-parse HEAD) \
		--build-arg BUILD_DATE=$(shell date -u +%Y-%m-%dT%H:%M:%SZ) \
		--metadata-file dist/hub-image.json -t $(HUB_REPOSITORY):v$(VERSION) .
	sed -n 's/.*"containerimage.digest": *"\(sha256:[0-9a-f]*\)".*/\1/p' dist/hub-image.json > dist/hub-image.digest
	@echo "pushed $(HUB_REPOSITORY)@$$(cat dist/hub-image.digest)"
