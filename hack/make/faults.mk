# Fault tests of the hub (test/faults): a local fleet of real control planes where member API
# servers, hub processes and credentials fail mid-rollout. Also part of `make test` (go test ./...).

##@ Fault tests

.PHONY: test-faults
test-faults: control-plane ## Run only the fault suite (test/faults): member and hub crashes, leader failover, bad credentials.
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) $(GO) test ./test/faults/ -count=1 -timeout 30m -v
