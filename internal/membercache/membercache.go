// Package membercache is the hub's cache of a member cluster: of each kind the hub writes
// (Kinds), every object, compacted to what the hub reads of it (a tenth of the typed object),
// served back as typed objects; and a first sync bounded in time, so a member that stops
// answering while it is engaged holds no other. Options hands it to a cluster provider.
package membercache

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// A member cache holds, of each object of the kinds the hub writes (Kinds), a
// memberObject: what the hub reads of it, packed. At 10 members x 1,000 pipelines the typed objects
// with their metadata took 1.9 KB each and most of the hub's heap (docs/benchmarks.md); a
// memberObject takes about a tenth of that (TestMemberCacheBytesPerObject).
//
// Kept, and read by: name, namespace, UID and resourceVersion (everything); the labels in
// memberLabels (mapMemberObject, the orphan scan, adopt.Decide, workerOf, the UID checks); the
// annotations in memberAnnotations (holdsApplied, adopt.Decide); owner references (adopt.Decide,
// workerOf); each manager's name, operation, subresource and time (holdsApplied, releaseOthers,
// adopt's conflict message); the deletion timestamp (fleet's member event handler); the
// generation, and a StatefulSet's replicas and status (applyRequest.keeps, stopCoordinator,
// coordinatorReady).
// Everything else is dropped: specs, data, rules, field sets, other labels and annotations,
// finalizers, creation time. An object of another kind is stored as it comes, without field sets.
//
// The member cache serves typed objects (memberCache.Get and List fill them from a memberObject)
// and its informers deliver memberObjects to the event handlers, as client.Objects.

// memberLabels are the labels a member cache keeps: the fleet's and the coordinator selector's.
var memberLabels = []string{
	urutauv1alpha1.LabelManagedBy, urutauv1alpha1.LabelHubNamespace, urutauv1alpha1.LabelHubName,
	urutauv1alpha1.LabelHubPipelineUID, urutauv1alpha1.LabelApp, urutauv1alpha1.LabelPipeline,
}

// memberAnnotations are the annotations a member cache keeps.
var memberAnnotations = []string{urutauv1alpha1.AnnotationAppliedHash, urutauv1alpha1.AnnotationAdopt}

// Kind is a kind a member cache holds as memberObjects.
type Kind uint8

const (
	memberKindNone Kind = iota
	memberKindStatefulSet
	memberKindConfigMap
	memberKindService
	memberKindServiceAccount
	memberKindRole
	memberKindRoleBinding
	memberKindPodDisruptionBudget
	memberKindNetworkPolicy
)

// kindGVK is each kind's GroupVersionKind; its Kind is also applyRequest.kind.
var kindGVK = [...]schema.GroupVersionKind{
	memberKindStatefulSet:         appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
	memberKindConfigMap:           corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	memberKindService:             corev1.SchemeGroupVersion.WithKind("Service"),
	memberKindServiceAccount:      corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	memberKindRole:                rbacv1.SchemeGroupVersion.WithKind("Role"),
	memberKindRoleBinding:         rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	memberKindPodDisruptionBudget: policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
	memberKindNetworkPolicy:       networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
}

// KindOf tells the kind of a typed object or list; memberKindNone for any other.
func KindOf(o runtime.Object) Kind {
	switch o := o.(type) {
	case *appsv1.StatefulSet, *appsv1.StatefulSetList:
		return memberKindStatefulSet
	case *corev1.ConfigMap, *corev1.ConfigMapList:
		return memberKindConfigMap
	case *corev1.Service, *corev1.ServiceList:
		return memberKindService
	case *corev1.ServiceAccount, *corev1.ServiceAccountList:
		return memberKindServiceAccount
	case *rbacv1.Role, *rbacv1.RoleList:
		return memberKindRole
	case *rbacv1.RoleBinding, *rbacv1.RoleBindingList:
		return memberKindRoleBinding
	case *policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList:
		return memberKindPodDisruptionBudget
	case *networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList:
		return memberKindNetworkPolicy
	case *memberObject:
		return o.kind
	}
	return memberKindNone
}

// memberObject is one object of a member cache. What objects share is interned (unique): the
// namespace, the labels, annotations and owners (memberMeta: the same for every object of a
// pipeline, in every member), and the managers with their times (the same for the objects one
// member received in the same second). The UID, the
// resourceVersion and the applied hash are stored as numbers when they have the canonical form
// the API server and the hub give them, else as strings in the memberMeta.
type memberObject struct {
	name       string
	namespace  unique.Handle[string]
	meta       unique.Handle[memberMeta]
	managers   unique.Handle[string]
	uid        [16]byte
	rv         uint64
	generation int64
	hash       [8]byte
	sts        *memberStatefulSet
	kind       Kind
	// packed tells which of uid, rv and hash hold the value (packedUID...); the others are in meta.
	packed uint8
}

const (
	packedUID uint8 = 1 << iota
	packedRV
	packedHash
)

// memberMeta is the metadata a memberObject interns. Each string is an encoding (memberEncoder).
type memberMeta struct {
	labels, annotations, owners string
	// deleted is the deletion timestamp, in Unix seconds (metadata times have no finer grain).
	deleted   int64
	isDeleted bool
	uid, rv   string
}

// memberStatefulSet is what a member cache keeps of a StatefulSet besides metadata.
type memberStatefulSet struct {
	replicas    int32
	hasReplicas bool
	status      appsv1.StatefulSetStatus
}

// compactMemberObject is the member caches' transform: the objects of Kinds become
// memberObjects; any other object loses its field sets (trimMeta).
func compactMemberObject(in any) (any, error) {
	obj, ok := in.(client.Object)
	if !ok {
		return in, nil
	}
	if o, ok := obj.(*memberObject); ok {
		return o, nil
	}
	kind := KindOf(obj)
	if kind == memberKindNone {
		trimMeta(obj)
		return obj, nil
	}
	o := &memberObject{kind: kind}
	o.setMeta(obj)
	if sts, ok := obj.(*appsv1.StatefulSet); ok {
		o.sts = compactStatefulSet(sts)
	}
	return o, nil
}

func compactStatefulSet(sts *appsv1.StatefulSet) *memberStatefulSet {
	s := &memberStatefulSet{status: sts.Status}
	if sts.Spec.Replicas != nil {
		s.replicas, s.hasReplicas = *sts.Spec.Replicas, true
	}
	// Conditions and the collision count are not read; the revisions are mostly equal.
	s.status.Conditions, s.status.CollisionCount = nil, nil
	s.status.CurrentRevision = unique.Make(s.status.CurrentRevision).Value()
	s.status.UpdateRevision = unique.Make(s.status.UpdateRevision).Value()
	return s
}

// setMeta packs the metadata of from.
func (o *memberObject) setMeta(from metav1.Object) {
	o.name = from.GetName()
	o.namespace = unique.Make(from.GetNamespace())
	o.generation = from.GetGeneration()
	o.packed = 0
	var m memberMeta
	if uid, ok := packUID(string(from.GetUID())); ok {
		o.uid, o.packed = uid, o.packed|packedUID
	} else {
		m.uid = string(from.GetUID())
	}
	if rv, ok := packRV(from.GetResourceVersion()); ok {
		o.rv, o.packed = rv, o.packed|packedRV
	} else {
		m.rv = from.GetResourceVersion()
	}
	annotations := from.GetAnnotations()
	if h, ok := packHash(annotations[urutauv1alpha1.AnnotationAppliedHash]); ok {
		o.hash, o.packed = h, o.packed|packedHash
	}
	m.labels = encodeKept(from.GetLabels(), memberLabels, "")
	skip := ""
	if o.packed&packedHash != 0 {
		skip = urutauv1alpha1.AnnotationAppliedHash
	}
	m.annotations = encodeKept(annotations, memberAnnotations, skip)
	m.owners = encodeOwners(from.GetOwnerReferences())
	o.managers = unique.Make(encodeManagers(from.GetManagedFields()))
	if d := from.GetDeletionTimestamp(); d != nil {
		m.deleted, m.isDeleted = d.Unix(), true
	}
	o.meta = unique.Make(m)
}

// objectMeta unpacks the metadata.
func (o *memberObject) objectMeta() metav1.ObjectMeta {
	m := o.meta.Value()
	out := metav1.ObjectMeta{Name: o.name, Namespace: o.namespace.Value(), UID: types.UID(m.uid), ResourceVersion: m.rv, Generation: o.generation,
		Labels: decodeKept(m.labels, memberLabels), Annotations: decodeKept(m.annotations, memberAnnotations),
		OwnerReferences: decodeOwners(m.owners), ManagedFields: decodeManagers(o.managers.Value())}
	if o.packed&packedUID != 0 {
		out.UID = types.UID(unpackUID(o.uid))
	}
	if o.packed&packedRV != 0 {
		out.ResourceVersion = strconv.FormatUint(o.rv, 10)
	}
	if o.packed&packedHash != 0 {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[urutauv1alpha1.AnnotationAppliedHash] = hex.EncodeToString(o.hash[:])
	}
	if m.isDeleted {
		out.DeletionTimestamp = ptrTime(time.Unix(m.deleted, 0))
	}
	return out
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// into fills out, a typed object of o's kind, with what o keeps.
func (o *memberObject) into(out client.Object) error {
	if k := KindOf(out); k != o.kind {
		return fmt.Errorf("the member cache holds a %s, not a %T", kindGVK[o.kind].Kind, out)
	}
	m := o.objectMeta()
	switch out := out.(type) {
	case *appsv1.StatefulSet:
		*out = appsv1.StatefulSet{ObjectMeta: m}
		if o.sts != nil {
			out.Status = o.sts.status
			if o.sts.hasReplicas {
				r := o.sts.replicas
				out.Spec.Replicas = &r
			}
		}
	case *corev1.ConfigMap:
		*out = corev1.ConfigMap{ObjectMeta: m}
	case *corev1.Service:
		*out = corev1.Service{ObjectMeta: m}
	case *corev1.ServiceAccount:
		*out = corev1.ServiceAccount{ObjectMeta: m}
	case *rbacv1.Role:
		*out = rbacv1.Role{ObjectMeta: m}
	case *rbacv1.RoleBinding:
		*out = rbacv1.RoleBinding{ObjectMeta: m}
	case *policyv1.PodDisruptionBudget:
		*out = policyv1.PodDisruptionBudget{ObjectMeta: m}
	case *networkingv1.NetworkPolicy:
		*out = networkingv1.NetworkPolicy{ObjectMeta: m}
	}
	out.GetObjectKind().SetGroupVersionKind(kindGVK[o.kind])
	return nil
}

// NewTyped is an empty typed object of kind.
func (k Kind) NewTyped() client.Object {
	switch k {
	case memberKindStatefulSet:
		return &appsv1.StatefulSet{}
	case memberKindConfigMap:
		return &corev1.ConfigMap{}
	case memberKindService:
		return &corev1.Service{}
	case memberKindServiceAccount:
		return &corev1.ServiceAccount{}
	case memberKindRole:
		return &rbacv1.Role{}
	case memberKindRoleBinding:
		return &rbacv1.RoleBinding{}
	case memberKindPodDisruptionBudget:
		return &policyv1.PodDisruptionBudget{}
	case memberKindNetworkPolicy:
		return &networkingv1.NetworkPolicy{}
	}
	return nil
}

// label reads one kept label without building the map.
func (o *memberObject) label(key string) (string, bool) {
	d := memberDecoder{s: o.meta.Value().labels}
	for !d.done() {
		i, v := d.byte(), d.str()
		if memberLabels[i] == key {
			return v, true
		}
	}
	return "", false
}

// memberObjectLabels is a memberObject's labels for a selector (labels.Labels).
type memberObjectLabels struct{ o *memberObject }

func (l memberObjectLabels) Has(key string) bool {
	_, ok := l.o.label(key)
	return ok
}

func (l memberObjectLabels) Get(key string) string {
	v, _ := l.o.label(key)
	return v
}

func (l memberObjectLabels) Lookup(key string) (string, bool) { return l.o.label(key) }

// The canonical forms that pack: a UUID in lowercase, a decimal resourceVersion without leading
// zeros, the applied hash (16 lowercase hex digits, contentHash). Anything else is kept as given.

func packUID(s string) (out [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return out, false
	}
	digits := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	b, err := hex.DecodeString(digits)
	if err != nil || hex.EncodeToString(b) != digits {
		return out, false
	}
	copy(out[:], b)
	return out, true
}

func unpackUID(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func packRV(s string) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && strconv.FormatUint(v, 10) == s
}

func packHash(s string) (out [8]byte, ok bool) {
	if len(s) != 16 {
		return out, false
	}
	b, err := hex.DecodeString(s)
	if err != nil || hex.EncodeToString(b) != s {
		return out, false
	}
	copy(out[:], b)
	return out, true
}

// The encodings of memberMeta: strings length-prefixed (uvarint), numbers varints; a kept label
// or annotation is its index in its list and its value.

type memberEncoder []byte

func (e memberEncoder) str(s string) memberEncoder {
	return append(e.uint(uint64(len(s))), s...)
}

func (e memberEncoder) uint(v uint64) memberEncoder {
	for v >= 0x80 {
		e = append(e, byte(v)|0x80)
		v >>= 7
	}
	return append(e, byte(v))
}

func (e memberEncoder) int(v int64) memberEncoder {
	return e.uint(uint64(v<<1) ^ uint64(v>>63))
}

type memberDecoder struct{ s string }

func (d *memberDecoder) done() bool { return len(d.s) == 0 }

func (d *memberDecoder) byte() byte {
	b := d.s[0]
	d.s = d.s[1:]
	return b
}

func (d *memberDecoder) uint() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		b := d.byte()
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
}

func (d *memberDecoder) int() int64 {
	u := d.uint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *memberDecoder) str() string {
	n := d.uint()
	s := d.s[:n]
	d.s = d.s[n:]
	return s
}

func encodeKept(m map[string]string, keys []string, skip string) string {
	var e memberEncoder
	for i, k := range keys {
		if v, ok := m[k]; ok && k != skip {
			e = append(e, byte(i)).str(v)
		}
	}
	return string(e)
}

func decodeKept(s string, keys []string) map[string]string {
	if s == "" {
		return nil
	}
	out := map[string]string{}
	for d := (memberDecoder{s: s}); !d.done(); {
		i := d.byte()
		out[keys[i]] = d.str()
	}
	return out
}

// Owner references: apiVersion, kind, name, uid, and two tri-state flags (0 unset, 1 false, 2 true).
func encodeOwners(refs []metav1.OwnerReference) string {
	var e memberEncoder
	for _, r := range refs {
		e = e.str(r.APIVersion).str(r.Kind).str(r.Name).str(string(r.UID))
		e = append(e, triState(r.Controller), triState(r.BlockOwnerDeletion))
	}
	return string(e)
}

func triState(b *bool) byte {
	switch {
	case b == nil:
		return 0
	case *b:
		return 2
	}
	return 1
}

func fromTriState(b byte) *bool {
	if b == 0 {
		return nil
	}
	v := b == 2
	return &v
}

func decodeOwners(s string) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for d := (memberDecoder{s: s}); !d.done(); {
		r := metav1.OwnerReference{APIVersion: d.str(), Kind: d.str(), Name: d.str(), UID: types.UID(d.str())}
		r.Controller, r.BlockOwnerDeletion = fromTriState(d.byte()), fromTriState(d.byte())
		out = append(out, r)
	}
	return out
}

// Managers: manager, operation, subresource, and the time (a flag, then Unix seconds).
func encodeManagers(fields []metav1.ManagedFieldsEntry) string {
	var e memberEncoder
	for _, f := range fields {
		e = e.str(f.Manager).str(string(f.Operation)).str(f.Subresource)
		if f.Time == nil {
			e = append(e, 0)
			continue
		}
		e = append(e, 1).int(f.Time.Unix())
	}
	return string(e)
}

func decodeManagers(s string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for d := (memberDecoder{s: s}); !d.done(); {
		f := metav1.ManagedFieldsEntry{Manager: d.str(), Operation: metav1.ManagedFieldsOperationType(d.str()), Subresource: d.str()}
		if d.byte() == 1 {
			f.Time = ptrTime(time.Unix(d.int(), 0))
		}
		out = append(out, f)
	}
	return out
}

// memberCache serves the typed objects of Kinds from the memberObjects its
// informers hold, and anything else from the cache it wraps.
type memberCache struct {
	cache.Cache
}

// indexer is the store of the informer of obj's kind, started and synced as the cache's Get
// would.
func (c *memberCache) indexer(ctx context.Context, obj client.Object) (toolscache.Indexer, error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, err
	}
	i, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the member cache's informer of %T has no store", obj)
	}
	return i.GetIndexer(), nil
}

func (c *memberCache) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	kind := KindOf(out)
	if kind == memberKindNone {
		return c.Cache.Get(ctx, key, out, opts...)
	}
	store, err := c.indexer(ctx, out)
	if err != nil {
		return err
	}
	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	item, exists, err := store.GetByKey(storeKey)
	if err != nil {
		return err
	}
	if !exists {
		gvk := kindGVK[kind]
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	o, ok := item.(*memberObject)
	if !ok {
		return fmt.Errorf("the member cache holds a %T for %s", item, storeKey)
	}
	return o.into(out)
}

// List serves a namespace and a label selector (on the kept labels), not field selectors: the
// member caches keep no index.
func (c *memberCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	kind := KindOf(list)
	if kind == memberKindNone {
		return c.Cache.List(ctx, list, opts...)
	}
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		return fmt.Errorf("listing %T from a member cache: field selectors are not served (it keeps no index)", list)
	}
	if lo.Continue != "" {
		return fmt.Errorf("listing %T from a member cache: continue is not supported", list)
	}
	store, err := c.indexer(ctx, kind.NewTyped())
	if err != nil {
		return err
	}
	var items []runtime.Object
	for _, item := range store.List() {
		o, ok := item.(*memberObject)
		if !ok {
			return fmt.Errorf("the member cache holds a %T in the list of %T", item, list)
		}
		if (lo.Namespace != "" && o.namespace.Value() != lo.Namespace) || (lo.LabelSelector != nil && !lo.LabelSelector.Matches(memberObjectLabels{o})) {
			continue
		}
		if lo.Limit > 0 && int64(len(items)) >= lo.Limit {
			break
		}
		out := kind.NewTyped()
		if err := o.into(out); err != nil {
			return err
		}
		items = append(items, out)
	}
	return meta.SetList(list, items)
}

// newMemberInformer is the member caches' informer constructor: no index for the kinds held as
// memberObjects (nothing queries one: memberCache.List scans), the default ones for any other.
func newMemberInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if KindOf(obj) != memberKindNone {
		indexers = toolscache.Indexers{}
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// The client.Object methods of memberObject. The informers hand memberObjects to the event
// handlers, which only read them; a setter changes what the object keeps and ignores the rest.

func (o *memberObject) GetObjectKind() schema.ObjectKind { return o }

func (o *memberObject) GroupVersionKind() schema.GroupVersionKind { return kindGVK[o.kind] }

func (o *memberObject) SetGroupVersionKind(schema.GroupVersionKind) {}

func (o *memberObject) DeepCopyObject() runtime.Object {
	c := *o
	if o.sts != nil {
		s := *o.sts
		c.sts = &s
	}
	return &c
}

func (o *memberObject) edit(f func(m *metav1.ObjectMeta)) {
	m := o.objectMeta()
	f(&m)
	o.setMeta(&m)
}

func (o *memberObject) GetNamespace() string   { return o.namespace.Value() }
func (o *memberObject) SetNamespace(ns string) { o.namespace = unique.Make(ns) }
func (o *memberObject) GetName() string        { return o.name }
func (o *memberObject) SetName(name string)    { o.name = name }
func (o *memberObject) GetGenerateName() string {
	return ""
}
func (o *memberObject) SetGenerateName(string) {}
func (o *memberObject) GetUID() types.UID {
	if o.packed&packedUID != 0 {
		return types.UID(unpackUID(o.uid))
	}
	return types.UID(o.meta.Value().uid)
}
func (o *memberObject) SetUID(uid types.UID) { o.edit(func(m *metav1.ObjectMeta) { m.UID = uid }) }
func (o *memberObject) GetResourceVersion() string {
	if o.packed&packedRV != 0 {
		return strconv.FormatUint(o.rv, 10)
	}
	return o.meta.Value().rv
}
func (o *memberObject) SetResourceVersion(rv string) {
	o.edit(func(m *metav1.ObjectMeta) { m.ResourceVersion = rv })
}
func (o *memberObject) GetGeneration() int64                  { return o.generation }
func (o *memberObject) SetGeneration(g int64)                 { o.generation = g }
func (o *memberObject) GetSelfLink() string                   { return "" }
func (o *memberObject) SetSelfLink(string)                    {}
func (o *memberObject) GetCreationTimestamp() metav1.Time     { return metav1.Time{} }
func (o *memberObject) SetCreationTimestamp(metav1.Time)      {}
func (o *memberObject) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (o *memberObject) SetDeletionGracePeriodSeconds(*int64)  {}
func (o *memberObject) GetFinalizers() []string               { return nil }
func (o *memberObject) SetFinalizers([]string)                {}
func (o *memberObject) GetLabels() map[string]string {
	return decodeKept(o.meta.Value().labels, memberLabels)
}
func (o *memberObject) GetAnnotations() map[string]string { return o.objectMeta().Annotations }
func (o *memberObject) GetOwnerReferences() []metav1.OwnerReference {
	return decodeOwners(o.meta.Value().owners)
}
func (o *memberObject) GetManagedFields() []metav1.ManagedFieldsEntry {
	return decodeManagers(o.managers.Value())
}
func (o *memberObject) GetDeletionTimestamp() *metav1.Time {
	if m := o.meta.Value(); m.isDeleted {
		return ptrTime(time.Unix(m.deleted, 0))
	}
	return nil
}
func (o *memberObject) SetDeletionTimestamp(t *metav1.Time) {
	o.edit(func(m *metav1.ObjectMeta) { m.DeletionTimestamp = t })
}
func (o *memberObject) SetLabels(l map[string]string) {
	o.edit(func(m *metav1.ObjectMeta) { m.Labels = l })
}
func (o *memberObject) SetAnnotations(a map[string]string) {
	o.edit(func(m *metav1.ObjectMeta) { m.Annotations = a })
}
func (o *memberObject) SetOwnerReferences(r []metav1.OwnerReference) {
	o.edit(func(m *metav1.ObjectMeta) { m.OwnerReferences = r })
}
func (o *memberObject) SetManagedFields(f []metav1.ManagedFieldsEntry) {
	o.edit(func(m *metav1.ObjectMeta) { m.ManagedFields = f })
}

// Kinds are the kinds watched in members. Each is cached there, but only our own
// objects (Options). ScaledObjects are not watched: a member may lack the CRD.
func Kinds() []client.Object {
	return []client.Object{
		&appsv1.StatefulSet{}, &corev1.ConfigMap{}, &corev1.Service{}, &corev1.ServiceAccount{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &policyv1.PodDisruptionBudget{}, &networkingv1.NetworkPolicy{},
	}
}

// Lists are empty lists of Kinds.
func Lists() []client.ObjectList {
	return []client.ObjectList{
		&appsv1.StatefulSetList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{}, &corev1.ServiceAccountList{},
		&rbacv1.RoleList{}, &rbacv1.RoleBindingList{}, &policyv1.PodDisruptionBudgetList{}, &networkingv1.NetworkPolicyList{},
	}
}

// MetadataLists are the kinds of Lists as metadata-only lists: a LIST from the member itself
// that needs labels and names only reads a few hundred bytes an object, not whole objects.
func MetadataLists() []client.ObjectList {
	out := make([]client.ObjectList, 0, len(kindGVK)-1)
	for _, gvk := range kindGVK[memberKindStatefulSet:] {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		out = append(out, l)
	}
	return out
}

// Options make a member's cache hold, of each kind the hub writes, every object in
// the few hundred bytes of what the hub reads of it (memberObject): the hub's own
// objects, to tell a no-op apply and a coordinator's readiness, and everyone else's, so that an
// object of the same name that is not the pipeline's is seen before anything is written over it
// (internal/adopt) without a read per object. The cache serves them as typed objects
// (memberCache). Secrets and pods are never cached: they are read live. They also bound the first
// sync of that cache by syncTimeout; hand them to the provider (kubeconfig.Options.ClusterOptions).
//
// Why the bound: the providers wait for a new member's cache to sync and then engage it with our
// controllers, whose watch sources wait, with no deadline, for informers of each kind they watch.
// Those informers start only then, so a member that stops answering between its connection and
// its first LISTs held the provider, and with it every other member's engagement, for as long as
// it did not answer. Here the providers' wait for the cache starts those informers itself and
// gives up after syncTimeout: the provider fails this engagement and tries again later, and an
// engagement that goes ahead finds every informer its sources want already synced.
func Options(syncTimeout time.Duration) cluster.Option {
	return func(o *cluster.Options) {
		o.Cache.DefaultTransform = compactMemberObject
		o.Cache.NewInformer = newMemberInformer
		o.NewCache = func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
			c, err := cache.New(cfg, opts)
			if err != nil {
				return nil, err
			}
			return &warmCache{Cache: &memberCache{Cache: c}, kinds: Kinds(), timeout: syncTimeout, server: cfg.Host}, nil
		}
	}
}

// trimMeta drops the field sets of managedFields and the last-applied annotation of kubectl.
func trimMeta(obj client.Object) {
	mf := obj.GetManagedFields()
	for i := range mf {
		mf[i].FieldsV1 = nil
	}
	obj.SetManagedFields(mf)
	if a := obj.GetAnnotations(); a != nil {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
	}
}

// warmCache starts the informers of kinds on its first WaitForCacheSync, within timeout.
type warmCache struct {
	cache.Cache
	kinds   []client.Object
	timeout time.Duration
	server  string

	mu     sync.Mutex
	warmed bool
}

func (c *warmCache) WaitForCacheSync(ctx context.Context) bool {
	if err := c.warm(ctx); err != nil {
		ctrl.Log.WithName("member-cache").Info("cache did not sync: the provider will try the member again", "server", c.server, "timeout", c.timeout, "error", err.Error())
		return false
	}
	return c.Cache.WaitForCacheSync(ctx)
}

func (c *warmCache) warm(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warmed {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for _, obj := range c.kinds {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("starting the informer of %T: %w", obj, err)
		}
	}
	c.warmed = true
	return nil
}

// GVK is the group, version and kind of k (empty for none); its Kind is the fleet's
// applyRequest.kind.
func (k Kind) GVK() schema.GroupVersionKind { return kindGVK[k] }

// Transform is the member cache's transform (Options): a typed object of a kind the hub writes
// becomes its compact form; any other object only loses its field sets.
func Transform(in any) (any, error) { return compactMemberObject(in) }

// Fill fills the typed object out from from, a compact object as the cache holds it, as the
// cache's Get does; from of any other type is an error.
func Fill(from, out client.Object) error {
	o, ok := from.(*memberObject)
	if !ok {
		return fmt.Errorf("%T is not a member cache object", from)
	}
	return o.into(out)
}
