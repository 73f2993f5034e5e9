# The hub image: `docker build -t urutau-fleet-hub .` (hack/kind-e2e.sh builds and loads it).
# A static binary on distroless, non-root, as config/hub/manager runs it (runAsUser 65532,
# read-only root filesystem).

FROM golang:1.26 AS build
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

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/hub /hub
USER 65532:65532
ENTRYPOINT ["/hub"]
