package ssa

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/urutau-io/fleet/internal/membercache"
)

// MemberClient is a member's client (memberConn.cached) that also sends a Server-Side Apply
// whose body the hub encoded already, and reads the answer as protobuf into a typed object.
//
// Why: client.Apply encodes the apply configuration again and decodes the answer, JSON, into
// it, by reflection; the hub then encoded that answer once more to read its resourceVersion,
// and for the coordinator StatefulSet decoded it again to read its status. At 10x1000 the
// applies were a third of the hub's CPU and JSON decoding a tenth (docs/benchmarks.md). The
// request the member receives is the same: the same bytes, content type, field manager and force.
type MemberClient struct {
	client.Client
	cfg        *rest.Config
	httpClient *http.Client
	codecs     serializer.CodecFactory
	mapper     meta.RESTMapper

	mu      sync.Mutex
	targets map[schema.GroupVersionKind]applyTarget
}

// applyTarget is where the applies of one kind go.
type applyTarget struct {
	rest       rest.Interface
	resource   string
	namespaced bool
}

func NewMemberClient(c client.Client, cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, mapper meta.RESTMapper) *MemberClient {
	return &MemberClient{Client: c, cfg: cfg, httpClient: httpClient, codecs: serializer.NewCodecFactory(scheme), mapper: mapper}
}

func (c *MemberClient) target(gvk schema.GroupVersionKind) (applyTarget, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.targets[gvk]; ok {
		return t, nil
	}
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return applyTarget{}, err
	}
	// Protobuf for the answer: controller-runtime's choice for the built-in kinds.
	rc, err := apiutil.RESTClientForGVK(gvk, false, false, c.cfg, c.codecs, c.httpClient)
	if err != nil {
		return applyTarget{}, err
	}
	t := applyTarget{rest: rc, resource: mapping.Resource.Resource, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	if c.targets == nil {
		c.targets = map[schema.GroupVersionKind]applyTarget{}
	}
	c.targets[gvk] = t
	return t, nil
}

// applyJSON Server-Side Applies body (an apply configuration of gvk, encoded) with force as
// manager, and decodes the answer into into.
func (c *MemberClient) applyJSON(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, body []byte, manager string, into runtime.Object) error {
	t, err := c.target(gvk)
	if err != nil {
		return err
	}
	return t.rest.Patch(types.ApplyYAMLPatchType).
		NamespaceIfScoped(key.Namespace, t.namespaced).
		Resource(t.resource).
		Name(key.Name).
		VersionedParams(&metav1.PatchOptions{FieldManager: manager, Force: ptr.To(true)}, metav1.ParameterCodec).
		Body(body).
		Do(ctx).
		Into(into)
}

// send applies r with writer and returns the resourceVersion of the answer: through applyJSON
// into r.answer when writer is a MemberClient and r is of a typed kind, else with client.Apply,
// which fills r.desired with the answer.
func send(ctx context.Context, writer client.Client, manager string, r *Request) (string, error) {
	if mc, ok := writer.(*MemberClient); ok && r.answer != nil {
		if err := mc.applyJSON(ctx, membercache.KindOf(r.answer).GVK(), r.key, r.desiredJSON, manager, r.answer); err != nil {
			return "", err
		}
		r.answered = true
		return r.answer.GetResourceVersion(), nil
	}
	if err := writer.Apply(ctx, r.desired, client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return "", err
	}
	return resourceVersionOf(r.desired), nil
}

// AppliedStatefulSet is the API server's answer to r, a StatefulSet apply that was sent.
func (r *Request) AppliedStatefulSet() (*appsv1.StatefulSet, error) {
	if sts, ok := r.answer.(*appsv1.StatefulSet); ok && r.answered {
		return sts, nil
	}
	return appliedStatefulSet(r.desired)
}

// newAnswer is an empty typed object of live's kind for the answer of an apply; nil for a kind
// the member cache does not know.
func newAnswer(live client.Object) client.Object {
	return membercache.KindOf(live).NewTyped()
}

// objectKeyOf reads the name and namespace of a typed apply configuration.
func objectKeyOf(ac any) (client.ObjectKey, error) {
	named, ok := ac.(interface {
		GetName() *string
		GetNamespace() *string
	})
	if !ok || named.GetName() == nil {
		return client.ObjectKey{}, fmt.Errorf("%T names no object", ac)
	}
	return client.ObjectKey{Namespace: ptr.Deref(named.GetNamespace(), ""), Name: *named.GetName()}, nil
}

// appliedStatefulSet reads the API server's answer to a StatefulSet apply (the client fills the
// Apply configuration with it).
func appliedStatefulSet(desired runtime.ApplyConfiguration) (*appsv1.StatefulSet, error) {
	ac, ok := desired.(*appsv1ac.StatefulSetApplyConfiguration)
	if !ok {
		return nil, fmt.Errorf("internal error: StatefulSet apply configuration is a %T", desired)
	}
	b, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("reading the applied StatefulSet: %w", err)
	}
	out := &appsv1.StatefulSet{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("reading the applied StatefulSet: %w", err)
	}
	return out, nil
}
