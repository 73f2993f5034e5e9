package membercache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
)

// protoObject is a member object as the API server sends it in a watch (protobuf, which
// controller-runtime asks for built-in kinds).
type protoObject interface {
	client.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// placementObjects are the 8 objects of one placement as a member's API server holds them after
// the hub's apply: rendered as the bench's pipelines are, with what the server adds (UID,
// resourceVersion, creation time, generation, our manager's entry with its field set, a
// StatefulSet's defaults and status).
func placementObjects(t testing.TB, i int, member string) []protoObject {
	t.Helper()
	p := &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench-1", Name: fmt.Sprintf("p-%04d", i), UID: types.UID(fmt.Sprintf("0b1c2d3e-0000-4000-8000-%012d", i)), Generation: 1},
		Spec: urutauv1alpha1.CDCPipelineSpec{PipelineSpec: urutauv1alpha1.PipelineSpec{Definition: urutauv1alpha1.Definition{Inline: &k8sruntime.RawExtension{
			Raw: fmt.Appendf(nil, `{"pipeline":"p-%04d","source":{"kind":"mysql","serverId":"%d","uri":"mysql://bench@db:3306/shop"},`+
				`"sink":{"type":"iceberg+rest","uri":"http://catalog.lake:8181/api/catalog","namespace":"raw","warehouse":"s3://lake/warehouse"},`+
				`"tables":[{"source":"shop.orders","target":"raw.orders","primaryKey":["id"]}]}`, i, 1000+i)}}}},
	}
	w, err := coordinator.Render(p, coordinator.Settings{DefaultImage: "ghcr.io/urutau-io/coordinator:bench"})
	if err != nil {
		t.Fatal(err)
	}
	manager := "urutau-operator@" + member
	applied := metav1.NewTime(time.Unix(1_800_000_000+int64(i), 0))
	var out []protoObject
	for n, ac := range []any{w.CoordinatorServiceAccount, w.WorkerServiceAccount, w.PodDisruptionBudget, w.Role, w.RoleBinding, w.Service, w.ConfigMap, w.StatefulSet} {
		desired, err := json.Marshal(ac)
		if err != nil {
			t.Fatal(err)
		}
		obj := []protoObject{&corev1.ServiceAccount{}, &corev1.ServiceAccount{}, &policyv1.PodDisruptionBudget{}, &rbacv1.Role{},
			&rbacv1.RoleBinding{}, &corev1.Service{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{}}[n]
		if err := json.Unmarshal(desired, obj); err != nil {
			t.Fatal(err)
		}
		obj.SetUID(types.UID(fmt.Sprintf("5a6b7c8d-%04d-4000-8000-%012d", n, i)))
		obj.SetResourceVersion(fmt.Sprint(100_000 + 8*i + n))
		obj.SetCreationTimestamp(applied)
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[urutauv1alpha1.AnnotationAppliedHash] = appliedHash(desired)
		obj.SetAnnotations(annotations)
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: obj.GetObjectKind().GroupVersionKind().GroupVersion().String(), Time: &applied, FieldsType: "FieldsV1",
			FieldsV1: fieldSetOf(t, desired)}})
		if sts, ok := obj.(*appsv1.StatefulSet); ok {
			sts.Generation = 1
			sts.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
			sts.Spec.RevisionHistoryLimit = ptr.To[int32](10)
			sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}}
			sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1,
				AvailableReplicas: 1, CurrentRevision: sts.Name + "-5d8f7c9b6", UpdateRevision: sts.Name + "-5d8f7c9b6", CollisionCount: ptr.To[int32](0)}
		}
		out = append(out, obj)
	}
	return out
}

// fieldSetOf is the field set the API server records for an apply of desired (a deduced schema:
// lists atomic, so a little smaller than the real one).
func fieldSetOf(t testing.TB, desired []byte) *metav1.FieldsV1 {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(desired, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	tv, err := typed.DeducedParseableType.FromUnstructured(m)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	b, err := set.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	return metav1.NewFieldsV1(string(b))
}

// memberCacheLayout is how a member cache stores what its watches deliver.
type memberCacheLayout struct {
	transform toolscache.TransformFunc
	indexers  toolscache.Indexers
}

// cachedBytes fills one store per member the way an informer does (decode each watched object from
// its protobuf bytes, transform it, add it to the store) and returns the heap that holds, per
// object, overall and per kind (kinds objects per placement, in order). The figure is marginal:
// the heap in use after a collection with every placement stored, less that with half of them,
// divided by the objects added, so what does not grow with placements (the stores themselves,
// buffers the runtime keeps) is not counted.
func cachedBytes(t testing.TB, layout memberCacheLayout, raw map[string][][]byte, decode func(kind int, b []byte) protoObject, kinds int) (perObject float64, perKind []float64) {
	t.Helper()
	heap := func(only int, share float64) (uint64, int) {
		var ms runtime.MemStats
		// One store per member and kind, as each kind has its informer.
		var stores []toolscache.Indexer
		n := 0
		for _, objs := range raw {
			byKind := make([]toolscache.Indexer, kinds)
			for k := range byKind {
				byKind[k] = toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, layout.indexers)
			}
			for i, b := range objs[:int(float64(len(objs)/kinds)*share)*kinds] {
				if only >= 0 && i%kinds != only {
					continue
				}
				obj, err := layout.transform(decode(i%kinds, b))
				if err != nil {
					t.Fatal(err)
				}
				if err := byKind[i%kinds].Add(obj); err != nil {
					t.Fatal(err)
				}
				n++
			}
			stores = append(stores, byKind...)
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(stores)
		return ms.HeapAlloc, n
	}
	measure := func(only int) float64 {
		half, nHalf := heap(only, 0.5)
		all, nAll := heap(only, 1)
		return float64(int64(all)-int64(half)) / float64(nAll-nHalf)
	}
	perObject = measure(-1)
	for k := range kinds {
		perKind = append(perKind, measure(k))
	}
	return perObject, perKind
}

// typedMemberObject is the member caches' transform before memberObject, for comparison: typed
// objects with their metadata, less field sets, specs and data.
func typedMemberObject(in any) (any, error) {
	obj := in.(client.Object)
	trimMeta(obj)
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		o.Spec = appsv1.StatefulSetSpec{Replicas: o.Spec.Replicas}
	case *corev1.ConfigMap:
		o.Data, o.BinaryData = nil, nil
	case *corev1.Service:
		o.Spec = corev1.ServiceSpec{}
	case *corev1.ServiceAccount:
		o.Secrets, o.ImagePullSecrets = nil, nil
	case *rbacv1.Role:
		o.Rules = nil
	case *rbacv1.RoleBinding:
		o.Subjects, o.RoleRef = nil, rbacv1.RoleRef{}
	case *policyv1.PodDisruptionBudget:
		o.Spec = policyv1.PodDisruptionBudgetSpec{}
	}
	return obj, nil
}

// newWatched returns an empty object of the n-th kind of placementObjects.
func newWatched(n int) protoObject {
	return []func() protoObject{
		func() protoObject { return &corev1.ServiceAccount{} }, func() protoObject { return &corev1.ServiceAccount{} },
		func() protoObject { return &policyv1.PodDisruptionBudget{} }, func() protoObject { return &rbacv1.Role{} },
		func() protoObject { return &rbacv1.RoleBinding{} }, func() protoObject { return &corev1.Service{} },
		func() protoObject { return &corev1.ConfigMap{} }, func() protoObject { return &appsv1.StatefulSet{} },
	}[n]()
}

// memberWatchBytes are the protobuf encodings of the objects of pipelines placements, each on
// two members, keyed by member.
func memberWatchBytes(t testing.TB, pipelines int) map[string][][]byte {
	t.Helper()
	raw := map[string][][]byte{}
	for _, member := range []string{"member-a", "member-b"} {
		for i := range pipelines {
			for _, obj := range placementObjects(t, i, member) {
				b, err := obj.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				raw[member] = append(raw[member], b)
			}
		}
	}
	return raw
}

func decodeWatched(t testing.TB) func(int, []byte) protoObject {
	return func(kind int, b []byte) protoObject {
		obj := newWatched(kind)
		if err := obj.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		return obj
	}
}

// TestMemberCacheBytesPerObject measures what a member cache holds per object the hub applied
// (go test ./internal/fleet/ -run TestMemberCacheBytesPerObject -v): the objects of 500
// placements (250 pipelines on 2 members, 8 objects each), decoded from protobuf as a watch
// delivers them, transformed and stored with the indexes of each layout. The goal is 400 B per
// object, indexes included (issue 30). Per kind, each kind is measured alone: nothing it interns
// is shared with the other kinds, so those figures are upper bounds.
func TestMemberCacheBytesPerObject(t *testing.T) {
	raw := memberWatchBytes(t, 250)
	kinds := []string{"ServiceAccount (coordinator)", "ServiceAccount (worker)", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ConfigMap", "StatefulSet"}
	for _, tc := range []struct {
		name   string
		layout memberCacheLayout
		goal   float64
	}{
		{"before: typed objects, metadata kept, namespace index", memberCacheLayout{transform: typedMemberObject,
			indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}}, 0},
		{"memberObject, no index", memberCacheLayout{transform: compactMemberObject}, 400},
	} {
		per, perKind := cachedBytes(t, tc.layout, raw, decodeWatched(t), len(kinds))
		t.Logf("%s: %.0f B per cached object", tc.name, per)
		for k, b := range perKind {
			t.Logf("  %s alone: %.0f B", kinds[k], b)
		}
		if tc.goal > 0 && per > tc.goal {
			t.Errorf("%s: %.0f B per cached object, goal %.0f B", tc.name, per, tc.goal)
		}
	}
}

// appliedHash is the hub's applied-hash annotation of an apply body: its SHA-256, 16 hex digits.
func appliedHash(desired []byte) string {
	sum := sha256.Sum256(desired)
	return hex.EncodeToString(sum[:])[:16]
}
