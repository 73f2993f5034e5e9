# Shared by hack/kind/*.sh and hack/kind-e2e.sh (sourced, not run).
# shellcheck shell=bash

KIND_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${URUTAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/urutau-fleet}
# Everything the kind flow builds, keyed by version or by the hash of its sources.
KIND_CACHE=$CACHE/kind
K8S_VERSION=${K8S_VERSION:-v1.37.2}

log() { printf '\n==> [%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

# sources_hash PATH...: 12 hex digits over the contents of the files under PATH (sorted by name),
# so a cached piece is rebuilt when what it is built from changes.
sources_hash() {
	(cd "$KIND_ROOT" && find "$@" -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-12
}

# go_build_cached NAME PACKAGE_DIR: a static binary of the main package at PACKAGE_DIR (relative to
# the repository), built once per source hash into $KIND_CACHE/bin; prints its path.
go_build_cached() {
	local name=$1 pkg=$2 out
	out=$KIND_CACHE/bin/$name-$(sources_hash "$pkg" go.mod go.sum)
	if [[ ! -x $out ]]; then
		log "building $name from $pkg"
		mkdir -p "$KIND_CACHE/bin"
		(cd "$KIND_ROOT" && CGO_ENABLED=0 nice go build -trimpath -ldflags "-s -w" -o "$out.tmp" "./$pkg") && mv "$out.tmp" "$out"
	fi
	printf '%s' "$out"
}

# time_step NAME COMMAND...: runs COMMAND and appends its wall time to $KIND_CACHE/timings.log,
# the figures docs/testing.md reports.
time_step() {
	local name=$1 start=$SECONDS rc=0
	shift
	"$@" || rc=$?
	mkdir -p "$KIND_CACHE"
	printf '%(%Y-%m-%dT%H:%M:%S)T %s %ss rc=%s\n' -1 "$name" $((SECONDS - start)) "$rc" >>"$KIND_CACHE/timings.log"
	return "$rc"
}
