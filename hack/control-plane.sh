#!/usr/bin/env bash
# control-plane.sh [ensure | print-dir | build-k8s SRC_DIR OUT_DIR CMD...]
#
# The real Kubernetes control plane the tests, the demo and the e2e suite run on: kube-apiserver,
# etcd and kubectl (what envtest starts), kube-controller-manager, kube-scheduler, kwok and
# kwokctl (what the local fleets add). `make test` points KUBEBUILDER_ASSETS at the directory this
# prints and fills.
#
# Each binary comes from the first of these that has it, and the script says which and how long it
# took (also written to SOURCES in the directory):
#   1. KUBEBUILDER_ASSETS, when it is set already (your own envtest binaries): used as they are,
#      whatever their versions, linked into a directory of their own that the steps below complete
#      with the binaries envtest does not ship.
#   2. prebuilt, when they can be downloaded (CONTROL_PLANE_PREBUILT=false skips this): the envtest
#      binaries (kube-apiserver, etcd, kubectl) from setup-envtest
#      (sigs.k8s.io/controller-runtime/tools/setup-envtest, itself built from the Go module proxy),
#      and kube-controller-manager and kube-scheduler from Kubernetes' release binaries, checked
#      against their published sha256.
#   3. built from the Go module proxy, which always works where Go modules can be fetched (and is
#      the only way on machines that reach nothing else).
# A binary already in place with the expected version is kept: a warm run takes seconds and never
# goes to the network.
#
# The binaries go to a per-user cache outside the clone, keyed by the pinned versions, so every fresh
# clone (CI's included) reuses them:
#   ${URUTAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/urutau-fleet}/control-plane/<key>/bin
# With `print-dir` it only prints the directory (KUBEBUILDER_ASSETS's own when that is set) and
# touches nothing.
#
# Why a throwaway module for the build: k8s.io/kubernetes replaces every k8s.io/<staging> module with
# a local path, and a dependency's replace directives are ignored, so `go install
# k8s.io/kubernetes/cmd/...@v` fails. A module that requires k8s.io/kubernetes and replaces each
# staging module (required at v0.0.0) with its published v0.<minor>.<patch> builds.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
# The newest setup-envtest the Go module proxy serves; SETUP_ENVTEST names another command to run
# in its place (hack/controlplane's tests do).
SETUP_ENVTEST_VERSION=${SETUP_ENVTEST_VERSION:-v0.25.1}
SETUP_ENVTEST=${SETUP_ENVTEST:-}
CONTROL_PLANE_PREBUILT=${CONTROL_PLANE_PREBUILT:-true}
# Where Kubernetes' release binaries are published (<base>/<version>/bin/<os>/<arch>/<name>).
K8S_RELEASE_URL=${K8S_RELEASE_URL:-https://dl.k8s.io/release}

cache=${URUTAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/urutau-fleet}
root=$cache/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION
bin=$root/bin

envtest_bins=(kube-apiserver etcd kubectl)
fleet_bins=(kube-controller-manager kube-scheduler kwok kwokctl)

# assets_dir: the directory the tests use. With KUBEBUILDER_ASSETS set (and not one of ours), one
# of its own, named after that path.
assets_dir() {
  local given=${KUBEBUILDER_ASSETS:-}
  if [ -z "$given" ] || [[ $given == "$cache/control-plane/"* ]]; then
    echo "${given:-$bin}"
    return
  fi
  echo "$cache/control-plane/assets-$(printf '%s' "$given" | sha256sum | cut -c1-12)/bin"
}

if [ "${1:-ensure}" = print-dir ]; then
  assets_dir
  exit 0
fi
case ${1:-ensure} in
ensure | build-k8s) ;;
*) echo "usage: $0 [ensure | print-dir | build-k8s SRC_DIR OUT_DIR CMD...]" >&2; exit 2 ;;
esac

mkdir -p "$bin" "$root/src"
# Never pick up a surrounding go.work, never stamp VCS info, static binaries.
export GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0

log() { printf '[control-plane %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
sources=()
record() { sources+=("$1: $2"); log "$1: $2"; }

# reports BINARY WANT ARGS...: true when BINARY exists and its version output contains WANT.
reports() {
  local b=$1 want=$2 out
  shift 2
  [ -x "$b" ] || return 1
  out=$("$b" "$@" 2>/dev/null) || return 1
  [[ $out == *"$want"* ]]
}

# current NAME: the binary in $bin is the one this key wants. A prebuilt one carries a marker
# naming the Kubernetes version it was fetched for (envtest's etcd has envtest's version, not ours).
current() {
  local b=$bin/$1
  if [ -f "$bin/.prebuilt-$1" ] && [ "$(cat "$bin/.prebuilt-$1")" = "$K8S_VERSION" ] && [ -x "$b" ]; then
    return 0
  fi
  case $1 in
  kubectl) reports "$b" "Client Version: $K8S_VERSION" version --client ;;
  kube-*) reports "$b" "Kubernetes $K8S_VERSION" --version ;;
  etcd) reports "$b" "etcd Version: ${ETCD_VERSION#v}" --version ;;
  kwok | kwokctl) reports "$b" "$1 version $KWOK_VERSION" --version ;;
  esac
}

# missing NAMES...: those of NAMES that are not current, on stdout.
missing() {
  local n
  for n in "$@"; do current "$n" || echo "$n"; done
}

# install_prebuilt NAME FILE: puts a fetched binary in place, marked as prebuilt for K8S_VERSION.
install_prebuilt() {
  install -m 0755 "$2" "$bin/$1"
  echo "$K8S_VERSION" >"$bin/.prebuilt-$1"
}

# prebuilt_envtest NAMES...: kube-apiserver, etcd, kubectl from setup-envtest.
prebuilt_envtest() {
  local tool=${SETUP_ENVTEST:-$cache/tools/setup-envtest-$SETUP_ENVTEST_VERSION} dir n errs=$root/setup-envtest.log
  if [ ! -x "$tool" ]; then
    mkdir -p "$cache/tools"
    GOBIN=$cache/tools/.build go install "sigs.k8s.io/controller-runtime/tools/setup-envtest@$SETUP_ENVTEST_VERSION" >&2 || return 1
    mv "$cache/tools/.build/setup-envtest" "$tool"
  fi
  dir=$("$tool" use "${K8S_VERSION#v}" --bin-dir "$cache/envtest" -p path 2>"$errs") || { log "setup-envtest: $(tail -1 "$errs")"; return 1; }
  for n in "$@"; do
    [ -x "$dir/$n" ] || { log "setup-envtest gave no $n in $dir"; return 1; }
  done
  for n in "$@"; do install_prebuilt "$n" "$dir/$n"; done
}

# prebuilt_release NAMES...: Kubernetes' release binaries, checked against their sha256.
prebuilt_release() {
  local tmp=$root/downloads n url sum platform
  platform=$(go env GOOS)/$(go env GOARCH)
  rm -rf "$tmp" && mkdir -p "$tmp"
  for n in "$@"; do
    url=$K8S_RELEASE_URL/$K8S_VERSION/bin/$platform/$n
    if ! curl -fsSL --connect-timeout 10 --max-time 900 -o "$tmp/$n" "$url" ||
      ! sum=$(curl -fsSL --connect-timeout 10 --max-time 60 "$url.sha256"); then
      log "cannot download $url (or its .sha256)"
      rm -rf "$tmp"
      return 1
    fi
    if ! echo "${sum%% *}  $tmp/$n" | sha256sum -c --quiet - >&2; then
      log "$url does not match its sha256"
      rm -rf "$tmp"
      return 1
    fi
  done
  for n in "$@"; do install_prebuilt "$n" "$tmp/$n"; done
  rm -rf "$tmp"
}

# write_tools_go DIR PACKAGES...: a file importing the given main packages, so `go mod tidy` keeps
# their modules.
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

# build_k8s SRC_DIR OUT_DIR CMD...: builds k8s.io/kubernetes/cmd/CMD... at $K8S_VERSION into OUT_DIR,
# through a throwaway module in SRC_DIR.
build_k8s() {
  local dir=$1 out=$2 minor patch upstream_mod ldflags p c pkgs=()
  shift 2
  minor=$(echo "${K8S_VERSION#v1.}" | cut -d. -f1)
  patch=$(echo "${K8S_VERSION#v1.}" | cut -d. -f2)
  mkdir -p "$dir" "$out"
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
  for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  write_tools_go "$dir" "${pkgs[@]}"
  (cd "$dir" && go mod tidy)
  # Unstamped binaries report v0.0.0-master, which kwokctl and version checks misread.
  ldflags="-s -w"
  for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  # The tags upstream uses for non-debug builds.
  (cd "$dir" && nice go build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$out/" "${pkgs[@]}")
}

# build_kubernetes NAMES...: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl.
build_kubernetes() {
  local c
  build_k8s "$root/src/kubernetes" "$bin" "$@"
  for c in "$@"; do rm -f "$bin/.prebuilt-$c"; done
}

build_etcd() {
  local dir=$root/src/etcd
  mkdir -p "$dir"
  printf 'module urutau.local/control-plane/etcd\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
    "$ETCD_VERSION" >"$dir/go.mod"
  write_tools_go "$dir" go.etcd.io/etcd/server/v3
  (cd "$dir" && go mod tidy)
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)
  rm -f "$bin/.prebuilt-etcd"
}

build_kwok() {
  local dir=$root/src/kwok
  mkdir -p "$dir"
  printf 'module urutau.local/control-plane/kwok\n\ngo 1.26.0\n\nrequire sigs.k8s.io/kwok %s\n' \
    "$KWOK_VERSION" >"$dir/go.mod"
  write_tools_go "$dir" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl
  (cd "$dir" && go mod tidy)
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$bin/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
}

# build NAMES...: each from the Go module proxy.
build() {
  local k8s=() n
  for n in "$@"; do
    case $n in
    kube-* | kubectl) k8s+=("$n") ;;
    esac
  done
  [ ${#k8s[@]} -eq 0 ] || build_kubernetes "${k8s[@]}"
  [[ " $* " != *" etcd "* ]] || build_etcd
  [[ " $* " != *" kwok "* && " $* " != *" kwokctl "* ]] || build_kwok
}

# fill NAMES...: makes each of NAMES current in $bin, prebuilt when possible, else built.
fill() {
  local want t n
  mapfile -t want < <(missing "$@")
  for n in "$@"; do
    [[ " ${want[*]} " == *" $n "* ]] || record "$n" "up to date"
  done
  [ ${#want[@]} -gt 0 ] || return 0
  if [ "$CONTROL_PLANE_PREBUILT" != false ]; then
    local envtest=() release=()
    for n in "${want[@]}"; do
      case $n in
      kube-apiserver | etcd | kubectl) envtest+=("$n") ;;
      kube-controller-manager | kube-scheduler) release+=("$n") ;;
      esac
    done
    t=$(date +%s)
    if [ ${#envtest[@]} -gt 0 ] && prebuilt_envtest "${envtest[@]}"; then
      t=$(($(date +%s) - t))
      for n in "${envtest[@]}"; do record "$n" "prebuilt, setup-envtest $SETUP_ENVTEST_VERSION, in ${t}s"; done
    fi
    t=$(date +%s)
    if [ ${#release[@]} -gt 0 ] && prebuilt_release "${release[@]}"; then
      t=$(($(date +%s) - t))
      for n in "${release[@]}"; do record "$n" "prebuilt, $K8S_RELEASE_URL, in ${t}s"; done
    fi
    mapfile -t want < <(missing "${want[@]}")
    [ ${#want[@]} -gt 0 ] || return 0
  fi
  log "building from the Go module proxy: ${want[*]} (10-30 minutes cold on 2 cores; seconds with a warm Go build cache)"
  t=$(date +%s)
  build "${want[@]}"
  t=$(($(date +%s) - t))
  for n in "${want[@]}"; do
    current "$n" || { log "$n was built but does not report the expected version"; exit 1; }
    record "$n" "built from the Go module proxy in ${t}s"
  done
}

# build-k8s SRC_DIR OUT_DIR CMD...: only those commands, wherever the caller keeps them (the kind
# node's kubelet, kubeadm and kube-proxy: hack/kind/node-image.sh).
if [ "${1:-ensure}" = build-k8s ]; then
  shift
  [ $# -ge 3 ] || { log "usage: $0 build-k8s SRC_DIR OUT_DIR CMD..."; exit 2; }
  build_k8s "$@"
  exit 0
fi

start=$(date +%s)
dir=$(assets_dir)
if [ "$dir" = "$bin" ]; then
  fill "${envtest_bins[@]}" "${fleet_bins[@]}"
elif [ "$dir" = "${KUBEBUILDER_ASSETS:-}" ]; then
  # One of this cache's directories already (`make test` passes its own down): complete as it is.
  for n in "${envtest_bins[@]}" "${fleet_bins[@]}"; do
    [ -x "$dir/$n" ] || { log "KUBEBUILDER_ASSETS=$dir has no $n: unset it, or run $0 without it"; exit 1; }
    record "$n" "from KUBEBUILDER_ASSETS=$dir"
  done
else
  # Your KUBEBUILDER_ASSETS first, then ours for what it does not have.
  given=$KUBEBUILDER_ASSETS
  for n in "${envtest_bins[@]}"; do
    [ -x "$given/$n" ] || { log "KUBEBUILDER_ASSETS=$given has no $n"; exit 1; }
  done
  rest=()
  for n in "${fleet_bins[@]}"; do
    [ -x "$given/$n" ] || rest+=("$n")
  done
  [ ${#rest[@]} -eq 0 ] || fill "${rest[@]}"
  mkdir -p "$dir"
  for n in "${envtest_bins[@]}" "${fleet_bins[@]}"; do
    if [ -x "$given/$n" ]; then
      ln -sfn "$given/$n" "$dir/$n"
      record "$n" "from KUBEBUILDER_ASSETS=$given"
    else
      ln -sfn "$bin/$n" "$dir/$n"
    fi
  done
fi
printf '%s\n' "${sources[@]}" >"$dir/SOURCES"
log "ready in $(($(date +%s) - start))s: $dir"
