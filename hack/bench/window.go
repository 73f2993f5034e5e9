package main

import (
	"context"
	"time"

	"github.com/urutau-io/fleet/internal/testenv"
)

// window counts what happens between its start and its end: the requests the member and hub
// API servers served and the CPU time of every process.
type window struct {
	hub        *hubProcess // nil: no hub process runs
	hubCluster *testenv.Cluster
	clusters   []*testenv.Cluster
	t0         time.Time
	cpu0       cpuUse
	members0   requests
	hubReqs0   requests

	// Set by end.
	cpu              cpuUse
	members, hubReqs requests
}

// startWindow takes the counts at the start; t0 is the time it returns.
func startWindow(ctx context.Context, hub *hubProcess, hubCluster *testenv.Cluster, members []*testenv.Cluster) (*window, error) {
	w := &window{hub: hub, hubCluster: hubCluster, clusters: members}
	var err error
	if w.members0, err = requestsOfAll(ctx, members); err != nil {
		return nil, err
	}
	if w.hubReqs0, err = requestsOf(ctx, hubCluster); err != nil {
		return nil, err
	}
	if w.cpu0, err = cpuNow(hub, hubCluster, members); err != nil {
		return nil, err
	}
	w.t0 = time.Now()
	return w, nil
}

// end takes the counts at the end (CPU first: the scrapes cost the API servers CPU).
func (w *window) end(ctx context.Context) error {
	cpu1, err := cpuNow(w.hub, w.hubCluster, w.clusters)
	if err != nil {
		return err
	}
	w.cpu = cpu1.sub(w.cpu0)
	m, err := requestsOfAll(ctx, w.clusters)
	if err != nil {
		return err
	}
	h, err := requestsOf(ctx, w.hubCluster)
	if err != nil {
		return err
	}
	w.members, w.hubReqs = m.since(w.members0), h.since(w.hubReqs0)
	return nil
}
