# The monitoring rules' tests (test/monitoring): their own module, so Prometheus' dependencies stay
# out of go.mod. Part of `make test`; warm, about 5 s (the first run compiles Prometheus' rule
# engine, about 2 minutes on 2 cores).

##@ Monitoring

.PHONY: test-monitoring
test-monitoring: ## Run the alerting rules' unit tests and check the dashboard and kube-state-metrics config (test/monitoring).
	cd test/monitoring && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test ./... -count=1
