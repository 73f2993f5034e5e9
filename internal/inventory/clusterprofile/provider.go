package clusterprofile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/inventory"
)

// Options configure a Provider.
type Options struct {
	// Namespace holds the ClusterProfiles and the kubeconfig Secrets they reference. Required.
	Namespace string
	// AccessProviderName is the status.accessProviders entry to read. Default
	// DefaultAccessProviderName.
	AccessProviderName string
	// ClusterOptions are passed to cluster.New for every member (e.g. cache options that scope
	// member caches to the objects the hub writes).
	ClusterOptions []cluster.Option
	// RESTOptions change every member's rest.Config before its cluster is built (as
	// kubeconfig.Options.RESTOptions do).
	RESTOptions []func(*rest.Config) error
	// Policy is what the platform admin allows in member credentials beyond the safe default
	// (proxies, insecure TLS, the server allow-list).
	Policy credentials.Policy
	// Refusals records refused credentials (event on the ClusterProfile, metric, reason); nil
	// records nothing.
	Refusals *inventory.Refusals
	// CacheSyncTimeout bounds the wait for a new member's cache, so one unreachable member cannot
	// hold the provider. Default 30s.
	CacheSyncTimeout time.Duration
}

// Provider engages one member cluster per ClusterProfile in Options.Namespace. Create it with New,
// pass it to mcmanager.New, then call SetupWithManager.
type Provider struct {
	opts Options
	log  logr.Logger

	// Set by SetupWithManager.
	ctx    context.Context // parent of every member's lifetime: the hub's
	hub    client.Reader
	engage multicluster.Aware

	mu       sync.RWMutex // guards members and indexers
	members  map[multicluster.ClusterName]*member
	indexers []index
}

type member struct {
	cluster cluster.Cluster
	access  access
	cancel  context.CancelFunc
}

type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

var _ multicluster.Provider = &Provider{}

// New returns a Provider; it engages nothing until SetupWithManager's controller runs.
func New(opts Options) *Provider {
	if opts.AccessProviderName == "" {
		opts.AccessProviderName = DefaultAccessProviderName
	}
	if opts.CacheSyncTimeout == 0 {
		opts.CacheSyncTimeout = 30 * time.Second
	}
	return &Provider{
		opts:    opts,
		log:     ctrl.Log.WithName("clusterprofile-provider"),
		members: map[multicluster.ClusterName]*member{},
	}
}

// SetupWithManager registers the provider's controller with mgr's local (hub) manager: it watches
// ClusterProfiles and the Secrets they reference in Options.Namespace. Members live until ctx ends
// or they are disengaged. Like every controller it runs only while this hub is the leader.
func (p *Provider) SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error {
	if p.opts.Namespace == "" {
		return errors.New("clusterprofile provider: Options.Namespace is required")
	}
	p.ctx, p.engage, p.hub = ctx, mgr, mgr.GetLocalManager().GetClient()
	inNamespace := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == p.opts.Namespace
	}))
	return ctrl.NewControllerManagedBy(mgr.GetLocalManager()).
		Named("clusterprofile-provider").
		For(&clusterinventoryv1alpha1.ClusterProfile{}, inNamespace).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(p.profilesReferencing), inNamespace).
		// Profiles are independent (the queue never runs one key twice at a time), so a member whose
		// cache is slow to sync does not hold the others.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(p)
}

// Get returns the engaged member named clusterName, or an error wrapping
// multicluster.ErrClusterNotFound.
func (p *Provider) Get(_ context.Context, clusterName multicluster.ClusterName) (cluster.Cluster, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if m, ok := p.members[clusterName]; ok {
		return m.cluster, nil
	}
	return nil, fmt.Errorf("cluster %q: %w", clusterName, multicluster.ErrClusterNotFound)
}

// IndexField adds an index to every engaged member and to every member engaged later.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.indexers = append(p.indexers, index{obj: obj, field: field, extract: extract})
	var errs []error
	for name, m := range p.members {
		if err := m.cluster.GetFieldIndexer().IndexField(ctx, obj, field, extract); err != nil {
			errs = append(errs, fmt.Errorf("indexing %q in cluster %q: %w", field, name, err))
		}
	}
	return errors.Join(errs...)
}

// Reconcile engages, re-engages or disengages the member of one ClusterProfile.
func (p *Provider) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	name := multicluster.ClusterName(req.Name)
	log := p.log.WithValues("cluster", name)

	profile := &clusterinventoryv1alpha1.ClusterProfile{}
	if err := p.hub.Get(ctx, req.NamespacedName, profile); err != nil {
		if apierrors.IsNotFound(err) {
			p.disengage(log, name, "ClusterProfile deleted")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !profile.DeletionTimestamp.IsZero() {
		p.disengage(log, name, "ClusterProfile being deleted")
		return reconcile.Result{}, nil
	}

	acc, err := p.accessFor(ctx, profile)
	if credentials.ReasonOf(err) != "" && p.opts.Refusals != nil {
		p.opts.Refusals.Refuse(profile, string(name), err)
	} else if err == nil && p.opts.Refusals != nil {
		p.opts.Refusals.Accept(string(name))
	}
	if errors.Is(err, errInvalidAccess) {
		// Nothing to retry: a change to the profile or its Secret triggers the next attempt.
		log.Info("Member cannot be reached as configured", "reason", err.Error())
		p.disengage(log, name, "no usable access")
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}

	p.mu.RLock()
	cur, engaged := p.members[name]
	p.mu.RUnlock()
	if engaged && cur.access == acc {
		return reconcile.Result{}, nil
	}
	if engaged {
		// A new cluster rather than a mutated one: caches, clients and engaged controllers all
		// pick up the new access, and the old ones stop.
		p.disengage(log, name, "access changed")
	}
	return reconcile.Result{}, p.engageMember(log, name, acc)
}

// accessFor resolves the profile's access provider entry and the Secret it names.
func (p *Provider) accessFor(ctx context.Context, profile *clusterinventoryv1alpha1.ClusterProfile) (access, error) {
	ap, err := accessProvider(profile, p.opts.AccessProviderName)
	if err != nil {
		return access{}, err
	}
	ref, err := secretRef(ap, profile.Namespace)
	if err != nil {
		return access{}, err
	}
	secret := &corev1.Secret{}
	if err := p.hub.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return access{}, invalid("Secret %s/%s not found", ref.Namespace, ref.Name)
		}
		return access{}, fmt.Errorf("reading Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if err := bound(profile.Name, secret); err != nil {
		return access{}, err
	}
	return accessOf(ap.Cluster, secret, ref, p.opts.Policy)
}

func (p *Provider) engageMember(log logr.Logger, name multicluster.ClusterName, acc access) error {
	cfg := acc.restConfig()
	for _, opt := range p.opts.RESTOptions {
		if err := opt(cfg); err != nil {
			return fmt.Errorf("configuring the client of cluster %q: %w", name, err)
		}
	}
	cl, err := cluster.New(cfg, p.opts.ClusterOptions...)
	if err != nil {
		return fmt.Errorf("creating cluster %q: %w", name, err)
	}
	// Indexes go in before the cache starts: informers refuse new indexers once running. An index
	// added between here and the map insert below would miss this member; indexes are added at
	// setup, before any member is engaged.
	p.mu.RLock()
	for _, idx := range p.indexers {
		if err := cl.GetFieldIndexer().IndexField(p.ctx, idx.obj, idx.field, idx.extract); err != nil {
			p.mu.RUnlock()
			return fmt.Errorf("indexing %q in cluster %q: %w", idx.field, name, err)
		}
	}
	p.mu.RUnlock()

	ctx, cancel := context.WithCancel(p.ctx)
	go func() {
		if err := cl.Start(ctx); err != nil {
			log.Error(err, "Member cluster stopped")
		}
	}()
	syncCtx, cancelSync := context.WithTimeout(ctx, p.opts.CacheSyncTimeout)
	defer cancelSync()
	if !cl.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return fmt.Errorf("cluster %q: cache did not sync within %s", name, p.opts.CacheSyncTimeout)
	}

	p.mu.Lock()
	p.members[name] = &member{cluster: cl, access: acc, cancel: cancel}
	p.mu.Unlock()
	if err := p.engage.Engage(ctx, name, cl); err != nil {
		p.disengage(log, name, "engage failed")
		return fmt.Errorf("engaging cluster %q: %w", name, err)
	}
	log.Info("Engaged member cluster", "server", acc.server)
	return nil
}

// disengage forgets the member and cancels its context, which stops its cluster and every
// controller engaged with it.
func (p *Provider) disengage(log logr.Logger, name multicluster.ClusterName, why string) {
	p.mu.Lock()
	m, ok := p.members[name]
	delete(p.members, name)
	p.mu.Unlock()
	if ok {
		m.cancel()
		log.Info("Disengaged member cluster", "reason", why)
	}
}

// profilesReferencing maps a Secret to the profiles whose access provider names it, so rotating
// credentials re-engages the member.
func (p *Provider) profilesReferencing(ctx context.Context, secret client.Object) []reconcile.Request {
	var list clusterinventoryv1alpha1.ClusterProfileList
	if err := p.hub.List(ctx, &list, client.InNamespace(secret.GetNamespace())); err != nil {
		p.log.Error(err, "Listing ClusterProfiles for a Secret change", "secret", client.ObjectKeyFromObject(secret))
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		ap, err := accessProvider(&list.Items[i], p.opts.AccessProviderName)
		if err != nil {
			continue
		}
		if ref, err := secretRef(ap, list.Items[i].Namespace); err == nil && ref.Name == secret.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
