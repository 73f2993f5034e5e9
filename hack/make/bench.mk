# make bench: the hub against a plain Server-Side Apply client on real API servers (hack/bench).

##@ Benchmarks

# BENCH_FLAGS are passed to hack/bench, e.g. BENCH_FLAGS=-large (adds 10x1000 and profiles it),
# BENCH_FLAGS='-members 3 -pipelines 100 -runs 5 -out ""'. docs/benchmarks.md lists the flags.
BENCH_FLAGS ?=

.PHONY: bench
bench: control-plane ## Benchmark the hub: medians of 3 interleaved floor/hub runs per size (convergence, member requests by verb, hub writes, reconciles, no-op reconcile, idle, dead and hung member, RSS, CPU); writes docs/benchmarks.md with its history.
	BENCH_COMMAND="make bench$(if $(BENCH_FLAGS), BENCH_FLAGS='$(BENCH_FLAGS)')" \
		KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) $(GO) run ./hack/bench $(BENCH_FLAGS)
