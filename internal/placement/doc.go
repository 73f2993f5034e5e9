// Package placement decides, from a CDCPipeline's spec alone and the cluster inventory, which
// member clusters it selects (SelectMembers, and UnknownClusters for the names the inventory does
// not hold) and what each member's override is (OverrideFor). It is pure: no client, no clock.
// Where the pipeline may run under its source's reader lease is decided after it, by the hub
// (internal/fleet).
package placement
