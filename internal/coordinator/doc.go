// Package coordinator renders the coordinator workload of one CDCPipeline for one member cluster:
// ServiceAccounts, Role, RoleBinding, PodDisruptionBudget, headless Service, ConfigMap, the
// coordinator StatefulSet and, when KEDA is on, one ScaledObject per autoscaled table.
//
// What it renders is exactly what the single-cluster urutau operator renders for the same pipeline
// (so the same coordinator image runs unchanged), plus the fleet ownership labels and minus the
// ownerReference to the CR, which lives on the hub.
//
// It is pure: no client, no I/O, no clock. Same inputs, same bytes.
package coordinator
