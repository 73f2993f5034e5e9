package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

func TestHubCacheOptions(t *testing.T) {
	only := func(ns ...string) map[string]cache.Config {
		m := map[string]cache.Config{}
		for _, n := range ns {
			m[n] = cache.Config{}
		}
		return m
	}
	base := options{clusterProvider: providerKubeconfig, providerNamespace: "urutau-system", leaseNamespace: "graves"}
	tests := []struct {
		name           string
		edit           func(*options)
		wantDefault    map[string]cache.Config
		wantProfiles   bool
		wantNamespaces map[string]map[string]cache.Config // by kind
	}{
		{
			name: "kubeconfig, all namespaces",
			edit: func(*options) {},
			wantNamespaces: map[string]map[string]cache.Config{
				"Secret": only("urutau-system"), "ReaderLease": only("graves"),
			},
		},
		{
			name:         "cluster-profile adds ClusterProfiles in the provider namespace",
			edit:         func(o *options) { o.clusterProvider = providerClusterProfile },
			wantProfiles: true,
			wantNamespaces: map[string]map[string]cache.Config{
				"Secret": only("urutau-system"), "ReaderLease": only("graves"), "ClusterProfile": only("urutau-system"),
			},
		},
		{
			name:        "watch-namespaces scope the rest, CDCPipelines included",
			edit:        func(o *options) { o.watchNamespaces = []string{"team-a", "team-b"} },
			wantDefault: only("team-a", "team-b"),
			wantNamespaces: map[string]map[string]cache.Config{
				"Secret": only("urutau-system"), "ReaderLease": only("graves"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.edit(&o)
			got := hubCacheOptions(o)
			if diff := cmp.Diff(tt.wantDefault, got.DefaultNamespaces); diff != "" {
				t.Errorf("DefaultNamespaces (-want +got):\n%s", diff)
			}
			seen := map[string]bool{}
			for obj, by := range got.ByObject {
				kind := kindOf(obj)
				seen[kind] = true
				if diff := cmp.Diff(tt.wantNamespaces[kind], by.Namespaces); diff != "" {
					t.Errorf("%s namespaces (-want +got):\n%s", kind, diff)
				}
			}
			for kind := range tt.wantNamespaces {
				if !seen[kind] {
					t.Errorf("no ByObject entry for %s", kind)
				}
			}
			if seen["ClusterProfile"] != tt.wantProfiles {
				t.Errorf("ClusterProfile entry = %v, want %v", seen["ClusterProfile"], tt.wantProfiles)
			}
		})
	}
}

// The hub's own cached objects keep no managedFields (docs/benchmarks.md: a tenth of the heap).
func TestHubCacheStripsManagedFields(t *testing.T) {
	opts := hubCacheOptions(options{clusterProvider: providerKubeconfig, providerNamespace: "urutau-system", leaseNamespace: "graves"})
	if opts.DefaultTransform == nil {
		t.Fatal("DefaultTransform is nil: the hub's cache keeps managedFields")
	}
	p := &urutauv1alpha1.CDCPipeline{}
	p.Name = "orders"
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	out, err := opts.DefaultTransform(p)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*urutauv1alpha1.CDCPipeline)
	if got.ManagedFields != nil || got.Name != "orders" {
		t.Errorf("after the transform: name %q, managedFields %v; want orders and none", got.Name, got.ManagedFields)
	}
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Secret:
		return "Secret"
	case *urutauv1alpha1.ReaderLease:
		return "ReaderLease"
	case *clusterinventoryv1alpha1.ClusterProfile:
		return "ClusterProfile"
	}
	return "other"
}
