package fleet

import (
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// memberClients are the clients the reconciler uses in one member.
type memberClients struct {
	// cached reads typed objects from the member's cache (which holds only our objects, see
	// MemberClusterOptions) and writes directly; unstructured objects (ScaledObjects) are read live.
	cached client.Client
	// live reads the member's API server (Secrets, ScaledObjects, confirmations).
	live client.Reader
}

// memberClientSet builds and keeps memberClients per engaged cluster.
//
// Why not cl.GetClient() and cl.GetAPIReader(): a provider builds member configs from a
// kubeconfig with client-go's defaults, QPS 5 and burst 10, and controller-runtime gives each
// kind of each client its own such limiter. With that, applying 100 pipelines' StatefulSets to one
// member took 20 s of client-side waiting, most of the convergence time (docs/benchmarks.md).
// These clients leave client-side throttling off when the config does not set QPS, as
// controller-runtime's own config loader does, and rely on the member's API priority and
// fairness; the hub's own concurrency already bounds the load on a member to
// MaxConcurrentReconciles requests in flight (one reconcile applies to a member sequentially). A
// config that sets QPS (a provider's RESTOptions) is kept as it is.
type memberClientSet struct {
	mu sync.Mutex
	m  map[string]memberClientsEntry
}

type memberClientsEntry struct {
	cl      cluster.Cluster
	clients memberClients
}

func (s *memberClientSet) get(member string, cl cluster.Cluster) (memberClients, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[member]; ok && e.cl == cl {
		return e.clients, nil
	}
	cfg := rest.CopyConfig(cl.GetConfig())
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	opts := client.Options{HTTPClient: cl.GetHTTPClient(), Scheme: cl.GetScheme(), Mapper: cl.GetRESTMapper()}
	live, err := client.New(cfg, opts)
	if err != nil {
		return memberClients{}, fmt.Errorf("building a client for cluster %q: %w", member, err)
	}
	opts.Cache = &client.CacheOptions{Reader: cl.GetCache()}
	cached, err := client.New(cfg, opts)
	if err != nil {
		return memberClients{}, fmt.Errorf("building a client for cluster %q: %w", member, err)
	}
	if s.m == nil {
		s.m = map[string]memberClientsEntry{}
	}
	c := memberClients{cached: cached, live: live}
	// A re-engaged member (new kubeconfig) is a new cluster: its entry is replaced.
	s.m[member] = memberClientsEntry{cl: cl, clients: c}
	return c, nil
}

// host is the API server address of member, "" before its first clients.
func (s *memberClientSet) host(member string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[member]; ok {
		return e.cl.GetConfig().Host
	}
	return ""
}
