// Package fleetview answers "which members are up, and what runs where" from what the hub
// publishes: its inventory entries (kubeconfig Secrets or ClusterProfiles), the CDCPipelines'
// status.clusters[], and the pending tombstones. kubectl urutau (cmd/kubectl-urutau) and `hub
// members` / `hub status` print what it computes.
//
// Gather is the only function that reads a cluster; everything else is pure. Pipelines are read
// as unstructured objects so that fields a newer hub writes (e.g. status.clusters[].clusterID)
// are shown when present and tolerated when absent. It never writes.
package fleetview
