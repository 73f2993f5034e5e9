// Package coordinator renders the coordinator workload of one CDCPipeline for one member cluster:
// ServiceAccounts, Role, RoleBinding, PodDisruptionBudget, headless Service, ConfigMap, the
// coordinator StatefulSet and, when KEDA is on, one ScaledObject per autoscaled table.
//
// What it renders is exactly what the single-cluster urutau operator renders for the same pipeline
// (so the same coordinator image runs unchanged), plus the fleet ownership labels on object
// metadata (never in selectors or pod templates) and minus the ownerReference to the CR, which
// lives on the hub. A member's override (image, logLevel, resources) is applied to the spec first
// (EffectiveSpec); the spec hash is taken over that effective PipelineSpec (SpecHash).
//
// Every name derived from a pipeline comes from names.go; the coordinator image derives the same
// names, so they must not change.
//
// It is pure: no client, no I/O, no clock. Same inputs, same bytes. Render's errors are all about
// the spec (or the missing image) and name the field; retrying cannot fix them.
package coordinator
