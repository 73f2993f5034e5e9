// Package v1alpha1 holds the CDCPipeline API (group urutau.io). It keeps every field of the
// single-cluster urutau operator's CRD, so existing manifests apply unchanged, and adds what a fleet
// needs: placement, per-cluster overrides and per-member status.
//
// Types only: this package imports apimachinery and k8s.io/api, nothing of this module.
//
// +kubebuilder:object:generate=true
// +groupName=urutau.io
package v1alpha1
