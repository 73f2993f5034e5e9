package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// countingReader counts the pipelines a List hands back.
type countingReader struct {
	client.Reader
	read int
}

func (c *countingReader) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	err := c.Reader.List(ctx, l, opts...)
	if pl, ok := l.(*urutauv1alpha1.CDCPipelineList); ok {
		c.read += len(pl.Items)
	}
	return err
}

// TestIndexedUniqueness: with the identity index, a check reads only the pipelines that share a
// key, finds the same duplicates as the full list, and names only pipelines of the same namespace.
func TestIndexedUniqueness(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := urutauv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for i := range 200 {
		objs = append(objs, pipeline(named(fmt.Sprintf("team-%d", i%7), fmt.Sprintf("p-%d", i)), edit(func(d doc) { source(d)["serverId"] = 5000 + i })))
	}
	objs = append(objs,
		pipeline(named("billing", "invoices")),                                              // serverId 42, another namespace
		pipeline(named("shop", "orders-old"), edit(func(d doc) { delete(source(d), "x") })), // serverId 42, same namespace
	)
	indexed := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&urutauv1alpha1.CDCPipeline{}, IdentityIndex, func(o client.Object) []string { return identityKeys(o.(*urutauv1alpha1.CDCPipeline)) }).Build()
	reader := &countingReader{Reader: indexed}
	v := &CDCPipelineValidator{Client: indexed, Identities: reader}

	p := pipeline() // shop/orders, serverId 42
	errs, err := v.checkUniqueness(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if reader.read != 2 {
		t.Errorf("the indexed check read %d pipelines, want the 2 that share serverId 42", reader.read)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	if len(errs) != 2 || !strings.Contains(all, "shop/orders-old") || !strings.Contains(all, "another namespace of the hub") {
		t.Errorf("errors:\n%s", all)
	}
	if strings.Contains(all, "billing") || strings.Contains(all, "invoices") {
		t.Errorf("a pipeline of another namespace is named:\n%s", all)
	}

	// The same verdict as the full list.
	full := &CDCPipelineValidator{Client: indexed}
	ferrs, err := full.checkUniqueness(t.Context(), p)
	if err != nil || len(ferrs) != len(errs) {
		t.Errorf("full list: %v, %v; indexed: %v", ferrs, err, errs)
	}

	// A pipeline alone with its identity reads nothing else.
	reader.read = 0
	lone := pipeline(named("team-1", "new"), edit(func(d doc) { source(d)["serverId"] = 9999 }))
	if errs, err := v.checkUniqueness(t.Context(), lone); err != nil || len(errs) != 0 || reader.read != 0 {
		t.Errorf("a unique identity: errs %v, err %v, read %d", errs, err, reader.read)
	}
}

func TestIdentityKeys(t *testing.T) {
	if got := identityKeys(pipeline()); strings.Join(got, ",") != "mysql/serverId/42" {
		t.Errorf("keys = %v", got)
	}
	if got := identityKeys(pipeline(inline(postgresInline()))); strings.Join(got, ",") != "postgres/slotName/urutau_pg" {
		t.Errorf("postgres keys = %v", got)
	}
	bad := pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Definition = urutauv1alpha1.Definition{Image: "planner:1"} })
	if got := identityKeys(bad); got != nil {
		t.Errorf("no parseable definition, keys = %v", got)
	}
}

// TestInlineSizeCap: a definition larger than the renderer accepts is refused before it is parsed.
func TestInlineSizeCap(t *testing.T) {
	p := pipeline()
	p.Spec.Definition.Inline = &runtime.RawExtension{Raw: []byte(`{"pipeline":"orders","pad":"` + strings.Repeat("x", 200<<10) + `"}`)}
	_, err := (&CDCPipelineValidator{Client: &listReader{}}).ValidateCreate(t.Context(), p)
	if err == nil || !strings.Contains(err.Error(), "spec.definition.inline: Too long") {
		t.Fatalf("err = %v", err)
	}
}
