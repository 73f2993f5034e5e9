// Package monitoring tests config/monitoring with Prometheus' own packages: the alerting rules
// are parsed by Prometheus' rule parser and run against unit tests in promtool's format
// (config/monitoring/tests), the dashboard's queries are parsed, every metric they name is one
// docs/operations.md documents, and the kube-state-metrics configuration's paths exist in the
// CDCPipeline CRD, and the ServiceMonitor scrapes the one metrics Service of config/hub over
// HTTPS on the port where the hub serves them securely. It is its own module so that Prometheus' dependencies stay out of the main
// go.mod; `make test` runs it (hack/make/monitoring.mk).
package monitoring
