package members

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Conn is how the hub reaches one member cluster in one piece of work.
type Conn struct {
	Name    string
	Cluster cluster.Cluster
	// Cached reads typed objects from the member's cache (the metadata of every object of the
	// kinds we write, see membercache.Options) and writes directly; live reads the member's API
	// server.
	Cached client.Client
	Live   client.Reader
}

// Host is the member's API server address, "" without a connection.
func (c *Conn) Host() string {
	if c.Cluster == nil {
		return ""
	}
	return c.Cluster.GetConfig().Host
}

// Set is the hub's state of each member cluster, shared by the controllers: its connection
// and clients, its identity, whether it answers (health), and the breaker that keeps a
// member that does not answer, or fails, from holding anyone else. Everything about a member
// goes when it leaves the inventory (forget).
type Set struct {
	Manager mcmanager.Manager
	// Refusals, when set, tells why a member's credentials were refused.
	Refusals interface{ Refused(cluster string) error }
	// Writer, when set, wraps a member's cached client into the one that writes to it (the
	// hub's applier sends Server-Side Applies its own way, internal/ssa).
	Writer func(c client.Client, cfg *rest.Config, opts client.Options) client.Client
	// Liveness follows whether members answer.
	Liveness *Liveness

	mu      sync.Mutex
	members map[string]*memberEntry

	Breaker Breaker
}

type memberEntry struct {
	cl      cluster.Cluster
	clients Conn
	// id is the identity read from cl; "" until read. A new cluster object (the provider
	// engaged the member again, e.g. with a new kubeconfig) is read again.
	id string
	// checked is the identity the last health check read, kept across cluster objects: a
	// member engaged again (a new kubeconfig) that reaches another cluster is a change even
	// though its new cluster object starts with no identity read.
	checked string
	health  Health
}

// Health is what the last check of a member found.
type Health struct {
	Checked bool
	Up      bool
	// Engaged is whether the provider gave the hub a connection to the member.
	Engaged bool
	// Message says why it is down.
	Message string
	// LastAnswer is when it last answered a check.
	LastAnswer time.Time
	// DownSince is when a check first found it down, while it stays down.
	DownSince time.Time
}

// LostSince is when the member was last known answering: its last answer, or, when this hub
// never saw one, when it was first found down. Zero while it answers.
func (h Health) LostSince() time.Time {
	switch {
	case !h.Checked || h.Up:
		return time.Time{}
	case !h.LastAnswer.IsZero():
		return h.LastAnswer
	}
	return h.DownSince
}

// engageWait bounds how long one member's work waits for the provider to engage a member the
// inventory lists.
//
// Why (found by test/faults): the provider engages members from its own controller, which starts
// together with ours when the hub starts or a replica becomes the leader. A pipeline reconciled
// before its members are engaged saw them "not engaged" and waited a whole retry interval.
// Engagement takes well under a second, so a short wait closes the race; a member that never
// engages (a kubeconfig that does not parse) costs this wait once per retry, in its own goroutine.
const engageWait = 2 * time.Second

// Conn returns the connection to member, waiting up to engageWait (within ctx) while the
// provider has not engaged it.
func (s *Set) Conn(ctx context.Context, member string) (*Conn, error) {
	deadline := time.Now().Add(engageWait)
	for {
		cl, err := s.Manager.GetCluster(ctx, multicluster.ClusterName(member))
		if err == nil {
			return s.ClientsFor(member, cl)
		}
		if !errors.Is(err, multicluster.ErrClusterNotFound) || time.Now().After(deadline) {
			// Not engaged: down until a health check finds it engaged and answering, so that
			// the reconciles that follow do not wait for it again.
			msg := s.NotEngagedMessage(member, err)
			s.SetHealth(member, Health{Checked: true, Message: msg})
			memberEngaged.WithLabelValues(member).Set(0)
			return nil, fmt.Errorf("cluster %q %w: %s", member, ErrDown, msg)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster %q: %w", member, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ClientsFor builds and keeps the clients of member's current cluster object.
//
// Why not cl.GetClient() and cl.GetAPIReader(): a provider builds member configs from a
// kubeconfig with client-go's defaults, QPS 5 and burst 10, and controller-runtime gives each kind
// of each client its own such limiter. With that, applying 100 pipelines' StatefulSets to one
// member took 20 s of client-side waiting (docs/benchmarks.md). These clients leave client-side
// throttling off when the config does not set QPS, as controller-runtime's own config loader
// does, and rely on the member's API priority and fairness.
func (s *Set) ClientsFor(member string, cl cluster.Cluster) (*Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.members[member]; ok && e.cl == cl {
		c := e.clients
		return &c, nil
	}
	cfg := rest.CopyConfig(cl.GetConfig())
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	opts := client.Options{HTTPClient: cl.GetHTTPClient(), Scheme: cl.GetScheme(), Mapper: cl.GetRESTMapper()}
	live, err := client.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building a client for cluster %q: %w", member, err)
	}
	opts.Cache = &client.CacheOptions{Reader: cl.GetCache()}
	withCache, err := client.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building a client for cluster %q: %w", member, err)
	}
	cached := withCache
	if s.Writer != nil {
		cached = s.Writer(withCache, cfg, opts)
	}
	if s.members == nil {
		s.members = map[string]*memberEntry{}
	}
	e := s.members[member]
	if e == nil {
		e = &memberEntry{}
		s.members[member] = e
	}
	// A re-engaged member is a new cluster object: its identity is read again.
	e.cl, e.id = cl, ""
	e.clients = Conn{Name: member, Cluster: cl, Cached: cached, Live: live}
	c := e.clients
	return &c, nil
}

// Identity is the member's Identity: the UID of its kube-system namespace, read once per cluster
// object and kept.
func (s *Set) Identity(ctx context.Context, c *Conn) (string, error) {
	s.mu.Lock()
	if e := s.members[c.Name]; e != nil && e.cl == c.Cluster && e.id != "" {
		id := e.id
		s.mu.Unlock()
		return id, nil
	}
	s.mu.Unlock()
	id, err := ReadIdentity(ctx, c.Live)
	if err != nil {
		return "", fmt.Errorf("reading the identity of cluster %q (namespace kube-system): %w", c.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.members[c.Name]; e != nil && e.cl == c.Cluster {
		e.id = id
	}
	return id, nil
}

// ErrOtherCluster is a connection that reaches another cluster than the one decided on: the
// member's kubeconfig changed in between. The work is not done; the next reconcile decides again.
var ErrOtherCluster = errors.New("now reaches another cluster")

// SameCluster checks that connection c reaches the cluster of identity id.
func (s *Set) SameCluster(ctx context.Context, c *Conn, id string) error {
	got, err := s.Identity(ctx, c)
	switch {
	case err != nil:
		return err
	case got != id:
		return fmt.Errorf("cluster %q %w (identity %s, not %s)", c.Name, ErrOtherCluster, got, id)
	}
	return nil
}

// ReadIdentity reads a cluster's identity: one GET.
func ReadIdentity(ctx context.Context, r client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: "kube-system"}, ns); err != nil {
		return "", err
	}
	if ns.UID == "" {
		return "", errors.New("namespace kube-system has no UID")
	}
	return string(ns.UID), nil
}

// SetIdentity records the identity a health check read through cluster object cl, and reports
// whether it differs from the one the check before read, whichever cluster object that check
// used. It is member's known identity only while cl is still its current cluster object: a check
// that read the old cluster while the provider engaged a new one must not vouch for the new one.
func (s *Set) SetIdentity(member string, cl cluster.Cluster, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.members[member]
	if e == nil {
		return false
	}
	changed := e.checked != "" && e.checked != id
	e.checked = id
	if e.cl == cl {
		e.id = id
	}
	return changed
}

// KnownIdentity is the identity last read from member, "" when none was.
func (s *Set) KnownIdentity(member string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.members[member]; e != nil {
		return e.id
	}
	return ""
}

// Host is the API server address of member, "" before its first connection.
func (s *Set) Host(member string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.members[member]; e != nil && e.cl != nil {
		return e.cl.GetConfig().Host
	}
	return ""
}

// SetHealth records a check of member and reports whether what it found changed.
func (s *Set) SetHealth(member string, h Health) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members == nil {
		s.members = map[string]*memberEntry{}
	}
	e := s.members[member]
	if e == nil {
		e = &memberEntry{}
		s.members[member] = e
	}
	old := e.health
	if !h.Up {
		h.LastAnswer, h.DownSince = old.LastAnswer, old.DownSince
		if old.Up || !old.Checked || h.DownSince.IsZero() {
			h.DownSince = time.Now()
		}
	}
	e.health = h
	up := 0.0
	if h.Up {
		up = 1
	}
	memberUp.WithLabelValues(member).Set(up)
	return !old.Checked || old.Up != h.Up || old.Engaged != h.Engaged || old.Message != h.Message
}

// Health is what the last check of member found.
func (s *Set) Health(member string) Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.members[member]; e != nil {
		return e.health
	}
	return Health{}
}

// Down tells whether the last check of member found it not answering; the message says why.
func (s *Set) Down(member string) (bool, string) {
	h := s.Health(member)
	return h.Checked && !h.Up, h.Message
}

// Forget drops everything kept about member, which left the inventory: clients, identity,
// health, breaker state, and the metric series of this package.
func (s *Set) Forget(member string) {
	s.mu.Lock()
	delete(s.members, member)
	s.mu.Unlock()
	s.Breaker.Forget(member)
	forgetSeries(member)
}

// NotEngagedMessage says why the hub has no connection to member: its credentials were refused
// (the reason), or the provider could not engage it.
func (s *Set) NotEngagedMessage(member string, err error) string {
	if s.Refusals != nil {
		if refused := s.Refusals.Refused(member); refused != nil {
			return fmt.Sprintf("the hub does not use the credentials of cluster %q: %v", member, refused)
		}
	}
	return notEngagedMessage(member, err)
}
