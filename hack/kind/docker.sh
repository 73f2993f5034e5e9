#!/usr/bin/env bash
# The Docker engine the kind flow uses (`make test-e2e-kind` calls it; it runs alone too).
#
#   hack/kind/docker.sh start   prints a DOCKER_HOST to use: the engine that answers, or one it starts
#   hack/kind/docker.sh stop    stops the engine `start` started (its images stay, for the next run)
#
# When no engine answers (`docker info` fails), start runs dockerd (Debian's docker.io) with its
# own socket, state and data root under the cache, and with runc-bounded (hack/kind/runc-bounded)
# as its default runtime: where this machine's capability bounding set lacks a capability (here
# CAP_SYS_RESOURCE), `docker run --privileged`, which kind uses for every node, fails with "unable
# to apply caps: operation not permitted"; runc-bounded drops from the OCI spec what the bounding
# set lacks, so it starts. An engine that already answers is used as it is: it must run kind
# (--privileged) on its own. KIND_OWN_DOCKER=1 starts our own even then.
#
# Needs root, dockerd and the docker CLI (apt-get install docker.io) and go.
set -euo pipefail
# shellcheck source=hack/kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DOCKER_DIR=$KIND_CACHE/docker
RUN_DIR=/run/urutau-kind-docker
OWN_HOST=unix://$RUN_DIR/docker.sock

start() {
	if [[ ${KIND_OWN_DOCKER:-} != 1 ]] && docker info >/dev/null 2>&1; then
		printf '%s' "${DOCKER_HOST:-unix:///var/run/docker.sock}"
		return
	fi
	if DOCKER_HOST=$OWN_HOST docker info >/dev/null 2>&1; then
		printf '%s' "$OWN_HOST"
		return
	fi
	command -v dockerd >/dev/null || die "no Docker engine answers and dockerd is not installed (apt-get install docker.io)"
	[[ $(id -u) == 0 ]] || die "no Docker engine answers, and starting one needs root"
	local runtime
	runtime=$(go_build_cached runc-bounded hack/kind/runc-bounded)
	mkdir -p "$DOCKER_DIR/data" "$RUN_DIR"
	cat >"$DOCKER_DIR/daemon.json" <<-JSON
		{
		  "runtimes": {"runc-bounded": {"path": "$runtime"}},
		  "default-runtime": "runc-bounded",
		  "storage-driver": "overlay2",
		  "log-driver": "json-file",
		  "log-opts": {"max-size": "10m"}
		}
	JSON
	log "starting dockerd ($OWN_HOST, data in $DOCKER_DIR/data, log $DOCKER_DIR/dockerd.log)"
	# setsid: the engine outlives this script; `stop` ends it.
	setsid dockerd --config-file "$DOCKER_DIR/daemon.json" --data-root "$DOCKER_DIR/data" \
		--exec-root "$RUN_DIR/exec" --pidfile "$RUN_DIR/dockerd.pid" --host "$OWN_HOST" \
		>>"$DOCKER_DIR/dockerd.log" 2>&1 </dev/null &
	local i
	for i in $(seq 1 60); do
		if DOCKER_HOST=$OWN_HOST docker info >/dev/null 2>&1; then
			printf '%s' "$OWN_HOST"
			return
		fi
		kill -0 $! 2>/dev/null || die "dockerd exited: see the end of $DOCKER_DIR/dockerd.log"
		sleep 1
	done
	die "dockerd does not answer after 60s: see $DOCKER_DIR/dockerd.log"
}

stop() {
	local pid
	[[ -f $RUN_DIR/dockerd.pid ]] || return 0
	pid=$(cat "$RUN_DIR/dockerd.pid")
	kill -0 "$pid" 2>/dev/null || return 0
	log "stopping dockerd ($pid)"
	kill "$pid"
	for _ in $(seq 1 30); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 1
	done
	die "dockerd $pid still runs 30s after SIGTERM"
}

case ${1:-} in
start) start ;;
stop) stop ;;
*) die "usage: $0 start|stop" ;;
esac
