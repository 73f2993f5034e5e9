package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// TestKubectlGetColumns asks a real API server for the table `kubectl get cdcp` and `kubectl get
// cdcp -o wide` print (the server-side Table conversion kubectl uses), and for the discovery
// entries that make `kubectl get cdcp` and `kubectl get urutau` work.
func TestKubectlGetColumns(t *testing.T) {
	c := startOne(t)
	ctx := t.Context()

	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	p := readPipeline(t, "../../examples/fleet/by-name.yaml")
	p.Namespace = "shop"
	if err := c.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = urutauv1alpha1.CDCPipelineStatus{
		ObservedGeneration: 1,
		ReadyClusters:      "1/2",
		Inventory:          []string{"eu-1", "us-1"},
		Conditions: []metav1.Condition{{Type: urutauv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "MemberFailures",
			Message: "us-1: unreachable", LastTransitionTime: metav1.Now(), ObservedGeneration: 1}},
		Clusters: []urutauv1alpha1.ClusterStatus{{Name: "eu-1", Phase: urutauv1alpha1.ClusterReady}, {Name: "us-1", Phase: urutauv1alpha1.ClusterUnreachable}},
	}
	if err := c.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}

	table := getTable(t, c.Config, "/apis/urutau.io/v1alpha1/namespaces/shop/cdcpipelines")
	var names, wide []string
	for _, col := range table.ColumnDefinitions {
		if col.Priority == 0 {
			names = append(names, col.Name)
		} else {
			wide = append(wide, col.Name)
		}
	}
	if want := []string{"Name", "Ready", "Reason", "Clusters", "Terminated", "Age"}; !slices.Equal(names, want) {
		t.Errorf("kubectl get columns %v, want %v", names, want)
	}
	if want := []string{"Generation", "Observed", "Members", "Message"}; !slices.Equal(wide, want) {
		t.Errorf("-o wide adds %v, want %v", wide, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(table.Rows))
	}
	cells := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		cells[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	want := map[string]string{"Name": "orders", "Ready": "False", "Reason": "MemberFailures", "Clusters": "1/2",
		"Terminated": "<nil>", "Generation": "1", "Observed": "1", "Members": `["eu-1","us-1"]`, "Message": "us-1: unreachable"}
	for k, v := range want {
		if cells[k] != v {
			t.Errorf("column %s = %q, want %q", k, cells[k], v)
		}
	}

	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	resources, err := dc.ServerResourcesForGroupVersion("urutau.io/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "cdcpipelines" })
	if i < 0 {
		t.Fatal("no cdcpipelines in discovery")
	}
	if r := resources.APIResources[i]; !slices.Equal(r.ShortNames, []string{"cdcp"}) || !slices.Equal(r.Categories, []string{"urutau"}) {
		t.Errorf("short names %v, categories %v; want [cdcp] and [urutau]", r.ShortNames, r.Categories)
	}
	// Cluster-scoped: out of the urutau category, which namespace viewers list (TestKubectlGetUrutau).
	i = slices.IndexFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "placementpolicies" })
	if r := resources.APIResources[i]; !slices.Equal(r.ShortNames, []string{"plpol"}) || len(r.Categories) != 0 {
		t.Errorf("placementpolicies: short names %v, categories %v; want [plpol] and none", r.ShortNames, r.Categories)
	}
}

// TestPlacementPolicyColumns: `kubectl get plpol` shows whom a policy lets place where, and -o
// wide the selectors.
func TestPlacementPolicyColumns(t *testing.T) {
	c := startOne(t)
	p := &urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop-eu"}, Spec: urutauv1alpha1.PlacementPolicySpec{
		Namespaces: []string{"shop"}, ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
		MemberNamespaces: []string{"shop-cdc"}}}
	if err := c.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	table := getTable(t, c.Config, "/apis/urutau.io/v1alpha1/placementpolicies")
	var names, wide []string
	cells := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		if col.Priority == 0 {
			names = append(names, col.Name)
		} else {
			wide = append(wide, col.Name)
		}
		cells[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	if want := []string{"Name", "Namespaces", "Members", "Age"}; !slices.Equal(names, want) {
		t.Errorf("kubectl get plpol columns %v, want %v", names, want)
	}
	if want := []string{"Namespace Selector", "Member Selector", "Member Namespaces"}; !slices.Equal(wide, want) {
		t.Errorf("-o wide adds %v, want %v", wide, want)
	}
	want := map[string]string{"Name": "shop-eu", "Namespaces": `["shop"]`, "Members": "<nil>",
		"Member Selector": `{"matchLabels":{"region":"eu"}}`, "Member Namespaces": `["shop-cdc"]`}
	for k, v := range want {
		if cells[k] != v {
			t.Errorf("column %s = %q, want %q", k, cells[k], v)
		}
	}
}

// getTable GETs path as kubectl get does: asking the server for a meta.k8s.io Table.
func getTable(t *testing.T, cfg *rest.Config, path string) *metav1.Table {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &urutauv1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, err := rc.Get().AbsPath(path).Param("includeObject", "None").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatal(err)
	}
	return table
}

// readPipeline reads the first CDCPipeline of a file.
func readPipeline(t *testing.T, path string) *urutauv1alpha1.CDCPipeline {
	t.Helper()
	for _, o := range readObjects(t, path) {
		if o.GetKind() != "CDCPipeline" {
			continue
		}
		p := &urutauv1alpha1.CDCPipeline{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Fatalf("no CDCPipeline in %s", path)
	return nil
}
