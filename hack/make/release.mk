# make release VERSION=x.y.z: the install manifests and the Helm chart of a release, in dist/
# (docs/releasing.md is the whole procedure: tag, image, these files, CHANGELOG).

##@ Release

VERSION ?=
# Where the release files go.
DIST ?= dist
# The hub image: pinned by digest when HUB_DIGEST is given, or when $(DIST)/hub-image.digest
# records the image `make release-image` pushed for this VERSION and HUB_REPOSITORY (a record of
# another version or repository fails the release: it would install another build); else by the
# tag v$(VERSION).
HUB_REPOSITORY ?= ghcr.io/urutau-io/urutau-fleet-hub
HUB_DIGEST ?=
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
		--hub-digest "$(HUB_DIGEST)" --hub-digest-record $(DIST)/hub-image.digest \
		--coordinator-image $(COORDINATOR_IMAGE) --out $(DIST)

.PHONY: release-binaries
release-binaries: ## Build stamped hub binaries for linux and darwin, amd64 and arm64, into dist/ (the plugin: make release-plugin).
	@test -n "$(VERSION)" || { echo "usage: make release-binaries VERSION=x.y.z"; exit 1; }
	for os in linux darwin; do for arch in amd64 arm64; do \
		for cmd in hub; do \
			CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" \
				-o dist/$$cmd-$$os-$$arch ./cmd/$$cmd || exit 1; \
		done; \
	done; done

.PHONY: release-image
release-image: ## Build and push the multi-architecture hub image (needs Docker buildx); records it, with its digest, in dist/hub-image.digest.
	@test -n "$(VERSION)" || { echo "usage: make release-image VERSION=x.y.z"; exit 1; }
	mkdir -p $(DIST)
	rm -f $(DIST)/hub-image.digest
	docker buildx build --platform $(PLATFORMS) --push \
		--build-arg VERSION=v$(VERSION) --build-arg REVISION=$(shell git rev-parse HEAD) \
		--build-arg BUILD_DATE=$(shell date -u +%Y-%m-%dT%H:%M:%SZ) \
		--metadata-file $(DIST)/hub-image.json -t $(HUB_REPOSITORY):v$(VERSION) .
	digest=$$(sed -n 's/.*"containerimage.digest": *"\(sha256:[0-9a-f]*\)".*/\1/p' $(DIST)/hub-image.json); \
		test -n "$$digest" || { echo "no digest in $(DIST)/hub-image.json"; exit 1; }; \
		echo "$(HUB_REPOSITORY):v$(VERSION)@$$digest" > $(DIST)/hub-image.digest
	@echo "pushed $$(cat $(DIST)/hub-image.digest)"
