package inventory_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/inventory/inventorytest"
	"github.com/urutau-io/fleet/internal/testenv"
)

// TestListers runs both listers against a real API server.
func TestListers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real API server; runs without -short")
	}
	g := NewWithT(t)
	ctx := t.Context()
	clusters, err := testenv.Start(ctx, "hub")
	g.Expect(err).NotTo(HaveOccurred())
	hub := clusters[0]
	t.Cleanup(func() { _ = hub.Stop() })
	g.Expect(inventorytest.InstallClusterProfileCRD(ctx, hub.Config)).To(Succeed())
	c, err := client.New(hub.Config, client.Options{Scheme: inventorytest.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	const ns = "urutau-system"
	for _, n := range []string{ns, "elsewhere"} {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
	}

	t.Run("KubeconfigSecrets", func(t *testing.T) {
		g := NewWithT(t)
		prom := map[string]string{inventory.KEDAPrometheusAddressKey: "http://prom.b:9090"}
		for _, s := range []*corev1.Secret{
			// Created out of order: Members sorts.
			inventory.NewKubeconfigSecret(ns, "member-b", []byte("kc"), map[string]string{"region": "us"}, prom),
			inventory.NewKubeconfigSecret(ns, "member-a", []byte("kc"), map[string]string{"region": "eu"}, nil),
			inventory.NewKubeconfigSecret("elsewhere", "member-c", []byte("kc"), nil, nil),
			{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-a-member"}},
		} {
			g.Expect(c.Create(ctx, s)).To(Succeed())
		}

		members, err := inventory.KubeconfigSecrets{Client: c, Namespace: ns}.Members(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names(members)).To(Equal([]string{"member-a", "member-b"}))
		g.Expect(members[0].Labels).To(HaveKeyWithValue("region", "eu"))
		g.Expect(members[1].Labels).To(HaveKeyWithValue("region", "us"))
		g.Expect(members[1].Setting(inventory.KEDAPrometheusAddressKey)).To(Equal("http://prom.b:9090"))
		g.Expect(members[0].Setting(inventory.KEDAPrometheusAddressKey)).To(BeEmpty())

		empty, err := inventory.KubeconfigSecrets{Client: c, Namespace: "default"}.Members(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(empty).To(BeEmpty())
	})

	t.Run("ClusterProfiles", func(t *testing.T) {
		g := NewWithT(t)
		profile := func(ns, name string, labels, annotations map[string]string) *clusterinventoryv1alpha1.ClusterProfile {
			return &clusterinventoryv1alpha1.ClusterProfile{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
				Spec:       clusterinventoryv1alpha1.ClusterProfileSpec{ClusterManager: clusterinventoryv1alpha1.ClusterManager{Name: "test"}},
			}
		}
		for _, p := range []*clusterinventoryv1alpha1.ClusterProfile{
			profile(ns, "zeta", map[string]string{"tier": "prod"}, map[string]string{inventory.KEDAPrometheusAddressKey: "http://prom.z"}),
			profile(ns, "alpha", map[string]string{"tier": "dev"}, nil),
			profile("elsewhere", "omega", nil, nil),
		} {
			g.Expect(c.Create(ctx, p)).To(Succeed())
		}

		members, err := inventory.ClusterProfiles{Client: c, Namespace: ns}.Members(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names(members)).To(Equal([]string{"alpha", "zeta"}))
		g.Expect(members[0].Labels).To(HaveKeyWithValue("tier", "dev"))
		g.Expect(members[1].Labels).To(HaveKeyWithValue("tier", "prod"))
		g.Expect(members[1].Setting(inventory.KEDAPrometheusAddressKey)).To(Equal("http://prom.z"))
	})
}

func names(members []inventory.Member) []string {
	out := make([]string, 0, len(members))
	for _, m := range members {
		out = append(out, m.Name)
	}
	return out
}
