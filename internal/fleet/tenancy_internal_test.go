package fleet

import (
	"context"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
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
			j := &applyJob{
				p:           &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p"}},
				conn:        &Conn{Name: "a", Cached: cached, Live: live},
				cacheMayLag: tc.cacheMayLag,
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
