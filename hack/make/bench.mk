# make bench: the hub against a plain Server-Side Apply client on real API servers (hack/bench).

##@ Benchmarks

# BENCH_FLAGS are passed to hack/bench, e.g. BENCH_FLAGS=-large (adds 10x1000) or
# BENCH_FLAGS='-members 3 -pipelines 100 -out ""'.
BENCH_FLAGS ?=

.PHONY: bench
bench: control-plane ## Benchmark the hub (convergence vs a plain SSA client, writes, reconciles, idle, dead member, RSS, CPU); writes docs/benchmarks.md.
	BENCH_COMMAND="make bench$(if $(BENCH_FLAGS), BENCH_FLAGS='$(BENCH_FLAGS)')" \
		KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) $(GO) run ./hack/bench $(BENCH_FLAGS)
