package memberwork

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/urutau-io/fleet/internal/members"
)

// SharedReads lets the apply jobs of one member share, within Window of each other,
// the two member reads their checks make of a namespace: the namespace itself (its opt-in and
// Pod Security, before a job's first write) and the targets of its ScaledObjects (before a
// coordinator StatefulSet is created). Creating a thousand pipelines in one namespace then costs
// the member a few reads, not two per pipeline. An answer sent at most Window ago (plus the time
// the member took to answer) is as good as one read now for either check: each guards against a
// state that may change the moment after it is read, so a change made within Window before a
// create is no different from one made just after it. A failed read is shared only with the jobs
// that waited for it. The zero value shares nothing: every job reads.
type SharedReads struct {
	Window time.Duration

	namespaces sharedRead[*corev1.Namespace]
	scalers    sharedRead[[]scaleTarget]
}

// DefaultSharedReadWindow is how long the hub shares a member namespace read between jobs.
const DefaultSharedReadWindow = time.Second

// sharedKey is one namespace of one member as one cluster object: a member engaged again (new
// credentials, a new address) reads afresh. Not the *members.Conn: members.Set hands every job
// its own copy.
type sharedKey struct {
	cluster   cluster.Cluster
	member    string
	namespace string
}

func keyOf(conn *members.Conn, ns string) sharedKey {
	return sharedKey{cluster: conn.Cluster, member: conn.Name, namespace: ns}
}

// sharedRead is a read of type T shared per key: the first job reads, those that come while it
// reads wait for its answer, those within the window after its start take it.
type sharedRead[T any] struct {
	mu    sync.Mutex
	reads map[sharedKey]*pendingRead[T]
}

type pendingRead[T any] struct {
	done chan struct{}
	// started is when the read was sent: the answer is no older than that. finished is set, with
	// s.mu held, once val and err are.
	started  time.Time
	finished bool
	val      T
	err      error
}

// get returns key's value read at most window ago, or reads it with read. A job waiting for
// another's read that was called off or ran out of time reads again under its own deadline.
func (s *sharedRead[T]) get(ctx context.Context, window time.Duration, key sharedKey, read func(context.Context) (T, error)) (T, error) {
	if window <= 0 {
		return read(ctx)
	}
	for {
		p, lead := s.pending(key, window)
		if lead {
			return s.lead(ctx, key, p, read)
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		if ctx.Err() == nil && (errors.Is(p.err, context.Canceled) || errors.Is(p.err, context.DeadlineExceeded)) {
			continue // the job that read was called off or ran out of time; this one was not
		}
		return p.val, p.err
	}
}

// pending is key's read in flight or done within window, or a new one this job leads (lead).
// Reads older than window are forgotten on every call, so the map holds only the namespaces read
// lately, of the clusters engaged lately.
func (s *sharedRead[T]) pending(key sharedKey, window time.Duration) (p *pendingRead[T], lead bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.reads {
		if r.finished && now.Sub(r.started) > window {
			delete(s.reads, k)
		}
	}
	if p, ok := s.reads[key]; ok {
		return p, false
	}
	if s.reads == nil {
		s.reads = map[sharedKey]*pendingRead[T]{}
	}
	p = &pendingRead[T]{done: make(chan struct{}), started: now}
	s.reads[key] = p
	return p, true
}

// lead runs read for the jobs that wait on p. A failed read is not kept; neither is one that
// panicked, which the waiters see as an error.
func (s *sharedRead[T]) lead(ctx context.Context, key sharedKey, p *pendingRead[T], read func(context.Context) (T, error)) (val T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading the member: %v", r)
		}
		p.val, p.err = val, err
		s.mu.Lock()
		p.finished = true
		if err != nil && s.reads[key] == p {
			delete(s.reads, key)
		}
		close(p.done)
		s.mu.Unlock()
	}()
	return read(ctx)
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
	return s.namespaces.get(ctx, s.Window, keyOf(conn, ns), read)
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
	return s.scalers.get(ctx, s.Window, keyOf(conn, ns), read)
}
