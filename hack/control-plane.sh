#!/usr/bin/env bash
# control-plane.sh [print-dir]
#
# Builds the real Kubernetes control plane the tests, the demo and the e2e suite run on, from the Go
# module proxy only (no release downloads, no images): kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl (k8s), etcd, kwok and kwokctl.
#
# The binaries go to a per-user cache outside the clone, keyed by the pinned versions, so every fresh
# clone (CI's included) reuses them:
#   ${URUTAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/urutau-fleet}/control-plane/<key>/bin
# With `print-dir` it only prints that directory. A binary is rebuilt only when it is missing or
# reports another version, so a warm run takes a few seconds.
#
# Why a throwaway module: k8s.io/kubernetes replaces every k8s.io/<staging> module with a local path,
# and a dependency's replace directives are ignored, so `go install k8s.io/kubernetes/cmd/...@v` fails.
# A module that requires k8s.io/kubernetes and replaces each staging module (required at v0.0.0) with
# its published v0.<minor>.<patch> builds.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}

cache=${URUTAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/urutau-fleet}
root=$cache/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION
bin=$root/bin

if [ "${1:-}" = print-dir ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$bin" "$root/src"
# Never pick up a surrounding go.work, never stamp VCS info, static binaries.
export GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0

log() { printf '[control-plane %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# reports BINARY WANT ARGS...: true when BINARY exists and its version output contains WANT.
reports() {
  local b=$1 want=$2 out
  shift 2
  [ -x "$b" ] || return 1
  out=$("$b" "$@" 2>/dev/null) || return 1
  [[ $out == *"$want"* ]]
}

# throwaway_module DIR NAME REQUIRE...: writes a module that imports the given main packages.
write_tools_go() {
  local dir=$1
  shift
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for p in "$@"; do echo "	_ \"$p\""; done
    echo ")"
  } >"$dir/tools.go"
}

start=$(date +%s)

# ------------------------------------------------------------------------------------- kubernetes
k8s_cmds=()
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  reports "$bin/$c" "Kubernetes $K8S_VERSION" --version || k8s_cmds+=("$c")
done
reports "$bin/kubectl" "Client Version: $K8S_VERSION" version --client || k8s_cmds+=(kubectl)

if [ ${#k8s_cmds[@]} -gt 0 ]; then
  log "kubernetes $K8S_VERSION: building ${k8s_cmds[*]}"
  minor=$(echo "${K8S_VERSION#v1.}" | cut -d. -f1)
  patch=$(echo "${K8S_VERSION#v1.}" | cut -d. -f2)
  dir=$root/src/kubernetes
  mkdir -p "$dir"
  upstream_mod=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [ -f "$upstream_mod" ] || { log "cannot download the go.mod of k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
  {
    echo "module urutau.local/control-plane/kubernetes"
    echo
    echo "go $(awk '$1=="go"{print $2; exit}' "$upstream_mod")"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    awk -v v="v0.$minor.$patch" '/^require \(/{f=1;next} f&&/^\)/{f=0}
      f && $1 ~ /^k8s\.io\// && $2=="v0.0.0" {print "\t" $1 " => " $1 " " v}' "$upstream_mod"
    echo ")"
  } >"$dir/go.mod"
  write_tools_go "$dir" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  (cd "$dir" && go mod tidy)
  # Unstamped binaries report v0.0.0-master, which kwokctl and version checks misread.
  ldflags="-s -w"
  for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  pkgs=()
  for c in "${k8s_cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  # The tags upstream uses for non-debug builds.
  (cd "$dir" && go build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$bin/" "${pkgs[@]}")
else
  log "kubernetes $K8S_VERSION: up to date"
fi

# ------------------------------------------------------------------------------------------- etcd
if ! reports "$bin/etcd" "etcd Version: ${ETCD_VERSION#v}" --version; then
  log "etcd $ETCD_VERSION: building"
  dir=$root/src/etcd
  mkdir -p "$dir"
  printf 'module urutau.local/control-plane/etcd\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
    "$ETCD_VERSION" >"$dir/go.mod"
  write_tools_go "$dir" go.etcd.io/etcd/server/v3
  (cd "$dir" && go mod tidy)
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)
else
  log "etcd $ETCD_VERSION: up to date"
fi

# ------------------------------------------------------------------------------------------- kwok
if ! reports "$bin/kwok" "kwok version $KWOK_VERSION" --version ||
  ! reports "$bin/kwokctl" "kwokctl version $KWOK_VERSION" --version; then
  log "kwok $KWOK_VERSION: building"
  dir=$root/src/kwok
  mkdir -p "$dir"
  printf 'module urutau.local/control-plane/kwok\n\ngo 1.26.0\n\nrequire sigs.k8s.io/kwok %s\n' \
    "$KWOK_VERSION" >"$dir/go.mod"
  write_tools_go "$dir" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl
  (cd "$dir" && go mod tidy)
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$bin/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
else
  log "kwok $KWOK_VERSION: up to date"
fi

log "ready in $(($(date +%s) - start))s: $bin"
