package memberwork

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/adopt"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/members"
)

// countingMember is a member (a fake client) that counts the GETs and LISTs it serves.
type countingMember struct {
	client.Client
	gets, lists int
}

func newCountingMember(scheme *runtime.Scheme, objs ...client.Object) *countingMember {
	c := &countingMember{}
	c.Client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			c.gets++
			return cl.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			c.lists++
			return cl.List(ctx, list, opts...)
		},
	}).Build()
	return c
}

// The worker names a tenant's tables ask for are read from the member cache by name; while that
// cache may lag, from the member itself with one LIST per kind, whatever the number of tables,
// and the same objects are found either way.
func TestNamedObjects(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objects := func() []client.Object {
		return []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "w1", Labels: map[string]string{"app": "payments"}}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "w2"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "unrelated"}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "w3"}},
		}
	}
	names := []string{"w1", "w2", "w3", "w4", "w5", "w6"}
	for _, tc := range []struct {
		name        string
		cacheMayLag bool
		wantLists   int
	}{
		{name: "current cache: by name from the cache, nothing from the member", cacheMayLag: false},
		{name: "lagging cache: one LIST per kind from the member", cacheMayLag: true, wantLists: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cached, live := newCountingMember(scheme, objects()...), newCountingMember(scheme, objects()...)
			j := &ApplyJob{
				Pipeline:    &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p"}},
				Conn:        &members.Conn{Name: "a", Cached: cached, Live: live},
				CacheMayLag: tc.cacheMayLag,
			}
			got, err := j.namedObjects(t.Context(), names)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got["StatefulSet/w1"] == nil || got["Service/w2"] == nil {
				t.Errorf("found %v, want StatefulSet/w1 and Service/w2 (nothing of another namespace, nothing unnamed)", slices.Sorted(maps.Keys(got)))
			}
			if got["StatefulSet/w1"] != nil && got["StatefulSet/w1"].GetLabels()["app"] != "payments" {
				t.Errorf("StatefulSet/w1 read without its labels: %v", got["StatefulSet/w1"].GetLabels())
			}
			if live.gets != 0 || live.lists != tc.wantLists {
				t.Errorf("member: %d GETs and %d LISTs, want 0 and %d", live.gets, live.lists, tc.wantLists)
			}
			if wantCached := map[bool]int{false: 2 * len(names), true: 0}[tc.cacheMayLag]; cached.gets != wantCached {
				t.Errorf("cache: %d GETs, want %d", cached.gets, wantCached)
			}
		})
	}
}

// A table whose worker group is named like a coordinator: the pipeline's own (target
// "coordinator") is refused before anything is written, since the name is free on the first
// placement; another pipeline's (target "orders.coordinator" of pipeline "shop" makes
// "shop-orders-coordinator") holds that pipeline's coordinator from being created while the
// ScaledObject targets it.
func TestWorkerNamedLikeACoordinator(t *testing.T) {
	const kedaInline = `
pipeline: clicks
source: {kind: mysql, serverId: "2001"}
sink: {type: iceberg+rest, namespace: raw, warehouse: s3://lake/clicks}
tables:
- {source: web.clicks, target: raw.clicks, primaryKey: [id], workers: {number: 1, max: 4}}
`
	render := func(t *testing.T, name, target string) (*urutauv1alpha1.CDCPipeline, *coordinator.Workload) {
		t.Helper()
		def := strings.NewReplacer("clicks", name, "raw.clicks", target).Replace(kedaInline)
		raw, err := yaml.YAMLToJSON([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: name, UID: "uid-" + types.UID(name)}}
		p.Spec.Definition.Inline = &runtime.RawExtension{Raw: raw}
		p.Spec.Secrets = urutauv1alpha1.Secrets{Source: "src", Catalog: "cat"}
		w, err := coordinator.Render(p, coordinator.Settings{DefaultImage: "urutau/coordinator:test", KEDAPrometheusAddress: "http://prometheus:9090"})
		if err != nil {
			t.Fatal(err)
		}
		return p, w
	}
	t.Run("own coordinator", func(t *testing.T) {
		p, w := render(t, "shop", "coordinator")
		scaled := false
		for _, so := range w.ScaledObjects {
			scaled = scaled || so.Spec.ScaleTargetRef.Name == coordinator.CoordinatorName("shop")
		}
		if !scaled {
			t.Fatal("the renderer no longer names a worker group after the coordinator; this case tests nothing")
		}
		var c *adopt.Conflict
		if err := notOwnCoordinator(grantedWorkerNames(w), p); !errors.As(err, &c) || !strings.Contains(c.Message, `"shop-coordinator"`) {
			t.Fatalf("got %v, want a conflict naming shop-coordinator", err)
		}
	})
	t.Run("an ordinary table", func(t *testing.T) {
		p, w := render(t, "shop", "raw.clicks")
		if err := notOwnCoordinator(grantedWorkerNames(w), p); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("another pipeline's coordinator", func(t *testing.T) {
		_, w := render(t, "shop", "orders.coordinator")
		scheme := runtime.NewScheme()
		if err := kedav1alpha1.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		var objs []client.Object
		for _, so := range w.ScaledObjects {
			objs = append(objs, so)
		}
		j := &ApplyJob{Pipeline: &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "shop-orders"}},
			Conn: &members.Conn{Name: "a", Live: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()}}
		var c *adopt.Conflict
		if err := j.scalersOf(t.Context(), coordinator.CoordinatorName("shop-orders")); !errors.As(err, &c) || !strings.Contains(c.Object, "ScaledObject cdc/shop-orders-coordinator") {
			t.Fatalf("got %v, want a conflict naming the ScaledObject", err)
		}
		if err := j.scalersOf(t.Context(), coordinator.CoordinatorName("other")); err != nil {
			t.Fatalf("a coordinator no ScaledObject targets: %v", err)
		}
	})
	t.Run("no KEDA in the member", func(t *testing.T) {
		live := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "keda.sh", Kind: "ScaledObject"}}
			},
		}).Build()
		j := &ApplyJob{Pipeline: &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "shop"}}, Conn: &members.Conn{Name: "a", Live: live}}
		if err := j.scalersOf(t.Context(), "shop-coordinator"); err != nil {
			t.Fatalf("a member without KEDA: %v", err)
		}
	})
}
