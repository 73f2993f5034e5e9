package ssa

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/membercache"
)

// Request is one object to Server-Side Apply into a member.
type Request struct {
	// kind names the object in errors, logs and metrics.
	kind string
	// desired is the apply configuration (typed) or, for kinds without one, an
	// unstructuredApplyConfiguration built by client.ApplyConfigurationFromUnstructured.
	desired runtime.ApplyConfiguration
	// desiredJSON is what desired serialises to before the apply; the no-op check compares it.
	desiredJSON []byte
	key         client.ObjectKey
	// live is the object as last read (see Applier.read); newLive makes an empty one of the kind.
	live    client.Object
	newLive func() client.Object
	// extract returns the fields manager owns in live, in the same shape as desired, as JSON.
	extract func(live client.Object, manager string) ([]byte, error)
	// contentHash is the value of AnnotationAppliedHash in desired.
	contentHash string
	// keeps, when set, checks what the content hash cannot vouch for: a field a write can change
	// without leaving a manager behind. kubectl scale --replicas=0 is one: the Scale it sends
	// omits a zero, so the scale subresource records no owner and ours still claims replicas.
	keeps func(live client.Object) bool
	// crossed is set by apply when a change by someone else reached the member watch while the
	// apply was in flight: the pipeline must be reconciled again.
	crossed bool
	// BeforeCreate, when set, is asked before the object is created (it was not in the cache, nor
	// in the member when confirmAbsent), and before a write to an object only the cache showed,
	// which an apply would create if the cache lags: an error stops the apply. The coordinator
	// StatefulSet uses it to confirm the pipeline and the reader lease, since creating it starts a
	// reader where none ran.
	BeforeCreate func(context.Context) error
	// ConfirmAbsent reads the member before beforeCreate, so that a lagging cache does not have
	// BeforeCreate refuse an object that exists. Without it beforeCreate must be harmless for an
	// object that exists, and a create costs no member read.
	ConfirmAbsent bool
	// CacheMayLag reads the object from the member itself, whatever the cache shows: the member's
	// cache may lag (for a while after the member left a request unanswered). It may miss an
	// object of someone else, which would be written over without the guard's check, or still
	// show one deleted while the member was down, which would be taken as applied: a coordinator
	// reported ready that no longer exists.
	CacheMayLag bool
	// answer receives the API server's answer to the apply, for the typed kinds (send); answered
	// tells it does.
	answer   client.Object
	answered bool
	// Guard, when set, is asked before an existing object is written: an error (an object this
	// pipeline does not own) stops the apply.
	Guard func(kind string, existing client.Object) error
	// BeforeWrite, when set, is asked before any write: an error stops the apply.
	BeforeWrite func(context.Context) error
	// starts tells that writing over live starts what BeforeCreate guards, like a create: a
	// StatefulSet at zero replicas (scaled down by a cleanup, or by hand) brought back up.
	starts func(live client.Object) bool
}

// Crossed tells that a change by someone else reached the member watch while the apply was in
// flight: the pipeline must be reconciled again.
func (r *Request) Crossed() bool { return r.crossed }

// Live is the object as last read, nil when it was not.
func (r *Request) Live() client.Object { return r.live }

// applyRecord remembers the last apply of an object: what we sent and the resourceVersion the
// API server answered with.
type applyRecord struct {
	desired         [sha256.Size]byte
	resourceVersion string
}

// Applier is the one Server-Side Apply entry point into members: field manager per member,
// force ownership, and no request at all when the apply would change nothing.
//
// A no-op is recognised two ways. First, the fields our manager owns in the live object
// (managedFields, extracted as client-go's Extract* functions do) equal what we want: this holds
// across restarts. Second, as in cluster-api's SSA cache, we applied these exact bytes before and
// the object's resourceVersion is still the one that apply returned: this covers fields the API
// server normalises (so the extraction never compares equal) without re-sending them forever.
//
// The object is first read from the member's cache, which the member watches keep current, so a
// reconcile that changes nothing makes no request per object. The cache may lag behind the
// member, so it never decides alone that a write is needed for an object we applied before: a
// cached miss or a cached difference on such an object is confirmed with a live read (the
// object we just created or updated may not have reached the cache yet), and only then written.
// An object we never applied and the cache does not hold is applied at once: either it does not
// exist, or it lacks our labels, and both need the apply.
type Applier struct {
	// Base is the base field manager: managers base@<other member> on an object are this hub's
	// under another member name (a renamed inventory entry), released after our apply.
	Base string

	mu   sync.Mutex
	seen map[string]applyRecord
	// pruned holds, per member and pipeline, the wanted ScaledObjects of the last prune there.
	pruned map[string]string
	// echoes recognises the member watch events of our applies (see EchoFilter).
	echoes EchoFilter
}

func (a *Applier) cacheKey(member, kind string, key client.ObjectKey) string {
	return member + "\x00" + kind + "\x00" + key.String()
}

// Apply reads the object through cached (confirming with live when needed, see Applier and look)
// and applies desired with writer unless that is a no-op. It reports whether it wrote; r.live
// holds the object as read (empty when it was not found).
func (a *Applier) Apply(ctx context.Context, cached, live client.Reader, writer client.Client, member, manager string, r *Request) (bool, error) {
	hash := sha256.Sum256(r.desiredJSON)
	found, fresh, err := a.look(ctx, cached, live, member, manager, r, hash)
	if err != nil {
		return false, err
	}
	if found && a.unchanged(member, manager, r, hash) {
		noopApplies.WithLabelValues(member, r.kind).Inc()
		return false, nil
	}
	if found, err = a.guarded(ctx, live, member, r, found, fresh); err != nil {
		return false, err
	}
	// An object only the cache shows may be gone from the member (a cache that lags): the apply
	// would create it, so it is asked like a create; so is one the apply would start.
	if r.BeforeCreate != nil && (!found || !fresh || r.starts != nil && r.starts(r.live)) {
		if err := r.BeforeCreate(ctx); err != nil {
			return false, err
		}
	}
	if r.BeforeWrite != nil {
		if err := r.BeforeWrite(ctx); err != nil {
			return false, err
		}
	}
	key := a.cacheKey(member, r.kind, r.key)
	a.echoes.Begin(key)
	rv, err := send(ctx, writer, manager, r)
	r.crossed = a.echoes.End(key, rv)
	if err != nil {
		return false, fmt.Errorf("applying %s %s to cluster %q: %w", r.kind, r.key, member, err)
	}
	applies.WithLabelValues(member, r.kind).Inc()
	a.remember(key, hash, rv)
	if found {
		if err := a.releaseOthers(ctx, writer, manager, r); err != nil {
			return true, err
		}
	}
	return true, nil
}

// releaseOthers gives up the fields that managers of this hub under other member names (a
// renamed inventory entry) own in the object as read before our apply, so that one manager owns
// the object: an apply of nothing under each such name, as Server-Side Apply's docs prescribe
// for a transfer of ownership. Our apply, just made, already owns every field we want.
func (a *Applier) releaseOthers(ctx context.Context, writer client.Client, manager string, r *Request) error {
	if a.Base == "" {
		return nil
	}
	var ident struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	for _, mf := range r.live.GetManagedFields() {
		if mf.Operation != metav1.ManagedFieldsOperationApply || mf.Subresource != "" || mf.Manager == manager || !strings.HasPrefix(mf.Manager, a.Base+"@") {
			continue
		}
		if ident.Kind == "" {
			if err := json.Unmarshal(r.desiredJSON, &ident); err != nil {
				return err
			}
		}
		empty := &unstructured.Unstructured{}
		empty.SetAPIVersion(ident.APIVersion)
		empty.SetKind(ident.Kind)
		empty.SetNamespace(r.key.Namespace)
		empty.SetName(r.key.Name)
		if err := writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(empty), client.FieldOwner(mf.Manager)); err != nil {
			return fmt.Errorf("releasing the fields %s owned in %s %s: %w", mf.Manager, r.kind, r.key, err)
		}
	}
	return nil
}

// look reads r.key into r.live from the cache, and again from the member itself (fresh) where the
// cache may mislead: always while it may lag (cacheMayLag), a miss before beforeCreate
// (confirmAbsent), and an object we applied with these bytes that the cache does not show as we
// left it (our write may not have reached the cache yet).
func (a *Applier) look(ctx context.Context, cached, live client.Reader, member, manager string, r *Request, hash [sha256.Size]byte) (found, fresh bool, err error) {
	if found, err = a.read(ctx, cached, member, r); err != nil {
		return false, false, err
	}
	confirm := r.CacheMayLag || (!found && r.BeforeCreate != nil && r.ConfirmAbsent)
	if a.appliedBefore(member, r, hash) && (!found || !a.unchanged(member, manager, r, hash)) {
		confirm = true
	}
	if !confirm {
		return found, false, nil
	}
	found, err = a.read(ctx, live, member, r)
	return found, true, err
}

// guarded asks r.Guard about an existing object and returns whether it still exists. A refusal
// read from the cache is confirmed with the member first: a cache that lags (for up to a minute
// after the member was down) may still hold an object since deleted or
// handed over, and refusing on it holds the pipeline back for nothing.
func (a *Applier) guarded(ctx context.Context, live client.Reader, member string, r *Request, found, fresh bool) (bool, error) {
	if !found || r.Guard == nil {
		return found, nil
	}
	err := r.Guard(r.kind, r.live)
	if err == nil || fresh {
		return found, err
	}
	if found, err = a.read(ctx, live, member, r); err != nil || !found {
		return found, err
	}
	return true, r.Guard(r.kind, r.live)
}

// read gets r.key into a fresh r.live; it reports whether the object exists.
func (a *Applier) read(ctx context.Context, reader client.Reader, member string, r *Request) (bool, error) {
	r.live = r.newLive()
	err := reader.Get(ctx, r.key, r.live)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s %s in cluster %q: %w", r.kind, r.key, member, err)
	}
	return true, nil
}

func (a *Applier) unchanged(member, manager string, r *Request, hash [sha256.Size]byte) bool {
	a.mu.Lock()
	rec, ok := a.seen[a.cacheKey(member, r.kind, r.key)]
	a.mu.Unlock()
	if ok && rec.desired == hash && rec.resourceVersion != "" && rec.resourceVersion == r.live.GetResourceVersion() {
		return true
	}
	if holdsApplied(r.live, manager, r.contentHash) && (r.keeps == nil || r.keeps(r.live)) {
		return true
	}
	b, err := r.extract(r.live, manager)
	return err == nil && bytes.Equal(b, r.desiredJSON)
}

// holdsApplied tells, from an object's metadata alone (what the member cache keeps), that it
// holds what manager would apply: the content hash annotation is the one wanted, manager applied
// it, and nobody changed the object after that (another manager's write to it, at or after
// manager's last apply: a change to a field it owns, maybe). Writes to the status subresource
// change nothing we apply; a write through the scale subresource (kubectl scale) changes
// spec.replicas, which we own: a hand scale of the coordinator is a second reader, or none.
func holdsApplied(live client.Object, manager, hash string) bool {
	if live.GetAnnotations()[urutauv1alpha1.AnnotationAppliedHash] != hash {
		return false
	}
	var ours *metav1.ManagedFieldsEntry
	fields := live.GetManagedFields()
	for i, mf := range fields {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" {
			ours = &fields[i]
		}
	}
	if ours == nil || ours.Time == nil {
		return false
	}
	for _, mf := range fields {
		if mf.Subresource == "status" || (mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "") {
			continue
		}
		if mf.Time == nil || !mf.Time.Before(ours.Time) {
			return false
		}
	}
	return true
}

// appliedBefore reports whether this process applied exactly these bytes to this object.
func (a *Applier) appliedBefore(member string, r *Request, hash [sha256.Size]byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.seen[a.cacheKey(member, r.kind, r.key)]
	return ok && rec.desired == hash
}

// remember records what was applied to the object key. It takes the key the echo filter's record
// of the same write holds, so each object the hub applied keeps one key string, not two (the
// applier's records were a quarter of the hub's heap at 10x1000: docs/benchmarks.md).
func (a *Applier) remember(key string, hash [sha256.Size]byte, rv string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]applyRecord{}
	}
	a.seen[key] = applyRecord{desired: hash, resourceVersion: rv}
}

// IsEcho reports whether obj, seen in a member watch, is exactly the result of our last apply
// to it: reconciling it again would find nothing to do. (The coordinator StatefulSet's readiness
// is read from the apply's answer, see applyMember; a status update by its controller is another
// resourceVersion, so not an echo.)
func (a *Applier) IsEcho(member string, obj client.Object) bool {
	kind := kindOf(obj)
	if kind == "" {
		return false
	}
	return a.echoes.IsEcho(a.cacheKey(member, kind, client.ObjectKeyFromObject(obj)), obj.GetResourceVersion())
}

// Forget drops what is remembered of a deleted member object.
func (a *Applier) Forget(member string, obj client.Object) {
	kind := kindOf(obj)
	if kind == "" {
		return
	}
	key := a.cacheKey(member, kind, client.ObjectKeyFromObject(obj))
	a.echoes.Forget(key)
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.seen, key)
}

// kindOf names the kinds the member watches deliver, as Request.kind does.
func kindOf(obj client.Object) string {
	return membercache.KindOf(obj).GVK().Kind
}

// resourceVersionOf reads metadata.resourceVersion from an apply configuration that the client
// filled with the API server's answer.
func resourceVersionOf(ac runtime.ApplyConfiguration) string {
	b, err := json.Marshal(ac)
	if err != nil {
		return ""
	}
	var m struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Metadata.ResourceVersion
}

// newApplyRequest prepares a typed apply configuration: it is annotated with the hash of its
// content (AnnotationAppliedHash, see contentHash), and its JSON is taken now, before the apply
// fills it with the answer.
func newApplyRequest[T client.Object, AC runtime.ApplyConfiguration](kind string, desired AC, annotate func(map[string]string) AC,
	newLive func() T, extract func(T, string) (AC, error)) (*Request, error) {
	plain, err := json.Marshal(desired)
	if err != nil {
		return nil, fmt.Errorf("marshalling %s: %w", kind, err)
	}
	hash := contentHash(plain)
	annotate(map[string]string{urutauv1alpha1.AnnotationAppliedHash: hash})
	b, err := json.Marshal(desired)
	if err != nil {
		return nil, fmt.Errorf("marshalling %s: %w", kind, err)
	}
	key, err := objectKeyOf(desired)
	if err != nil {
		return nil, fmt.Errorf("reading the name of %s: %w", kind, err)
	}
	return &Request{
		kind:        kind,
		desired:     desired,
		desiredJSON: b,
		contentHash: hash,
		key:         key,
		answer:      newAnswer(newLive()),
		live:        newLive(),
		newLive:     func() client.Object { return newLive() },
		extract: func(o client.Object, m string) ([]byte, error) {
			owned, err := extract(o.(T), m)
			if err != nil {
				return nil, err
			}
			return json.Marshal(owned)
		},
	}, nil
}

// contentHash is what AnnotationAppliedHash holds: a hash of an object's apply configuration
// without that annotation, so that a member cache that keeps only metadata can tell that the
// object holds what the hub would apply.
func contentHash(applyJSON []byte) string {
	sum := sha256.Sum256(applyJSON)
	return hex.EncodeToString(sum[:])[:16]
}

// The typed requests, one per kind the renderer produces. Each extract is client-go's.

func ServiceAccount(ac *corev1ac.ServiceAccountApplyConfiguration) (*Request, error) {
	return newApplyRequest("ServiceAccount", ac, ac.WithAnnotations, func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} }, corev1ac.ExtractServiceAccount)
}

func PodDisruptionBudget(ac *policyv1ac.PodDisruptionBudgetApplyConfiguration) (*Request, error) {
	return newApplyRequest("PodDisruptionBudget", ac, ac.WithAnnotations, func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} }, policyv1ac.ExtractPodDisruptionBudget)
}

func Role(ac *rbacv1ac.RoleApplyConfiguration) (*Request, error) {
	return newApplyRequest("Role", ac, ac.WithAnnotations, func() *rbacv1.Role { return &rbacv1.Role{} }, rbacv1ac.ExtractRole)
}

func RoleBinding(ac *rbacv1ac.RoleBindingApplyConfiguration) (*Request, error) {
	return newApplyRequest("RoleBinding", ac, ac.WithAnnotations, func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} }, rbacv1ac.ExtractRoleBinding)
}

func Service(ac *corev1ac.ServiceApplyConfiguration) (*Request, error) {
	return newApplyRequest("Service", ac, ac.WithAnnotations, func() *corev1.Service { return &corev1.Service{} }, corev1ac.ExtractService)
}

func ConfigMap(ac *corev1ac.ConfigMapApplyConfiguration) (*Request, error) {
	return newApplyRequest("ConfigMap", ac, ac.WithAnnotations, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, corev1ac.ExtractConfigMap)
}

func NetworkPolicy(ac *networkingv1ac.NetworkPolicyApplyConfiguration) (*Request, error) {
	return newApplyRequest("NetworkPolicy", ac, ac.WithAnnotations, func() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} }, networkingv1ac.ExtractNetworkPolicy)
}

func StatefulSet(ac *appsv1ac.StatefulSetApplyConfiguration) (*Request, error) {
	r, err := newApplyRequest("StatefulSet", ac, ac.WithAnnotations, func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }, appsv1ac.ExtractStatefulSet)
	if err != nil || ac.Spec == nil || ac.Spec.Replicas == nil {
		return r, err
	}
	want := *ac.Spec.Replicas
	r.keeps = func(live client.Object) bool {
		sts, ok := live.(*appsv1.StatefulSet)
		return ok && sts.Spec.Replicas != nil && *sts.Spec.Replicas == want
	}
	if want > 0 {
		r.starts = func(live client.Object) bool {
			sts, ok := live.(*appsv1.StatefulSet)
			return ok && sts.Spec.Replicas != nil && *sts.Spec.Replicas == 0
		}
	}
	return r, nil
}

// Unstructured prepares an object of a kind without a typed apply configuration (KEDA's
// ScaledObject). The typed object is converted to unstructured without status and
// creationTimestamp, the zero values a typed struct would otherwise send as "set"; every other
// field of the KEDA spec we render is a pointer or omitempty, so nothing else is sent that we
// did not mean.
//
// The no-op check extracts our managed fields from the live object with a deduced schema (the
// client has no OpenAPI model of the CRD): maps are walked, lists are atomic, which matches how
// the CRD's structural schema stores the lists we set (triggers). Any shape the deduction gets
// wrong only costs a no-op apply, which the resourceVersion record then suppresses.
func Unstructured(kind string, obj runtime.Object) (*Request, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s to unstructured: %w", kind, err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	u := &unstructured.Unstructured{Object: m}
	plain, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshalling %s: %w", kind, err)
	}
	hash := contentHash(plain)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[urutauv1alpha1.AnnotationAppliedHash] = hash
	u.SetAnnotations(annotations)
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("marshalling %s: %w", kind, err)
	}
	gvk := u.GroupVersionKind()
	newLive := func() client.Object {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		return live
	}
	return &Request{
		kind:        kind,
		desired:     client.ApplyConfigurationFromUnstructured(u),
		desiredJSON: b,
		contentHash: hash,
		key:         client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()},
		live:        newLive(),
		newLive:     newLive,
		extract: func(o client.Object, manager string) ([]byte, error) {
			owned, err := extractUnstructured(o.(*unstructured.Unstructured), manager)
			if err != nil {
				return nil, err
			}
			return json.Marshal(owned)
		},
	}, nil
}

// extractUnstructured is managedfields.ExtractInto for a deduced type, returning the owned
// fields plus the identity (apiVersion, kind, name, namespace) as the typed Extract* functions do.
func extractUnstructured(live *unstructured.Unstructured, manager string) (map[string]any, error) {
	var entry *fieldpath.Set
	for _, mf := range live.GetManagedFields() {
		if mf.Manager != manager || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			return nil, err
		}
		entry = s
		break
	}
	out := map[string]any{}
	if entry != nil {
		tv, err := typed.DeducedParseableType.FromUnstructured(live.Object)
		if err != nil {
			return nil, err
		}
		if m, ok := tv.ExtractItems(entry.Leaves()).AsValue().Unstructured().(map[string]any); ok {
			out = m
		}
	}
	out["apiVersion"] = live.GetAPIVersion()
	out["kind"] = live.GetKind()
	md, _ := out["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["name"] = live.GetName()
	md["namespace"] = live.GetNamespace()
	out["metadata"] = md
	return out, nil
}

// PrunedFor tells whether this process pruned pipeline uid's ScaledObjects in member with
// exactly this wanted set.
func (a *Applier) PrunedFor(member string, uid types.UID, wanted string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.pruned[member+"\x00"+string(uid)]
	return ok && got == wanted
}

func (a *Applier) RecordPruned(member string, uid types.UID, wanted string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pruned == nil {
		a.pruned = map[string]string{}
	}
	a.pruned[member+"\x00"+string(uid)] = wanted
}

// ForgetMember drops what is remembered of every object of member, which left the inventory.
func (a *Applier) ForgetMember(member string) {
	prefix := member + "\x00"
	a.mu.Lock()
	for k := range a.seen {
		if strings.HasPrefix(k, prefix) {
			delete(a.seen, k)
		}
	}
	for k := range a.pruned {
		if strings.HasPrefix(k, prefix) {
			delete(a.pruned, k)
		}
	}
	a.mu.Unlock()
	a.echoes.ForgetPrefix(prefix)
}
