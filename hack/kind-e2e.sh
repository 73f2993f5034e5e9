#!/usr/bin/env bash
# The e2e suite of test/kind on kind clusters, real kubelets and containerd (`make test-e2e-kind`):
# the specs `make test-e2e` runs on the local fleet (kwok nodes), here with every pod a process.
#
# It needs no image registry: the node image and every image the nodes run are built here
# (hack/kind/node-image.sh: Debian packages and binaries from the Go module proxy, cached by
# version), and when no Docker engine answers it starts one of its own (hack/kind/docker.sh).
# Then it creates the kind clusters urutau-hub, urutau-member-a and urutau-member-b; builds the hub
# image and the stand-in coordinator images (test/kind/coordinator) and loads them; deploys
# config/hub/self-signed on the hub; joins each member with `kubectl urutau join`; lets the e2e
# namespace use them (a PlacementPolicy); and runs `go test ./test/kind/` with E2E_HUB_KUBECONFIG,
# E2E_MEMBER_KUBECONFIGS, E2E_RESTART_MEMBER, E2E_IGNORES_SIGTERM_IMAGE and E2E_HUB_DEPLOYMENT. At
# exit, also on Ctrl-C, it deletes the clusters and stops the engine it started, unless --keep.
#
# Usage:
#   hack/kind-e2e.sh [--keep] [-- GO_TEST_ARGS...]   create, deploy, test; delete unless --keep
#   hack/kind-e2e.sh up                              create and deploy only (keeps them)
#   hack/kind-e2e.sh down                            delete what --keep or up left, stop the engine
#   hack/kind-e2e.sh restart-member NAME PAUSE       stop NAME's API server for PAUSE (a Go duration),
#                                                    start it again and wait for it: E2E_RESTART_MEMBER
#
# Needs root, go, docker.io (dockerd and the docker CLI) and debootstrap from Debian's packages
# (`apt-get install docker.io debootstrap`). Cold, it builds kubelet, kubeadm, kube-proxy, kind and
# the node image first (docs/testing.md has the times).
#
# Environment: KIND_E2E_KEEP=1 (same as --keep), KIND_OWN_DOCKER=1 (start our engine even when one
# answers), E2E_TIMEOUT (the suite's bound on every wait, default here 4m), URUTAU_CACHE_DIR (cache
# root, as for the Makefile).
set -euo pipefail
# shellcheck source=hack/kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kind/lib.sh"
ROOT=$KIND_ROOT

# Kubeconfigs, generated manifests and the restart helper live here, outside the clone, so that a
# --keep run can be inspected (and `down` finds it) later.
WORK=$KIND_CACHE/e2e
KIND_VERSION=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kind" {print $3}' "$ROOT/hack/tools/go.mod")
KIND=${KIND:-$CACHE/tools/kind-$KIND_VERSION}

HUB_CLUSTER=urutau-hub
# Member name (as the hub and the suite know it) and its inventory labels. The kind cluster is
# urutau-<member>; its node container urutau-<member>-control-plane.
MEMBERS=(member-a member-b)
declare -A MEMBER_LABELS=([member-a]=region=eu [member-b]=region=us)

HUB_IMAGE=urutau-fleet-hub:e2e
# What the hub runs as coordinator (test/kind/coordinator): STANDIN_IMAGE drains 5s after
# SIGTERM; STUBBORN_IMAGE ignores SIGTERM, so the kubelet kills it at the end of the grace period.
STANDIN_IMAGE=urutau-coordinator-standin:e2e
STUBBORN_IMAGE=urutau-coordinator-standin:e2e-ignores-sigterm
HUB_NAMESPACE=urutau-system
E2E_NAMESPACE=e2e # test/kind's namespace, on the hub and in every member

kubeconfig_of() { printf '%s/%s.kubeconfig' "$WORK" "$1"; }
cluster_of() { printf 'urutau-%s' "$1"; }
node_of() { printf 'urutau-%s-control-plane' "$1"; }

# seconds_of turns a Go duration ("10s", "1m30s", "500ms") into seconds for sleep.
seconds_of() {
	local d=$1 total=0 n unit
	[[ $d =~ ^([0-9]+(\.[0-9]+)?(h|m|s|ms|us|µs|ns))+$ ]] || die "not a duration: $d"
	while [[ $d =~ ^([0-9]+(\.[0-9]+)?)(h|ms|m|s|us|µs|ns)(.*)$ ]]; do
		n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[3]} d=${BASH_REMATCH[4]}
		case $unit in
		h) total=$(awk -v t="$total" -v n="$n" 'BEGIN {print t + n * 3600}') ;;
		m) total=$(awk -v t="$total" -v n="$n" 'BEGIN {print t + n * 60}') ;;
		s) total=$(awk -v t="$total" -v n="$n" 'BEGIN {print t + n}') ;;
		ms) total=$(awk -v t="$total" -v n="$n" 'BEGIN {print t + n / 1000}') ;;
		*) ;; # us, ns: below sleep's resolution
		esac
	done
	printf '%s' "$total"
}

# wait_for_api waits until the cluster behind kubeconfig $1 answers /readyz (want=up) or stops
# answering (want=down), for at most $3 seconds.
wait_for_api() {
	local kc=$1 want=$2 timeout=$3 start=$SECONDS
	while :; do
		if kubectl --kubeconfig "$kc" get --raw=/readyz --request-timeout=5s >/dev/null 2>&1; then
			[[ $want == up ]] && return 0
		else
			[[ $want == down ]] && return 0
		fi
		((SECONDS - start < timeout)) || die "API server of $kc not $want after ${timeout}s"
		sleep 1
	done
}

APISERVER_MANIFEST=/etc/kubernetes/manifests/kube-apiserver.yaml
APISERVER_STOPPED=/etc/kubernetes/kube-apiserver.yaml.stopped

# restart_member stops only the member's API server (kubelet stops a static pod whose manifest
# leaves /etc/kubernetes/manifests), waits for the pause and starts it again. Restarting the node
# container instead would also restart every pod and could give the node another IP than the one
# the hub's kubeconfig names.
restart_member() {
	local name=$1 pause=$2 kc
	kc=$(kubeconfig_of "$name")
	RESTART_NODE=$(node_of "$name")
	docker exec "$RESTART_NODE" mv "$APISERVER_MANIFEST" "$APISERVER_STOPPED"
	# Put it back whatever happens: a member left without an API server fails every later spec.
	trap restore_apiserver EXIT
	wait_for_api "$kc" down 60
	sleep "$(seconds_of "$pause")"
	restore_apiserver
	trap - EXIT
	wait_for_api "$kc" up 180
}

restore_apiserver() {
	docker exec "$RESTART_NODE" sh -c "if [ -f $APISERVER_STOPPED ]; then mv $APISERVER_STOPPED $APISERVER_MANIFEST; fi"
}

# grep reads all of kind's output: with -q it could exit first and, under pipefail, kind's SIGPIPE
# would say "no such cluster" for any but the last one listed.
cluster_exists() { "$KIND" get clusters 2>/dev/null | grep -x "$1" >/dev/null; }

delete_clusters() {
	local c
	for c in "$HUB_CLUSTER" "${MEMBERS[@]/#/urutau-}"; do
		if cluster_exists "$c"; then
			"$KIND" delete cluster --name "$c" --kubeconfig "$WORK/$c.kind-kubeconfig" || true
		fi
	done
}

ensure_kind() {
	if [[ ! -x $KIND ]]; then
		[[ -n $KIND_VERSION ]] || die "no sigs.k8s.io/kind version in hack/tools/go.mod"
		log "building kind $KIND_VERSION into $KIND"
		(cd "$ROOT/hack/tools" && GOWORK=off CGO_ENABLED=0 time_step kind nice go build -o "$KIND" sigs.k8s.io/kind)
	fi
}

# STARTED_DOCKER is 1 when this run started the engine (then it stops it at exit).
STARTED_DOCKER=0

use_docker() {
	local before=0
	command -v docker >/dev/null || die "the docker CLI is not installed (apt-get install docker.io)"
	docker info >/dev/null 2>&1 && before=1
	DOCKER_HOST=$("$ROOT/hack/kind/docker.sh" start)
	export DOCKER_HOST
	if [[ $before == 0 || ${KIND_OWN_DOCKER:-} == 1 ]] && [[ $DOCKER_HOST == unix:///run/urutau-kind-docker/* ]]; then
		STARTED_DOCKER=1
	fi
}

preflight() {
	local tool
	for tool in go; do
		command -v "$tool" >/dev/null || die "$tool is not on PATH"
	done
	# kubectl of the cluster's own version (the control-plane cache), not whatever is on PATH.
	"$ROOT/hack/control-plane.sh" >&2
	PATH=$("$ROOT/hack/control-plane.sh" print-dir):$PATH
	export PATH
	use_docker
	ensure_kind
	NODE_IMAGE=$("$ROOT/hack/kind/node-image.sh")
}

# kind_config: a cgroup v1 host needs failCgroupV1: false (the kubelet refuses v1 by default);
# the CNI is the node image's bridge (no kindnetd image); CoreDNS is not built, so its addon is
# skipped (nothing here resolves cluster names: the hub reaches members by address). skipPhases
# replaces kind's own --skip-phases=preflight, so preflight is named again. kubeadm's timeouts are
# raised: on a loaded 2-core machine its first API calls took longer than the default minute.
kind_config() {
	local f=$WORK/kind-config.yaml
	cat >"$f" <<-'EOF'
		kind: Cluster
		apiVersion: kind.x-k8s.io/v1alpha4
		networking:
		  disableDefaultCNI: true
		kubeadmConfigPatches:
		  - |
		    kind: InitConfiguration
		    skipPhases:
		      - preflight
		      - addon/coredns
		    timeouts:
		      controlPlaneComponentHealthCheck: 8m
		      kubernetesAPICall: 5m
		  - |
		    kind: KubeletConfiguration
		    failCgroupV1: false
	EOF
	printf '%s' "$f"
}

create_cluster() {
	local c=$1 kc=$2 config=$3
	if cluster_exists "$c"; then
		log "reusing kind cluster $c"
	else
		log "creating kind cluster $c ($NODE_IMAGE)"
		time_step "kind-create-$c" "$KIND" create cluster --name "$c" --image "$NODE_IMAGE" --config "$config" \
			--kubeconfig "$WORK/$c.kind-kubeconfig" --wait 3m
	fi
	# The host-side kubeconfig (127.0.0.1:<port>) for this script and the suite.
	"$KIND" get kubeconfig --name "$c" >"$kc"
}

# build_images: the hub (bin/hub and the fence on scratch, as the Dockerfile's distroless image
# runs them: non-root, static) and the stand-in coordinator in its two behaviours.
build_images() {
	local dir=$WORK/images
	rm -rf "$dir"
	mkdir -p "$dir/hub" "$dir/coordinator"
	(cd "$ROOT" && CGO_ENABLED=0 nice go build -trimpath -o "$dir/hub/hub" ./cmd/hub)
	# The fence too, where the Dockerfile puts it: fenced coordinator pods copy it from this image.
	(cd "$ROOT" && CGO_ENABLED=0 nice go build -trimpath -o "$dir/hub/fence" ./cmd/fence)
	(cd "$ROOT" && CGO_ENABLED=0 nice go build -trimpath -o "$dir/coordinator/urutau-coordinator" ./test/kind/coordinator)
	printf 'FROM scratch\nCOPY hub /hub\nCOPY fence /fence\nUSER 65532:65532\nENTRYPOINT ["/hub"]\n' >"$dir/hub/Dockerfile"
	docker build -q -t "$HUB_IMAGE" "$dir/hub" >/dev/null
	local tag env
	for tag in "$STANDIN_IMAGE" "$STUBBORN_IMAGE"; do
		env="STANDIN_DRAIN=5s"
		[[ $tag == "$STUBBORN_IMAGE" ]] && env="STANDIN_IGNORE_SIGTERM=true"
		printf 'FROM scratch\nCOPY urutau-coordinator /usr/local/bin/urutau-coordinator\nENV PATH=/usr/local/bin %s\nUSER 65532:65532\n' \
			"$env" >"$dir/coordinator/Dockerfile"
		docker build -q -t "$tag" "$dir/coordinator" >/dev/null
	done
	log "built $HUB_IMAGE, $STANDIN_IMAGE, $STUBBORN_IMAGE"
}

# hub_overlay writes a kustomization over config/hub/self-signed that runs the images built here,
# into a copy of config/ so that its relative paths resolve.
hub_overlay() {
	local dir=$WORK/config/hub/e2e
	rm -rf "$WORK/config"
	cp -R "$ROOT/config" "$WORK/config"
	mkdir -p "$dir"
	cat >"$dir/kustomization.yaml" <<-EOF
		resources:
		  - ../self-signed
		images:
		  - name: ghcr.io/urutau-io/urutau-fleet-hub
		    newName: ${HUB_IMAGE%%:*}
		    newTag: ${HUB_IMAGE##*:}
		patches:
		  - target:
		      kind: Deployment
		      name: urutau-fleet-hub
		    patch: |-
		      apiVersion: apps/v1
		      kind: Deployment
		      metadata:
		        name: hub
		      spec:
		        template:
		          spec:
		            containers:
		              - name: hub
		                imagePullPolicy: IfNotPresent
		                env:
		                  - name: COORDINATOR_IMAGE
		                    value: $STANDIN_IMAGE
		                  - name: FENCE_IMAGE
		                    value: $HUB_IMAGE
	EOF
	printf '%s' "$dir"
}

deploy_hub() {
	local kc=$1 overlay existed=
	overlay=$(hub_overlay)
	log "deploying config/hub/self-signed on $HUB_CLUSTER ($HUB_IMAGE, coordinator $STANDIN_IMAGE)"
	if kubectl --kubeconfig "$kc" -n "$HUB_NAMESPACE" get deployment urutau-fleet-hub >/dev/null 2>&1; then
		existed=1
	fi
	kubectl --kubeconfig "$kc" apply --server-side --force-conflicts -k "$overlay" >/dev/null
	kubectl --kubeconfig "$kc" wait --for=condition=Established crd/cdcpipelines.urutau.io --timeout=60s
	if [[ -n $existed ]]; then
		# A reused cluster: same tag, new image; restart so the pods run the one just loaded.
		kubectl --kubeconfig "$kc" -n "$HUB_NAMESPACE" rollout restart deployment/urutau-fleet-hub
	fi
	kubectl --kubeconfig "$kc" -n "$HUB_NAMESPACE" rollout status deployment/urutau-fleet-hub --timeout=5m
	kubectl --kubeconfig "$kc" create namespace "$E2E_NAMESPACE" --dry-run=client -o yaml |
		kubectl --kubeconfig "$kc" apply -f - >/dev/null
	# The hub places nothing without a PlacementPolicy: let the e2e namespace use every member, and
	# run the stand-in that ignores SIGTERM besides the hub's coordinator image.
	kubectl --kubeconfig "$kc" apply --server-side -f - <<-EOF
		apiVersion: urutau.io/v1alpha1
		kind: PlacementPolicy
		metadata:
		  name: e2e
		spec:
		  namespaces: [$E2E_NAMESPACE]
		  clusterSelector: {}
		  images:
		    allowed: [$STUBBORN_IMAGE]
	EOF
}

# join_member joins a member as its platform team would: the e2e namespace exists there, and
# `kubectl urutau join` does the rest. --member-server is the node's address on the kind network
# (the hub's pods reach it there; the API server's certificate names it), not the host port of the
# member's kubeconfig. --force: a reused hub may still hold the entry of a member cluster this
# script deleted and created again (another identity under the same name).
join_member() {
	local name=$1 hub_kc=$2 plugin=$3 kc ip
	kc=$(kubeconfig_of "$name")
	kubectl --kubeconfig "$kc" create namespace "$E2E_NAMESPACE" --dry-run=client -o yaml |
		kubectl --kubeconfig "$kc" apply -f - >/dev/null
	ip=$(docker inspect -f '{{.NetworkSettings.Networks.kind.IPAddress}}' "$(node_of "$name")")
	[[ -n $ip ]] || die "no address of $(node_of "$name") on the kind network"
	log "joining $name (https://$ip:6443) with kubectl urutau join"
	"$plugin" join "$name" --kubeconfig "$hub_kc" --member-kubeconfig "$kc" \
		--member-server "https://$ip:6443" --labels "${MEMBER_LABELS[$name]}" --namespaces "$E2E_NAMESPACE" --force
}

write_restart_helper() {
	local helper=$WORK/restart-member
	cat >"$helper" <<-EOF
		#!/usr/bin/env bash
		# E2E_RESTART_MEMBER for test/kind: \$1 is the member, \$2 the pause (a Go duration).
		export URUTAU_CACHE_DIR=$(printf '%q' "$CACHE") DOCKER_HOST=$(printf '%q' "$DOCKER_HOST")
		export PATH=$(printf '%q' "$PATH")
		exec $(printf '%q' "$ROOT/hack/kind-e2e.sh") restart-member "\$@"
	EOF
	chmod +x "$helper"
	printf '%s' "$helper"
}

# create_clusters creates the three clusters one after the other (each logs to
# $WORK/<cluster>.create.log), then builds the images and the plugin. At once, on 2 cores shared
# with the Go builds, kubeadm's wait for its API server timed out: one at a time is the reliable way.
create_clusters() {
	local config=$1 c
	for c in "$HUB_CLUSTER" "${MEMBERS[@]/#/urutau-}"; do
		# A second try: kind deletes a cluster whose creation failed, and on a busy machine the
		# first may time out where the next does not.
		if ! create_cluster "$c" "$(kubeconfig_of "${c#urutau-}")" "$config" >"$WORK/$c.create.log" 2>&1 &&
			! { log "creating $c failed; once more (first try: $WORK/$c.create-1.log)" &&
				mv "$WORK/$c.create.log" "$WORK/$c.create-1.log" &&
				create_cluster "$c" "$(kubeconfig_of "${c#urutau-}")" "$config" >"$WORK/$c.create.log" 2>&1; }; then
			tail -n 40 "$WORK/$c.create.log" >&2
			die "creating $c failed twice: $WORK/$c.create.log"
		fi
		log "cluster $c is up"
	done
	build_images
	(cd "$ROOT" && nice go build -o "$WORK/bin/kubectl-urutau" ./cmd/kubectl-urutau)
}

# up creates the clusters and deploys the fleet; it sets HUB_KC and MEMBER_LIST.
up() {
	local config m member_kcs=()
	config=$(kind_config)
	mkdir -p "$WORK/bin"
	HUB_KC=$(kubeconfig_of hub)
	create_clusters "$config"
	for m in "${MEMBERS[@]}"; do
		member_kcs+=("$m=$(kubeconfig_of "$m")")
	done
	MEMBER_LIST=$(
		IFS=,
		printf '%s' "${member_kcs[*]}"
	)
	"$KIND" load docker-image "$HUB_IMAGE" --name "$HUB_CLUSTER"
	for m in "${MEMBERS[@]}"; do
		# The hub's image too: fenced coordinator pods copy the fence from it.
		"$KIND" load docker-image "$STANDIN_IMAGE" "$STUBBORN_IMAGE" "$HUB_IMAGE" --name "$(cluster_of "$m")"
	done
	deploy_hub "$HUB_KC"
	for m in "${MEMBERS[@]}"; do
		join_member "$m" "$HUB_KC" "$WORK/bin/kubectl-urutau"
	done
}

# cleanup runs at exit, Ctrl-C included: what --keep does not keep goes.
cleanup() {
	local rc=$? j
	trap - EXIT INT TERM
	# Cluster creations still running (interrupted during create_clusters): ours, by id.
	for j in $(jobs -p); do
		kill "$j" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [[ $KEEP != 1 ]]; then
		log "deleting the kind clusters (--keep leaves them)"
		delete_clusters
		if [[ $STARTED_DOCKER == 1 ]]; then
			"$ROOT/hack/kind/docker.sh" stop
		fi
	else
		log "kept: kubeconfigs in $WORK/*.kubeconfig, DOCKER_HOST=$DOCKER_HOST; 'hack/kind-e2e.sh down' deletes them"
	fi
	exit "$rc"
}

KEEP=${KIND_E2E_KEEP:-0}

main() {
	local arg go_args=()
	while (($#)); do
		arg=$1
		shift
		case $arg in
		--keep) KEEP=1 ;;
		--) go_args=("$@"); break ;;
		-h | --help)
			sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
			return 0
			;;
		*) die "unknown argument $arg (see --help)" ;;
		esac
	done
	mkdir -p "$WORK"
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	local start=$SECONDS
	preflight
	up
	local helper
	helper=$(write_restart_helper)
	log "running test/kind against the kind clusters"
	local rc=0
	(
		cd "$ROOT"
		E2E_HUB_KUBECONFIG=$HUB_KC E2E_MEMBER_KUBECONFIGS=$MEMBER_LIST E2E_RESTART_MEMBER=$helper \
			E2E_IGNORES_SIGTERM_IMAGE=$STUBBORN_IMAGE E2E_HUB_DEPLOYMENT=$HUB_NAMESPACE/urutau-fleet-hub \
			E2E_TIMEOUT=${E2E_TIMEOUT:-4m} go test ./test/kind/ -count=1 -timeout 60m -v -ginkgo.v "${go_args[@]}"
	) || rc=$?
	log "test/kind on kind: exit $rc, $((SECONDS - start))s in all"
	printf '%(%Y-%m-%dT%H:%M:%S)T e2e-kind-total %ss rc=%s\n' -1 $((SECONDS - start)) "$rc" >>"$KIND_CACHE/timings.log"
	return "$rc"
}

case ${1:-} in
up)
	KEEP=1
	mkdir -p "$WORK"
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	preflight
	up
	log "run the suite: E2E_HUB_KUBECONFIG=$HUB_KC E2E_MEMBER_KUBECONFIGS=$MEMBER_LIST E2E_RESTART_MEMBER=$(write_restart_helper) E2E_IGNORES_SIGTERM_IMAGE=$STUBBORN_IMAGE E2E_HUB_DEPLOYMENT=$HUB_NAMESPACE/urutau-fleet-hub go test ./test/kind/ -count=1 -v"
	;;
down)
	use_docker
	ensure_kind
	mkdir -p "$WORK"
	delete_clusters
	"$ROOT/hack/kind/docker.sh" stop
	;;
restart-member)
	[[ $# == 3 ]] || die "usage: $0 restart-member NAME PAUSE"
	restart_member "$2" "$3"
	;;
*) main "$@" ;;
esac
