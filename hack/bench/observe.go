package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/testenv"
)

// placement is one pipeline on one member.
type placement struct{ member, pipeline string }

// memberKinds are the kinds the coordinator workload has in a member (8 objects: 2 ServiceAccounts).
func memberKinds() []client.Object {
	return []client.Object{
		&corev1.ServiceAccount{}, &policyv1.PodDisruptionBudget{}, &rbacv1.Role{}, &rbacv1.RoleBinding{},
		&corev1.Service{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{},
	}
}

// observer watches members (and, for hub runs, the hub's CDCPipelines) and records when every
// expected placement is complete: its 8 objects exist in the member and, when the hub is
// observed, the pipeline's status reports that member applied for the current generation.
// It is event driven: the convergence time is the time of the event that completed the last
// placement, not of a polling tick.
type observer struct {
	mu        sync.Mutex
	seen      map[string]bool // member/kind/name
	objects   map[placement]int
	hubOK     map[placement]bool
	want      map[placement]bool
	satisfied map[placement]bool
	watchHub  bool
	// strict also requires status.observedGeneration == generation (all members applied).
	strict bool
	doneAt time.Time
	done   chan struct{}
	cancel context.CancelFunc
}

// newObserver starts informers in namespace ns of each member (and of the hub, when hub is not
// nil) and returns once they are synced.
func newObserver(ctx context.Context, ns string, members []*testenv.Cluster, hub *testenv.Cluster, want []placement, strict bool) (*observer, error) {
	ctx, cancel := context.WithCancel(ctx)
	o := &observer{
		seen: map[string]bool{}, objects: map[placement]int{}, hubOK: map[placement]bool{},
		want: map[placement]bool{}, satisfied: map[placement]bool{},
		watchHub: hub != nil, strict: strict, done: make(chan struct{}), cancel: cancel,
	}
	for _, p := range want {
		o.want[p] = true
	}
	var caches []cache.Cache
	for _, m := range members {
		c, err := newCache(m, ns)
		if err != nil {
			cancel()
			return nil, err
		}
		for _, obj := range memberKinds() {
			inf, err := c.GetInformer(ctx, obj)
			if err != nil {
				cancel()
				return nil, err
			}
			kind := fmt.Sprintf("%T", obj)
			member := m.Name
			if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc: func(x any) { o.memberObject(member, kind, x) },
			}); err != nil {
				cancel()
				return nil, err
			}
		}
		caches = append(caches, c)
	}
	if hub != nil {
		c, err := newCache(hub, ns)
		if err != nil {
			cancel()
			return nil, err
		}
		inf, err := c.GetInformer(ctx, &urutauv1alpha1.CDCPipeline{})
		if err != nil {
			cancel()
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    o.pipeline,
			UpdateFunc: func(_, x any) { o.pipeline(x) },
		}); err != nil {
			cancel()
			return nil, err
		}
		caches = append(caches, c)
	}
	for _, c := range caches {
		go func() { _ = c.Start(ctx) }()
	}
	for _, c := range caches {
		if !c.WaitForCacheSync(ctx) {
			cancel()
			return nil, fmt.Errorf("observer caches did not sync")
		}
	}
	return o, nil
}

func newCache(c *testenv.Cluster, ns string) (cache.Cache, error) {
	return cache.New(fastConfig(c), cache.Options{
		Scheme:            testenv.Scheme(),
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
}

func (o *observer) memberObject(member, kind string, x any) {
	obj, ok := x.(client.Object)
	if !ok {
		return
	}
	name := obj.GetLabels()[urutauv1alpha1.LabelHubName]
	if name == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	key := member + "/" + kind + "/" + obj.GetName()
	if o.seen[key] {
		return
	}
	o.seen[key] = true
	p := placement{member: member, pipeline: name}
	o.objects[p]++
	o.check(p)
}

func (o *observer) pipeline(x any) {
	p, ok := x.(*urutauv1alpha1.CDCPipeline)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, cs := range p.Status.Clusters {
		pl := placement{member: cs.Name, pipeline: p.Name}
		ok := (cs.Phase == urutauv1alpha1.ClusterApplied || cs.Phase == urutauv1alpha1.ClusterReady) &&
			cs.ObservedGeneration == p.Generation &&
			(!o.strict || p.Status.ObservedGeneration == p.Generation)
		o.hubOK[pl] = ok
		o.check(pl)
	}
}

// check updates one placement; the caller holds mu.
func (o *observer) check(p placement) {
	if !o.want[p] {
		return
	}
	ok := o.objects[p] >= objectsPerPlacement && (!o.watchHub || o.hubOK[p])
	if ok {
		o.satisfied[p] = true
	} else {
		delete(o.satisfied, p)
	}
	if len(o.satisfied) == len(o.want) && o.doneAt.IsZero() {
		o.doneAt = time.Now()
		close(o.done)
	}
}

// wait returns the time from start to convergence, or an error after timeout.
func (o *observer) wait(start time.Time, timeout time.Duration) (time.Duration, error) {
	select {
	case <-o.done:
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.doneAt.Sub(start), nil
	case <-time.After(time.Until(start.Add(timeout))):
		o.mu.Lock()
		defer o.mu.Unlock()
		return 0, fmt.Errorf("not converged after %s: %d/%d placements complete", timeout, len(o.satisfied), len(o.want))
	}
}

func (o *observer) stop() { o.cancel() }
