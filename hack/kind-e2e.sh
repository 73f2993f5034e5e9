#!/usr/bin/env bash
# The e2e suite of test/kind on kind clusters (`make test-e2e-kind`): the same specs `make test-e2e`
# runs on the local fleet, here against a hub deployed from config/hub as a container and two
# member clusters that reach it only through config/spoke's identity.
#
# It creates the kind clusters urutau-hub, urutau-member-a and urutau-member-b; builds the hub image
# from the Dockerfile and a stub coordinator image (below) and loads them; deploys
# config/hub/self-signed (or, with --cert-manager, config/hub/default with cert-manager) on the hub
# and config/spoke in each member; registers each member on the hub with `hub member-secret`; and
# runs `go test ./test/kind/` with E2E_HUB_KUBECONFIG, E2E_MEMBER_KUBECONFIGS and
# E2E_RESTART_MEMBER. The clusters are deleted at exit unless --keep is given.
#
# Usage:
#   hack/kind-e2e.sh [--keep] [--cert-manager]   create, deploy, test (and delete unless --keep)
#   hack/kind-e2e.sh down                        delete the clusters a --keep run left
#   hack/kind-e2e.sh restart-member NAME PAUSE   stop NAME's API server for PAUSE (a Go duration),
#                                                start it again and wait for it: E2E_RESTART_MEMBER
#
# Needs Docker (a running daemon that has or can pull kindest/node, golang:1.26 and
# gcr.io/distroless/static:nonroot; with --cert-manager also cert-manager's images), go and kubectl.
# kind is built from hack/tools (pinned) into the per-user cache unless KIND names a binary.
#
# Environment: KIND (a kind binary), KIND_NODE_IMAGE (node image; default: kind's),
# CERT_MANAGER_VERSION (default v1.20.2), KIND_E2E_KEEP=1 (same as --keep),
# URUTAU_CACHE_DIR (cache root, as for the Makefile).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${URUTAU_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/urutau-fleet}
# Kubeconfigs, generated manifests and the helper live here, outside the clone, so that a --keep
# run can be inspected (and `down` finds it) later.
WORK=$CACHE/kind-e2e
KIND_VERSION=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kind" {print $3}' "$ROOT/hack/tools/go.mod")
KIND=${KIND:-$CACHE/tools/kind-$KIND_VERSION}
CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-v1.20.2}

HUB_CLUSTER=urutau-hub
# Member name (as the hub and the suite know it) and its inventory labels. The kind cluster is
# urutau-<member>; its node container urutau-<member>-control-plane.
MEMBERS=(member-a member-b)
declare -A MEMBER_LABELS=([member-a]=region=eu [member-b]=region=us)

HUB_IMAGE=urutau-fleet-hub:e2e
# What the hub runs as coordinator. The suite waits for a Ready coordinator pod, and the real
# coordinator needs a real source database; the stub answers the pod's probes and nothing else.
COORDINATOR_IMAGE=urutau-coordinator-stub:e2e
HUB_NAMESPACE=urutau-system
E2E_NAMESPACE=e2e # test/kind's namespace; the suite creates it in members, not on the hub

log() { printf '\n==> [%(%H:%M:%S)T] %s\n' -1 "$*"; }
die() { printf 'kind-e2e: %s\n' "$*" >&2; exit 1; }

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

# restart_member stops only the member's API server (kubelet stops a static pod whose manifest
# leaves /etc/kubernetes/manifests), waits for the pause and starts it again, as the local fleet's
# helper does. Restarting the node container instead would also restart every pod and could give
# the node another IP than the one its kubeconfig Secret on the hub names.
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

APISERVER_MANIFEST=/etc/kubernetes/manifests/kube-apiserver.yaml
APISERVER_STOPPED=/etc/kubernetes/kube-apiserver.yaml.stopped

restore_apiserver() {
	docker exec "$RESTART_NODE" sh -c "if [ -f $APISERVER_STOPPED ]; then mv $APISERVER_STOPPED $APISERVER_MANIFEST; fi"
}

cluster_exists() { "$KIND" get clusters 2>/dev/null | grep -qx "$1"; }

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
		(cd "$ROOT/hack/tools" && GOWORK=off go build -o "$KIND" sigs.k8s.io/kind)
	fi
}

preflight() {
	local tool
	for tool in docker go kubectl; do
		command -v "$tool" >/dev/null || die "$tool is not on PATH"
	done
	docker info >/dev/null 2>&1 || die "the Docker daemon does not answer ('docker info' fails): kind needs it"
	ensure_kind
}

create_cluster() {
	local c=$1 kc=$2
	local args=(create cluster --name "$c" --kubeconfig "$WORK/$c.kind-kubeconfig" --wait 3m)
	if [[ -n ${KIND_NODE_IMAGE:-} ]]; then
		args+=(--image "$KIND_NODE_IMAGE")
	fi
	if cluster_exists "$c"; then
		log "reusing kind cluster $c"
	else
		log "creating kind cluster $c"
		"$KIND" "${args[@]}"
	fi
	# The host-side kubeconfig (127.0.0.1:<port>) for this script and the suite.
	"$KIND" get kubeconfig --name "$c" >"$kc"
}

# build_stub_image builds the stub coordinator: `urutau-coordinator run ... --metrics-addr ADDR`
# serves 200 on every path of ADDR (so /readyz and /healthz), on distroless as the hub runs.
build_stub_image() {
	local dir=$WORK/stub
	mkdir -p "$dir"
	cat >"$dir/go.mod" <<-'EOF'
		module stub

		go 1.26
	EOF
	cat >"$dir/main.go" <<-'EOF'
		// Command urutau-coordinator is a stand-in for the e2e suite: it answers the probes of the
		// coordinator pod the hub renders, and does nothing else.
		package main

		import (
			"context"
			"net/http"
			"os"
			"os/signal"
			"syscall"
		)

		func main() {
			addr := ":9090"
			for i, a := range os.Args {
				if a == "--metrics-addr" && i+1 < len(os.Args) {
					addr = os.Args[i+1]
				}
			}
			srv := &http.Server{Addr: addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte("ok\n"))
			})}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			go func() {
				<-ctx.Done()
				_ = srv.Shutdown(context.Background())
			}()
			if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				panic(err)
			}
		}
	EOF
	cat >"$dir/Dockerfile" <<-'EOF'
		FROM golang:1.26 AS build
		WORKDIR /src
		COPY go.mod main.go ./
		RUN CGO_ENABLED=0 go build -trimpath -o /urutau-coordinator .
		FROM gcr.io/distroless/static:nonroot
		COPY --from=build /urutau-coordinator /usr/local/bin/urutau-coordinator
		ENV PATH=/usr/local/bin:/usr/bin:/bin
		USER 65532:65532
	EOF
	docker build -t "$COORDINATOR_IMAGE" "$dir"
}

install_cert_manager() {
	local kc=$1 d
	if kubectl --kubeconfig "$kc" get crd certificates.cert-manager.io >/dev/null 2>&1; then
		log "cert-manager is already installed on the hub"
		return
	fi
	log "installing cert-manager $CERT_MANAGER_VERSION on the hub"
	kubectl --kubeconfig "$kc" apply --server-side \
		-f "https://github.com/cert-manager/cert-manager/releases/download/$CERT_MANAGER_VERSION/cert-manager.yaml"
	for d in cert-manager cert-manager-cainjector cert-manager-webhook; do
		kubectl --kubeconfig "$kc" -n cert-manager rollout status "deployment/$d" --timeout=5m
	done
}

# hub_overlay writes a kustomization over config/hub/self-signed (or default) that runs the images
# built here, into a copy of config/ so that its relative paths resolve.
hub_overlay() {
	local base=$1 dir=$WORK/config/hub/e2e
	rm -rf "$WORK/config"
	cp -R "$ROOT/config" "$WORK/config"
	mkdir -p "$dir"
	cat >"$dir/kustomization.yaml" <<-EOF
		resources:
		  - ../$base
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
		                    value: $COORDINATOR_IMAGE
	EOF
	if [[ $base == default ]]; then
		# config/hub/certmanager's Certificate names its Issuer without the kustomize namePrefix
		# the Issuer gets; point it at the prefixed name.
		cat >>"$dir/kustomization.yaml" <<-'EOF'
			  - target:
			      group: cert-manager.io
			      kind: Certificate
			    patch: |-
			      - op: replace
			        path: /spec/issuerRef/name
			        value: urutau-fleet-selfsigned-issuer
		EOF
	fi
	printf '%s' "$dir"
}

deploy_hub() {
	local kc=$1 base=$2 overlay i existed=
	overlay=$(hub_overlay "$base")
	log "deploying config/hub/$base on $HUB_CLUSTER (images $HUB_IMAGE, $COORDINATOR_IMAGE)"
	if kubectl --kubeconfig "$kc" -n "$HUB_NAMESPACE" get deployment urutau-fleet-hub >/dev/null 2>&1; then
		existed=1
	fi
	# cert-manager's own webhook may need a moment after its rollout: retry the apply.
	for i in 1 2 3 4 5 6; do
		kubectl --kubeconfig "$kc" apply --server-side --force-conflicts -k "$overlay" && break
		((i < 6)) || die "applying config/hub/$base failed"
		sleep 10
	done
	kubectl --kubeconfig "$kc" wait --for=condition=Established crd/cdcpipelines.urutau.io --timeout=60s
	if [[ -n $existed ]]; then
		# A reused cluster: same tag, new image; restart so the pods run the one just loaded.
		kubectl --kubeconfig "$kc" -n "$HUB_NAMESPACE" rollout restart deployment/urutau-fleet-hub
	fi
	kubectl --kubeconfig "$kc" -n "$HUB_NAMESPACE" rollout status deployment/urutau-fleet-hub --timeout=5m
	kubectl --kubeconfig "$kc" create namespace "$E2E_NAMESPACE" --dry-run=client -o yaml |
		kubectl --kubeconfig "$kc" apply -f -
	# The hub places nothing without a PlacementPolicy: let the e2e namespace use every member.
	kubectl --kubeconfig "$kc" apply --server-side -f - <<-EOF
		apiVersion: urutau.io/v1alpha1
		kind: PlacementPolicy
		metadata:
		  name: e2e
		spec:
		  namespaces: [$E2E_NAMESPACE]
		  clusterSelector: {}
	EOF
}

# register_member gives the hub member's config/spoke identity: a kubeconfig with a token of the
# ServiceAccount urutau-fleet-hub and the member's API server as the hub's pods reach it (the node
# container's address on the kind network, which the API server's certificate names), turned into
# a kubeconfig Secret on the hub by `hub member-secret`.
register_member() {
	local name=$1 hub_kc=$2 hub_bin=$3 kc ip token ca hub_view
	kc=$(kubeconfig_of "$name")
	log "member $name: config/spoke, and its kubeconfig Secret on the hub"
	kubectl --kubeconfig "$kc" apply --server-side -k "$ROOT/config/spoke"
	# Open the e2e namespace to the fleet, as the member's platform team would (config/spoke/README.md).
	kubectl --kubeconfig "$kc" create namespace "$E2E_NAMESPACE" --dry-run=client -o yaml |
		kubectl --kubeconfig "$kc" apply -f -
	kubectl --kubeconfig "$kc" label namespace "$E2E_NAMESPACE" urutau.io/fleet-managed=true --overwrite
	mkdir -p "$WORK/$name-open"
	printf 'namespace: %s\nresources:\n  - %s\n' "$E2E_NAMESPACE" \
		"$(realpath --relative-to="$WORK/$name-open" "$ROOT/config/spoke/pipeline-namespace")" >"$WORK/$name-open/kustomization.yaml"
	kubectl --kubeconfig "$kc" apply --server-side -k "$WORK/$name-open"
	token=$(kubectl --kubeconfig "$kc" create token urutau-fleet-hub -n urutau-fleet-system --duration=24h)
	ip=$(docker inspect -f '{{.NetworkSettings.Networks.kind.IPAddress}}' "$(node_of "$name")")
	[[ -n $ip ]] || die "no address of $(node_of "$name") on the kind network"
	ca=$WORK/$name.ca.crt
	kubectl --kubeconfig "$kc" config view --raw --minify --flatten \
		-o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$ca"
	hub_view=$WORK/$name.hub-view.kubeconfig
	rm -f "$hub_view"
	kubectl config --kubeconfig "$hub_view" set-cluster "$name" --server "https://$ip:6443" \
		--certificate-authority "$ca" --embed-certs >/dev/null
	kubectl config --kubeconfig "$hub_view" set-credentials urutau-fleet-hub --token "$token" >/dev/null
	kubectl config --kubeconfig "$hub_view" set-context "$name" --cluster "$name" --user urutau-fleet-hub >/dev/null
	kubectl config --kubeconfig "$hub_view" use-context "$name" >/dev/null
	"$hub_bin" member-secret --name "$name" --kubeconfig "$hub_view" --labels "${MEMBER_LABELS[$name]}" |
		kubectl --kubeconfig "$hub_kc" apply -f -
}

write_restart_helper() {
	local helper=$WORK/restart-member
	cat >"$helper" <<-EOF
		#!/usr/bin/env bash
		# E2E_RESTART_MEMBER for test/kind: \$1 is the member, \$2 the pause (a Go duration).
		export URUTAU_CACHE_DIR=$(printf '%q' "$CACHE")
		exec $(printf '%q' "$ROOT/hack/kind-e2e.sh") restart-member "\$@"
	EOF
	chmod +x "$helper"
	printf '%s' "$helper"
}

main() {
	local keep=${KIND_E2E_KEEP:-} base=self-signed arg m
	for arg in "$@"; do
		case $arg in
		--keep) keep=1 ;;
		--cert-manager) base=default ;;
		-h | --help)
			sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
			return 0
			;;
		*) die "unknown argument $arg (see --help)" ;;
		esac
	done
	preflight
	mkdir -p "$WORK"
	if [[ $keep != 1 ]]; then
		trap 'log "deleting the kind clusters (--keep leaves them)"; delete_clusters' EXIT
	fi

	local hub_kc member_kcs=() hub_bin=$WORK/bin/hub
	hub_kc=$(kubeconfig_of hub)
	create_cluster "$HUB_CLUSTER" "$hub_kc"
	for m in "${MEMBERS[@]}"; do
		create_cluster "$(cluster_of "$m")" "$(kubeconfig_of "$m")"
		member_kcs+=("$m=$(kubeconfig_of "$m")")
	done

	log "building $HUB_IMAGE and $COORDINATOR_IMAGE"
	docker build -t "$HUB_IMAGE" --build-arg GOPROXY="$(go env GOPROXY)" "$ROOT"
	build_stub_image
	"$KIND" load docker-image "$HUB_IMAGE" --name "$HUB_CLUSTER"
	for m in "${MEMBERS[@]}"; do
		"$KIND" load docker-image "$COORDINATOR_IMAGE" --name "$(cluster_of "$m")"
	done

	if [[ $base == default ]]; then
		install_cert_manager "$hub_kc"
	fi
	deploy_hub "$hub_kc" "$base"

	log "building the hub binary for 'hub member-secret'"
	(cd "$ROOT" && go build -o "$hub_bin" ./cmd/hub)
	for m in "${MEMBERS[@]}"; do
		register_member "$m" "$hub_kc" "$hub_bin"
	done

	local helper member_list
	helper=$(write_restart_helper)
	member_list=$(
		IFS=,
		printf '%s' "${member_kcs[*]}"
	)
	log "running test/kind against the kind clusters"
	(
		cd "$ROOT"
		E2E_HUB_KUBECONFIG=$hub_kc E2E_MEMBER_KUBECONFIGS=$member_list E2E_RESTART_MEMBER=$helper \
			go test ./test/kind/ -count=1 -timeout 30m -v -ginkgo.v
	)
	if [[ $keep == 1 ]]; then
		log "clusters kept: kubeconfigs in $WORK/*.kubeconfig; 'hack/kind-e2e.sh down' deletes them"
	fi
}

case ${1:-} in
down)
	ensure_kind
	mkdir -p "$WORK"
	delete_clusters
	;;
restart-member)
	[[ $# == 3 ]] || die "usage: $0 restart-member NAME PAUSE"
	restart_member "$2" "$3"
	;;
*) main "$@" ;;
esac
