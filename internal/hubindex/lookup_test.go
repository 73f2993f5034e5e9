package hubindex

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

func names(keys []types.NamespacedName) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

// Which pipelines a member, a lease and a namespace concern, as the hub's cache says.
func TestLookup(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := urutauv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pipeline := func(ns, name string, set func(p *urutauv1alpha1.CDCPipeline)) client.Object {
		p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
		set(p)
		return p
	}
	rl := &urutauv1alpha1.ReaderLease{ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: "mysql-1"},
		Spec: urutauv1alpha1.ReaderLeaseSpec{
			Holder:  urutauv1alpha1.PipelineRef{Namespace: "cdc", Name: "holder", UID: "uid-holder"},
			Members: []urutauv1alpha1.LeaseMember{{Cluster: "m", PipelineUID: "uid-leased", PipelineNamespace: "cdc", PipelineName: "leased"}}}}
	hub := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&urutauv1alpha1.CDCPipeline{}, PipelineLease, func(o client.Object) []string {
			if o.GetName() == "waits" {
				return []string{"mysql-1"}
			}
			return []string{"own-" + o.GetName()}
		}).
		WithObjects(rl,
			pipeline("cdc", "inventory", func(p *urutauv1alpha1.CDCPipeline) { p.Status.Inventory = []string{"m"} }),
			pipeline("cdc", "shown", func(p *urutauv1alpha1.CDCPipeline) {
				p.Status.Clusters = []urutauv1alpha1.ClusterStatus{{Name: "m"}}
			}),
			pipeline("cdc", "leased", func(*urutauv1alpha1.CDCPipeline) {}),
			pipeline("cdc", "waits", func(*urutauv1alpha1.CDCPipeline) {}),
			pipeline("other", "elsewhere", func(p *urutauv1alpha1.CDCPipeline) { p.Status.Inventory = []string{"n"} }),
		).Build()
	l := Lookup{Hub: hub, LeaseNamespace: "urutau-system"}
	ctx := t.Context()
	for what, tc := range map[string]struct{ got, want []string }{
		"on m":       {names(l.On(ctx, "m")), []string{"cdc/inventory", "cdc/leased", "cdc/shown"}},
		"entry of m": {names(l.ForEntry(ctx, "m", false)), []string{"cdc/inventory", "cdc/leased", "cdc/shown"}},
		"every":      {names(l.ForEntry(ctx, "m", true)), []string{"cdc/inventory", "cdc/leased", "cdc/shown", "cdc/waits", "other/elsewhere"}},
		"of lease":   {names(l.OfLease(ctx, rl)), []string{"cdc/holder", "cdc/leased", "cdc/waits"}},
		"in other":   {names(l.In(ctx, "other")), []string{"other/elsewhere"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", what, tc.got, tc.want)
		}
	}
}
