# The randomized history checker (test/chaos): seeded random histories of placement changes,
# deletes, renames, racing creates, terminations and faults on a local fleet, every invariant
# checked over the whole recording. `make test` runs its short fixed seeds; this runs more.
SEEDS ?= 20
CHAOS_FLAGS ?=

##@ Chaos

.PHONY: test-chaos
test-chaos: control-plane ## Run the named cases and SEEDS random histories (test/chaos); CHAOS_FLAGS adds -chaos.* flags.
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) $(GO) test ./test/chaos/ -run 'TestChaos$$' -count=1 -timeout 0 -v \
		-chaos.cases -chaos.seeds=$(SEEDS) $(CHAOS_FLAGS)
