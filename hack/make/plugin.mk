# The kubectl plugin's release files: its archives for krew, the krew manifest dist/urutau.yaml,
# and dist/checksums.txt over every release file (docs/releasing.md).

##@ Release

# The plugin's platforms; internal/release names the archives (kubectl-urutau_vX.Y.Z_os_arch.tar.gz,
# .zip on Windows).
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64

.PHONY: release-plugin
release-plugin: ## Build kubectl-urutau for PLUGIN_PLATFORMS, stamped, and write its krew archives and dist/urutau.yaml for VERSION=x.y.z.
	@test -n "$(VERSION)" || { echo "usage: make release-plugin VERSION=x.y.z"; exit 1; }
	for platform in $(PLUGIN_PLATFORMS); do \
		os=$${platform%/*}; arch=$${platform#*/}; ext=; [ "$$os" = windows ] && ext=.exe; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" \
			-o dist/kubectl-urutau-$$os-$$arch$$ext ./cmd/kubectl-urutau || exit 1; \
	done
	$(GO) run ./hack/release plugin --version $(VERSION) --platforms "$(PLUGIN_PLATFORMS)" --out dist

.PHONY: release-checksums
release-checksums: ## Write dist/checksums.txt (sha256sum format) over the release files of VERSION=x.y.z: run it last.
	@test -n "$(VERSION)" || { echo "usage: make release-checksums VERSION=x.y.z"; exit 1; }
	$(GO) run ./hack/release checksums --version $(VERSION) --out dist
