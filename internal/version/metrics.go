package version

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfoMetric is the name of the build gauge: always 1, its labels say which build runs, so
// a dashboard can show versions across replicas and an alert can spot a mixed rollout.
const BuildInfoMetric = "urutau_fleet_build_info"

// NewBuildInfoCollector returns the urutau_fleet_build_info gauge for info.
func NewBuildInfoCollector(info Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: BuildInfoMetric,
		Help: "Build of the running urutau fleet hub: always 1, with its version, revision and Go version as labels.",
		ConstLabels: prometheus.Labels{
			"version":   info.Version,
			"revision":  info.Revision,
			"goversion": info.GoVersion,
		},
	})
	g.Set(1)
	return g
}

// RegisterBuildInfo registers the build gauge of this binary with r (the hub passes
// controller-runtime's metrics.Registry). Registering twice is not an error: tests and a
// restarted setup may call it again.
func RegisterBuildInfo(r prometheus.Registerer) error {
	err := r.Register(NewBuildInfoCollector(Get()))
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		return nil
	}
	return err
}
