// Package status computes a CDCPipeline's status on the hub from what one reconcile observed
// (Observation): its conditions (Ready, Reconciling, Stalled, Placed, ReaderLease and the domain
// conditions of this package), status.clusters and the summary fields. Compute is pure and
// deterministic, so an unchanged world gives an identical status, and the hub writes nothing.
// The reasons are the API's contract with users and alerts: CamelCase constants, never
// person-written text.
package status
