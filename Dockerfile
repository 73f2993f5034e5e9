# The hub image, for every architecture buildx targets:
#   docker build -t urutau-fleet-hub .                                   # this machine's architecture
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" \
#     -t ghcr.io/urutau-io/urutau-fleet-hub:v0.1.0 --push .             # a release (docs/releasing.md)
# A static binary on distroless, non-root, as config/hub/manager runs it (runAsUser 65532,
# read-only root filesystem). hack/kind-e2e.sh, which has no base image to pull, puts the same
# static binary on scratch instead.

# Base images. Release builds pin them by digest, so a rebuilt tag cannot change what ships:
#   docker build --build-arg GO_IMAGE=golang:1.26@sha256:<digest> \
#     --build-arg BASE_IMAGE=gcr.io/distroless/static:nonroot@sha256:<digest> .
# (`docker buildx imagetools inspect <image>` prints a tag's current digest.) The defaults are the
# tags, for local builds.
ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static:nonroot

# The compiler runs on the build machine's platform and cross-compiles to the target's (Go needs no
# emulation for that), so an arm64 image builds as fast as an amd64 one.
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src
# The module proxy to download from; pass yours with --build-arg GOPROXY="$(go env GOPROXY)".
ARG GOPROXY=https://proxy.golang.org,direct
ENV GOPROXY=${GOPROXY} CGO_ENABLED=0
# Dependencies first, in their own layer, so a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
# Only what cmd/hub imports (see .dockerignore).
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
# config/spoke is embedded in the binary: `hub join` applies it to members.
COPY config/spoke/ config/spoke/
# Set by buildx for each --platform.
ARG TARGETOS TARGETARCH
# What `hub --version` and urutau_fleet_build_info report (internal/version).
# Empty: taken from what the toolchain recorded, "(devel)" and "unknown" in an image.
ARG VERSION=
ARG REVISION=
ARG BUILD_DATE=
RUN GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags="-s -w \
      -X github.com/urutau-io/fleet/internal/version.version=${VERSION} \
      -X github.com/urutau-io/fleet/internal/version.revision=${REVISION} \
      -X github.com/urutau-io/fleet/internal/version.buildDate=${BUILD_DATE}" \
    -o /out/hub ./cmd/hub
# The fence (cmd/fence): fenced coordinator pods copy it from this image in an init container
# (`/fence install`), so it ships in the hub's image, at the path the renderer names
# (internal/coordinator FenceInImage).
RUN GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags="-s -w \
      -X github.com/urutau-io/fleet/internal/version.version=${VERSION} \
      -X github.com/urutau-io/fleet/internal/version.revision=${REVISION} \
      -X github.com/urutau-io/fleet/internal/version.buildDate=${BUILD_DATE}" \
    -o /out/fence ./cmd/fence

FROM ${BASE_IMAGE}
ARG VERSION=
ARG REVISION=
LABEL org.opencontainers.image.title="urutau fleet hub" \
      org.opencontainers.image.source="https://github.com/urutau-io/fleet" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/hub /hub
COPY --from=build /out/fence /fence
USER 65532:65532
ENTRYPOINT ["/hub"]
