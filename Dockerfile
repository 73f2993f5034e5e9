# The hub image: `docker build -t urutau-fleet-hub .` (hack/kind-e2e.sh builds and loads it).
# A static binary on distroless, non-root, as config/hub/manager runs it (runAsUser 65532,
# read-only root filesystem).

# Base images. Release builds pin them by digest, so a rebuilt tag cannot change what ships:
#   docker build --build-arg GO_IMAGE=golang:1.26@sha256:<digest> \
#     --build-arg BASE_IMAGE=gcr.io/distroless/static:nonroot@sha256:<digest> .
# (`docker buildx imagetools inspect <image>` prints a tag's current digest.) The defaults are the
# tags, for local builds.
ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static:nonroot

FROM ${GO_IMAGE} AS build
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
RUN go build -trimpath -ldflags="-s -w" -o /out/hub ./cmd/hub

FROM ${BASE_IMAGE}
COPY --from=build /out/hub /hub
USER 65532:65532
ENTRYPOINT ["/hub"]
