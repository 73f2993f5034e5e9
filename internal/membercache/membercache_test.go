package membercache

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// memberMetaFixture is the metadata of an object in a member with everything the hub reads and
// some it does not.
func memberMetaFixture() metav1.ObjectMeta {
	t1, t2 := metav1.NewTime(time.Unix(1_800_000_000, 0)), metav1.NewTime(time.Unix(1_800_000_060, 0))
	return metav1.ObjectMeta{
		Name: "p-coordinator", Namespace: "team-a", UID: "0b1c2d3e-4f50-4a1b-8c2d-3e4f5a6b7c8d", ResourceVersion: "123456",
		Generation: 3, CreationTimestamp: t1, DeletionTimestamp: &t2, Finalizers: []string{"x/y"},
		Labels: map[string]string{
			urutauv1alpha1.LabelManagedBy: urutauv1alpha1.ManagedByFleet, urutauv1alpha1.LabelHubNamespace: "team-a",
			urutauv1alpha1.LabelHubName: "p", urutauv1alpha1.LabelHubPipelineUID: "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
			urutauv1alpha1.LabelApp: "urutau-coordinator", urutauv1alpha1.LabelPipeline: "p", "team": "payments",
		},
		Annotations: map[string]string{
			urutauv1alpha1.AnnotationAppliedHash: "0123456789abcdef", urutauv1alpha1.AnnotationAdopt: "team-a/p",
			"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "dropped",
		},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "urutau.io/v1alpha1", Kind: "CDCPipeline", Name: "p", UID: "u-1",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)}, {APIVersion: "v1", Kind: "Pod", Name: "p-coordinator-0", UID: "u-2"}},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "urutau-operator@a", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &t1,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)},
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &t2},
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate},
		},
	}
}

// keptMeta is what a member cache gives back of memberMetaFixture.
func keptMeta() metav1.ObjectMeta {
	m := memberMetaFixture()
	m.CreationTimestamp, m.Finalizers = metav1.Time{}, nil
	delete(m.Labels, "team")
	delete(m.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
	delete(m.Annotations, "note")
	for i := range m.ManagedFields {
		m.ManagedFields[i].APIVersion, m.ManagedFields[i].FieldsType, m.ManagedFields[i].FieldsV1 = "", "", nil
	}
	return m
}

func compact(t *testing.T, obj client.Object) *memberObject {
	t.Helper()
	out, err := compactMemberObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := out.(*memberObject)
	if !ok {
		t.Fatalf("%T became a %T, not a memberObject", obj, out)
	}
	return o
}

// A member cache gives back every field the hub reads, exactly, and drops the rest.
func TestMemberObjectKeepsWhatTheHubReads(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: memberMetaFixture(),
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), ServiceName: "dropped"},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r2",
			Conditions: []appsv1.StatefulSetCondition{{Type: "x"}}}}
	got := &appsv1.StatefulSet{}
	if err := compact(t, sts).into(got); err != nil {
		t.Fatal(err)
	}
	want := &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: keptMeta(),
		Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r2"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("StatefulSet from the member cache (-want +got):\n%s", d)
	}

	cm := &corev1.ConfigMap{ObjectMeta: memberMetaFixture(), Data: map[string]string{"pipeline.yaml": "big"}}
	gotCM := &corev1.ConfigMap{}
	if err := compact(t, cm).into(gotCM); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: keptMeta()}, gotCM); d != "" {
		t.Errorf("ConfigMap from the member cache (-want +got):\n%s", d)
	}
	if err := compact(t, cm).into(&corev1.Service{}); err == nil {
		t.Error("a ConfigMap was served as a Service")
	}
}

// What does not have the canonical form packs nothing and comes back as given.
func TestMemberObjectKeepsOddValues(t *testing.T) {
	for _, tc := range []struct{ uid, rv, hash string }{
		{"not-a-uuid", "0012", "NOT-A-HASH"},
		{"0B1C2D3E-4F50-4A1B-8C2D-3E4F5A6B7C8D", "", "0123456789ABCDEF"},
		{"", "18446744073709551616", ""},
	} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", UID: types.UID(tc.uid), ResourceVersion: tc.rv,
			Annotations: map[string]string{urutauv1alpha1.AnnotationAppliedHash: tc.hash}}}
		o := compact(t, sa)
		got := &corev1.ServiceAccount{}
		if err := o.into(got); err != nil {
			t.Fatal(err)
		}
		if string(got.UID) != tc.uid || got.ResourceVersion != tc.rv || got.Annotations[urutauv1alpha1.AnnotationAppliedHash] != tc.hash {
			t.Errorf("%+v came back as uid %q, rv %q, hash %q", tc, got.UID, got.ResourceVersion, got.Annotations[urutauv1alpha1.AnnotationAppliedHash])
		}
		if string(o.GetUID()) != tc.uid || o.GetResourceVersion() != tc.rv {
			t.Errorf("%+v: GetUID %q, GetResourceVersion %q", tc, o.GetUID(), o.GetResourceVersion())
		}
	}
	if _, ok := compact(t, &corev1.ServiceAccount{}).GetAnnotations()[urutauv1alpha1.AnnotationAppliedHash]; ok {
		t.Error("an object without the applied hash has one in the member cache")
	}
}

// The event handlers get memberObjects: they read the same metadata as from the typed object.
func TestMemberObjectAsClientObject(t *testing.T) {
	role := &rbacv1.Role{ObjectMeta: memberMetaFixture()}
	o := compact(t, role)
	if k := KindOf(o).GVK().Kind; k != "Role" || o.GetObjectKind().GroupVersionKind() != rbacv1.SchemeGroupVersion.WithKind("Role") {
		t.Errorf("kind %q, GVK %v", k, o.GetObjectKind().GroupVersionKind())
	}
	want := keptMeta()
	if o.GetName() != want.Name || o.GetNamespace() != want.Namespace || o.GetUID() != want.UID || o.GetResourceVersion() != want.ResourceVersion ||
		o.GetGeneration() != want.Generation || !o.GetDeletionTimestamp().Equal(want.DeletionTimestamp) {
		t.Errorf("identity: %s/%s %s %s %d %v", o.GetNamespace(), o.GetName(), o.GetUID(), o.GetResourceVersion(), o.GetGeneration(), o.GetDeletionTimestamp())
	}
	if d := cmp.Diff(want.Labels, o.GetLabels()); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want.Annotations, o.GetAnnotations()); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want.OwnerReferences, o.GetOwnerReferences()); d != "" {
		t.Errorf("owners (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want.ManagedFields, o.GetManagedFields()); d != "" {
		t.Errorf("managers (-want +got):\n%s", d)
	}
	if again, _ := compactMemberObject(o); again != o {
		t.Error("the transform changed a memberObject it was given again")
	}
	cp := o.DeepCopyObject().(*memberObject)
	cp.SetLabels(map[string]string{urutauv1alpha1.LabelHubName: "q"})
	if o.GetLabels()[urutauv1alpha1.LabelHubName] != "p" || cp.GetLabels()[urutauv1alpha1.LabelHubName] != "q" {
		t.Error("a copy's change reached the original, or was lost")
	}
}

// stubCache serves one informer per kind from stores the test fills.
type stubCache struct {
	cache.Cache
	informers map[Kind]toolscache.SharedIndexInformer
	delegated int
}

func (s *stubCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	k := KindOf(obj)
	if s.informers[k] == nil {
		s.informers[k] = newMemberInformer(nil, obj, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	}
	return s.informers[k], nil
}

func (s *stubCache) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	s.delegated++
	return nil
}

func (s *stubCache) add(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		inf, _ := s.GetInformer(context.Background(), obj)
		if err := inf.(toolscache.SharedIndexInformer).GetIndexer().Add(compact(t, obj)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMemberCacheServesTypedObjects(t *testing.T) {
	ctx := context.Background()
	stub := &stubCache{informers: map[Kind]toolscache.SharedIndexInformer{}}
	c := &memberCache{Cache: stub}
	ours := func(ns, name string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{urutauv1alpha1.LabelHubPipelineUID: "u-" + name}}}
	}
	stub.add(t, ours("a", "one"), ours("b", "two"), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "default"}})

	got := &corev1.ServiceAccount{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "one"}, got); err != nil || got.Labels[urutauv1alpha1.LabelHubPipelineUID] != "u-one" {
		t.Errorf("Get a/one = %v, %v", got, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "one"}, got); !apierrors.IsNotFound(err) {
		t.Errorf("Get b/one: %v, want NotFound", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "s"}, &corev1.Secret{}); err != nil || stub.delegated != 1 {
		t.Errorf("a Secret was not read from the cache below (%v, %d)", err, stub.delegated)
	}

	names := func(l *corev1.ServiceAccountList) string {
		var out []string
		for _, sa := range l.Items {
			out = append(out, sa.Namespace+"/"+sa.Name)
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		opts []client.ListOption
		want string
	}{
		{nil, "a/default,a/one,b/two"},
		{[]client.ListOption{client.HasLabels{urutauv1alpha1.LabelHubPipelineUID}}, "a/one,b/two"},
		{[]client.ListOption{client.InNamespace("a")}, "a/default,a/one"},
		{[]client.ListOption{client.InNamespace("a"), client.MatchingLabels{urutauv1alpha1.LabelHubPipelineUID: "u-one"}}, "a/one"},
	} {
		l := &corev1.ServiceAccountList{}
		if err := c.List(ctx, l, tc.opts...); err != nil || names(l) != tc.want {
			t.Errorf("List %v = %q, %v; want %q", tc.opts, names(l), err, tc.want)
		}
	}
	err := c.List(ctx, &corev1.ServiceAccountList{}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", "one")})
	if err == nil || !strings.Contains(err.Error(), "field selectors") {
		t.Errorf("a field selector: %v, want an error that names it", err)
	}
}

// Member informers of the compacted kinds keep no index; others keep theirs.
func TestNewMemberInformerIndexes(t *testing.T) {
	idx := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	for _, tc := range []struct {
		obj  runtime.Object
		want int
	}{{&appsv1.StatefulSet{}, 0}, {&corev1.ConfigMap{}, 0}, {&corev1.Pod{}, 1}} {
		if got := len(newMemberInformer(nil, tc.obj, 0, idx).GetIndexer().GetIndexers()); got != tc.want {
			t.Errorf("%T: %d indexes, want %d", tc.obj, got, tc.want)
		}
	}
}

// TestMetadataListsMatchLists: the metadata lists name the same kinds, in the same order, as
// the typed lists, so a scan reading either sees the same objects.
func TestMetadataListsMatchLists(t *testing.T) {
	typed, meta := Lists(), MetadataLists()
	if len(typed) != len(meta) {
		t.Fatalf("%d typed lists, %d metadata lists", len(typed), len(meta))
	}
	for i := range typed {
		want, err := apiutil.GVKForObject(typed[i], clientgoscheme.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		if got := meta[i].GetObjectKind().GroupVersionKind(); got != want {
			t.Errorf("list %d: metadata list is %v, typed list is %v", i, got, want)
		}
	}
}
