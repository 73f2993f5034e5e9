#!/usr/bin/env bash
# Builds the kind node image from Debian's packages and the Go module proxy (no image registry):
#
#   hack/kind/node-image.sh              builds what is missing, prints the image name
#   hack/kind/node-image.sh print-name   only prints the name (urutau-kind-node:<k8s>-<key>)
#
# Pieces, each cached and rebuilt only when what it is made of changes:
#   - kubelet, kubeadm, kube-proxy ($K8S_VERSION, hack/control-plane.sh build-k8s) in
#     $KIND_CACHE/k8s-<version>/bin; kube-apiserver, controller-manager, scheduler, kubectl, etcd
#     from the control-plane cache (hack/control-plane.sh);
#   - a Debian root filesystem (debootstrap, hack/kind/node/packages, the machine's apt mirror and
#     release) as $KIND_CACHE/rootfs-<release>-<hash>.tar and the image urutau-kind-base:<...>;
#   - runc-bounded and pause (hack/kind/), static Go binaries;
#   - the images kubeadm's static pods and kube-proxy name (`kubeadm config images list`), each
#     one binary on scratch, loaded into the node's containerd at build time; CoreDNS is not built
#     (the clusters skip kubeadm's coredns addon);
#   - the node image: kind's base image files (from the sigs.k8s.io/kind module) on that Debian.
# Needs DOCKER_HOST to reach an engine that runs --privileged (hack/kind/docker.sh start),
# debootstrap (apt-get install debootstrap), go, and root.
set -euo pipefail
# shellcheck source=hack/kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODE_DIR=$KIND_ROOT/hack/kind/node
K8S_BIN=$KIND_CACHE/k8s-$K8S_VERSION/bin
KIND_VERSION=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kind" {print $3}' "$KIND_ROOT/hack/tools/go.mod")
RELEASE=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-bookworm}")

# The key of the node image: everything it is built from.
node_key() {
	{
		printf '%s %s %s\n' "$K8S_VERSION" "$KIND_VERSION" "$RELEASE"
		basename "$(dirname "$("$KIND_ROOT/hack/control-plane.sh" print-dir)")"
		sources_hash hack/kind hack/control-plane.sh
	} | sha256sum | cut -c1-12
}

node_image() { printf 'urutau-kind-node:%s-%s' "$K8S_VERSION" "$(node_key)"; }

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# apt_mirror prints the Debian mirror this machine's apt uses for $RELEASE (deb822 or one-line).
apt_mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		awk -v rel="$RELEASE" '
			/^URIs:/ {uri=$2} /^Suites:/ {for (i = 2; i <= NF; i++) if ($i == rel) ok=1}
			/^$/ {if (ok && uri != "") {print uri; exit} uri=""; ok=0}
			END {if (ok && uri != "") print uri}' "$f" | head -n1
	done
	awk -v rel="$RELEASE" '$1 == "deb" && $3 == rel {print $2}' /etc/apt/sources.list 2>/dev/null
}

base_image() {
	local packages hash tar image mirror dir
	packages=$(grep -v '^#' "$NODE_DIR/packages" | grep -v '^$' | sort | paste -sd, -)
	hash=$(printf '%s %s' "$RELEASE" "$packages" | sha256sum | cut -c1-12)
	tar=$KIND_CACHE/rootfs-$RELEASE-$hash.tar
	image=urutau-kind-base:$RELEASE-$hash
	if image_exists "$image"; then
		printf '%s' "$image"
		return
	fi
	if [[ ! -f $tar ]]; then
		command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
		mirror=$(apt_mirror | head -n1)
		[[ -n $mirror ]] || die "no apt source for $RELEASE in /etc/apt: debootstrap needs a Debian mirror"
		dir=$KIND_CACHE/rootfs-$RELEASE-$hash.d
		rm -rf "$dir"
		log "debootstrap $RELEASE into $dir ($mirror; packages: $packages)"
		time_step "debootstrap" nice debootstrap --variant=minbase --include="$packages" "$RELEASE" "$dir" "$mirror" >&2
		# Nothing of the build machine's apt state belongs in the node.
		rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
		tar -C "$dir" --numeric-owner -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
		rm -rf "$dir"
	fi
	log "importing $tar as $image"
	docker import "$tar" "$image" >/dev/null
	printf '%s' "$image"
}

# build_images writes to $1 (a tar) every image the node preloads, built from binaries here.
build_images() {
	local out=$1 base=$2 ctx=$3 cp_bin pause ref name dir tags=()
	cp_bin=$("$KIND_ROOT/hack/control-plane.sh" print-dir)
	pause=$(go_build_cached pause hack/kind/pause)
	while read -r ref; do
		name=${ref##*/}
		name=${name%%:*}
		# A context of its own per image: each build sends only its binary.
		dir=$ctx/$name
		mkdir -p "$dir"
		case $name in
		kube-apiserver | kube-controller-manager | kube-scheduler | etcd)
			cp "$cp_bin/$name" "$dir/$name"
			docker build -q -t "$ref" --build-arg BIN="$name" -f "$NODE_DIR/Dockerfile.binary" "$dir" >/dev/null
			;;
		kube-proxy)
			cp "$K8S_BIN/kube-proxy" "$dir/kube-proxy"
			docker build -q -t "$ref" --build-arg BASE="$base" -f "$NODE_DIR/Dockerfile.kube-proxy" "$dir" >/dev/null
			;;
		pause)
			cp "$pause" "$dir/pause"
			docker build -q -t "$ref" -f "$NODE_DIR/Dockerfile.pause" "$dir" >/dev/null
			printf '%s' "$ref" >"$ctx/pause-image"
			;;
		coredns) continue ;; # not built: the clusters skip the coredns addon
		*) die "kubeadm lists an image this script does not build: $ref" ;;
		esac
		log "built $ref"
		tags+=("$ref")
	done < <("$K8S_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION")
	docker save -o "$out" "${tags[@]}"
}

build() {
	local image base ctx cp_bin kind_files
	image=$(node_image)
	if image_exists "$image"; then
		printf '%s' "$image"
		return
	fi
	log "building the kind node image $image"
	"$KIND_ROOT/hack/control-plane.sh" >&2
	if [[ ! -x $K8S_BIN/kubelet || ! -x $K8S_BIN/kubeadm || ! -x $K8S_BIN/kube-proxy ]] ||
		! "$K8S_BIN/kubelet" --version | grep -qx "Kubernetes $K8S_VERSION"; then
		log "building kubelet, kubeadm, kube-proxy $K8S_VERSION into $K8S_BIN"
		time_step "k8s-node-binaries" env GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
			"$KIND_ROOT/hack/control-plane.sh" build-k8s "$KIND_CACHE/k8s-$K8S_VERSION/src" "$K8S_BIN" kubelet kubeadm kube-proxy >&2
	fi
	base=$(time_step "base-image" base_image)
	cp_bin=$("$KIND_ROOT/hack/control-plane.sh" print-dir)
	kind_files=$(cd "$KIND_ROOT/hack/tools" && GOWORK=off go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')/images/base/files
	[[ -d $kind_files ]] || die "no images/base/files in the sigs.k8s.io/kind $KIND_VERSION module"

	ctx=$(mktemp -d "$KIND_CACHE/node-build.XXXXXX")
	NODE_BUILD_DIR=$ctx
	trap 'rm -rf "${NODE_BUILD_DIR:-}"' EXIT # also when a build step fails
	mkdir -p "$ctx/bin" "$ctx/images"
	cp -R "$kind_files" "$ctx/kind-files"
	chmod -R u+w "$ctx/kind-files"
	cp "$K8S_BIN/kubelet" "$K8S_BIN/kubeadm" "$cp_bin/kubectl" "$ctx/bin/"
	cp "$(go_build_cached runc-bounded hack/kind/runc-bounded)" "$ctx/bin/runc-bounded"
	time_step "node-images" build_images "$ctx/images.tar" "$base" "$ctx/images"
	sed "s|@PAUSE_IMAGE@|$(cat "$ctx/images/pause-image")|" "$NODE_DIR/containerd.toml" >"$ctx/containerd.toml"
	cp "$NODE_DIR/10-bridge.conflist" "$ctx/"
	time_step "node-image" docker build -t "$image" --build-arg BASE="$base" --build-arg K8S_VERSION="$K8S_VERSION" \
		-f "$NODE_DIR/Dockerfile" "$ctx" >&2
	# Node images of older keys only take space (about 1 GB each).
	local old
	for old in $(docker images urutau-kind-node --format '{{.Repository}}:{{.Tag}}'); do
		[[ $old == "$image" ]] || docker rmi "$old" >/dev/null 2>&1 || true
	done
	printf '%s' "$image"
}

case ${1:-} in
print-name) node_image ;;
"") build ;;
*) die "usage: $0 [print-name]" ;;
esac
