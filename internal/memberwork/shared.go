package memberwork

import (
	"context"
	"errors"
	"sync"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/members"
)

// SharedReads lets the apply jobs of one member connection share, within Window of each other,
// the two member reads their checks make of a namespace: the namespace itself (its opt-in and
// Pod Security, before a job's first write) and the targets of its ScaledObjects (before a
// coordinator StatefulSet is created). Creating a thousand pipelines in one namespace then costs
// the member a few reads, not two per pipeline. An answer at most Window old is as good as one
// read now for either check: each guards against a state that may change the moment after it is
// read, so a change made within Window before a create is no different from one made just after
// it. A failed read is shared only with the jobs that waited for it. The zero value shares
// nothing: every job reads.
type SharedReads struct {
	Window time.Duration

	namespaces sharedRead[*corev1.Namespace]
	scalers    sharedRead[[]scaleTarget]
}

// DefaultSharedReadWindow is how long the hub shares a member namespace read between jobs.
const DefaultSharedReadWindow = time.Second

// sharedKey is one namespace of one member connection: a connection made again (new
// credentials, a new address) reads afresh.
type sharedKey struct {
	conn      *members.Conn
	namespace string
}

// sharedRead is a read of type T shared per key: the first job reads, those that come while it
// reads wait for its answer, those within the window after take it.
type sharedRead[T any] struct {
	mu    sync.Mutex
	reads map[sharedKey]*pendingRead[T]
}

type pendingRead[T any] struct {
	done chan struct{}
	at   time.Time
	val  T
	err  error
}

// get returns key's value read at most window ago, or reads it with read.
func (s *sharedRead[T]) get(ctx context.Context, window time.Duration, key sharedKey, read func(context.Context) (T, error)) (T, error) {
	if window <= 0 {
		return read(ctx)
	}
	now := time.Now()
	s.mu.Lock()
	p, ok := s.reads[key]
	if !ok || (!p.at.IsZero() && now.Sub(p.at) > window) {
		s.forgetOld(now, window)
		p = &pendingRead[T]{done: make(chan struct{})}
		if s.reads == nil {
			s.reads = map[sharedKey]*pendingRead[T]{}
		}
		s.reads[key] = p
		s.mu.Unlock()
		p.val, p.err = read(ctx)
		s.mu.Lock()
		p.at = time.Now()
		if p.err != nil {
			delete(s.reads, key)
		}
		s.mu.Unlock()
		close(p.done)
		return p.val, p.err
	}
	s.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	if errors.Is(p.err, context.Canceled) && ctx.Err() == nil {
		// The job that read was called off; this one was not.
		return read(ctx)
	}
	return p.val, p.err
}

// forgetOld drops the reads older than window, so that the map holds only the namespaces read
// lately (s.mu held).
func (s *sharedRead[T]) forgetOld(now time.Time, window time.Duration) {
	for k, p := range s.reads {
		if !p.at.IsZero() && now.Sub(p.at) > window {
			delete(s.reads, k)
		}
	}
}

// namespace reads member namespace ns from conn's API server.
func (s *SharedReads) namespace(ctx context.Context, conn *members.Conn, ns string) (*corev1.Namespace, error) {
	read := func(ctx context.Context) (*corev1.Namespace, error) {
		n := &corev1.Namespace{}
		if err := conn.Live.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return nil, err
		}
		return n, nil
	}
	if s == nil {
		return read(ctx)
	}
	return s.namespaces.get(ctx, s.Window, sharedKey{conn, ns}, read)
}

// scaleTarget is what a ScaledObject scales: the hub keeps no more of it.
type scaleTarget struct{ name, kind, target string }

// scaleTargets lists the ScaledObjects of member namespace ns from conn's API server; none
// when the member lacks KEDA's kinds.
func (s *SharedReads) scaleTargets(ctx context.Context, conn *members.Conn, ns string) ([]scaleTarget, error) {
	read := func(ctx context.Context) ([]scaleTarget, error) {
		// Unstructured: the hub's member clients know KEDA's kinds only as what they apply.
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kedav1alpha1.SchemeGroupVersion.WithKind("ScaledObjectList"))
		err := conn.Live.List(ctx, list, client.InNamespace(ns))
		switch {
		case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, err
		}
		out := make([]scaleTarget, 0, len(list.Items))
		for _, so := range list.Items {
			target, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", "name")
			kind, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", "kind")
			out = append(out, scaleTarget{name: so.GetName(), kind: kind, target: target})
		}
		return out, nil
	}
	if s == nil {
		return read(ctx)
	}
	return s.scalers.get(ctx, s.Window, sharedKey{conn, ns}, read)
}
