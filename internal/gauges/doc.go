// Package gauges keeps the metrics that summarise the hub's objects: pipelines by Ready status
// (urutau_fleet_pipelines), placements per member by phase (urutau_fleet_member_pipelines),
// pipelines waiting for a reader lease, and tombstones pending. Gauges recomputes them every few
// seconds from the hub's cache, on every replica, so they never drift from what the status says
// and nothing has to remember to update them.
package gauges
