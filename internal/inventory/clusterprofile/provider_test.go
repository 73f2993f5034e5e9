package clusterprofile_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/inventory/clusterprofile"
	"github.com/urutau-io/fleet/internal/inventory/inventorytest"
	"github.com/urutau-io/fleet/internal/testenv"
)

const (
	ns         = "urutau-system"
	memberName = "member-a"
	secretName = "member-a-kubeconfig"
	managedBy  = "app.kubernetes.io/managed-by"
)

// TestProvider runs the provider in a multicluster manager on a real hub, with one real member:
// engage from a profile, re-engage on access changes (profile and Secret), disengage on deletion.
func TestProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real API servers; runs without -short")
	}
	g := NewWithT(t)
	ctx := t.Context()
	clusters, err := testenv.Start(ctx, "hub", "member")
	g.Expect(err).NotTo(HaveOccurred())
	hub, memberEnv := clusters[0], clusters[1]
	t.Cleanup(func() { _ = hub.Stop(); _ = memberEnv.Stop() })
	g.Expect(inventorytest.InstallClusterProfileCRD(ctx, hub.Config)).To(Succeed())
	hubClient, err := client.New(hub.Config, client.Options{Scheme: inventorytest.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	kubeconfig, err := memberEnv.Kubeconfig()
	g.Expect(err).NotTo(HaveOccurred())
	// Bound to its profile by label: a profile may use only its own Secret.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName, Labels: map[string]string{clusterprofile.BoundProfileLabel: memberName}},
		Data:       map[string][]byte{clusterprofile.DefaultSecretKey: kubeconfig},
	}
	g.Expect(hubClient.Create(ctx, secret)).To(Succeed())
	profile := &clusterinventoryv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: memberName},
		Spec:       clusterinventoryv1alpha1.ClusterProfileSpec{ClusterManager: clusterinventoryv1alpha1.ClusterManager{Name: "test"}},
	}
	g.Expect(hubClient.Create(ctx, profile)).To(Succeed())
	setServer := func(server string) {
		t.Helper()
		profile.Status.AccessProviders = []clusterinventoryv1alpha1.AccessProvider{
			clusterprofile.NewAccessProvider(server, memberEnv.Config.CAData, clusterprofile.SecretRef{Name: secretName}),
		}
		g.Expect(hubClient.Status().Update(ctx, profile)).To(Succeed())
	}
	setServer(memberEnv.Config.Host)

	// Member caches see only what the hub manages, as cmd/hub configures them; REST options mark
	// each member's config.
	refusals := &inventory.Refusals{}
	provider := clusterprofile.New(clusterprofile.Options{
		Namespace: ns,
		Refusals:  refusals,
		RESTOptions: []func(*rest.Config) error{func(cfg *rest.Config) error {
			cfg.UserAgent = "rest-option-applied"
			return nil
		}},
		ClusterOptions: []cluster.Option{func(o *cluster.Options) {
			o.Scheme = inventorytest.Scheme()
			o.Cache.DefaultLabelSelector = labels.SelectorFromSet(labels.Set{managedBy: "urutau-fleet"})
		}},
	})
	mgr, err := mcmanager.New(hub.Config, provider, manager.Options{
		Scheme:                 inventorytest.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: new(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	refusals.Recorder = mgr.GetLocalManager().GetEventRecorder("clusterprofile-provider")
	seen := &engagements{}
	g.Expect(mgr.Add(seen)).To(Succeed())
	g.Expect(provider.SetupWithManager(ctx, mgr)).To(Succeed())
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stopMgr()
		select {
		case err := <-mgrDone:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop within 30s")
		}
	})

	var first engagement
	t.Run("engages a member from its profile", func(t *testing.T) {
		g := NewWithT(t)
		first = seen.waitFor(g, memberName, nil)
		cl := getMember(g, provider)
		g.Expect(cl).To(BeIdenticalTo(first.cluster))
		g.Expect(cl.GetConfig().UserAgent).To(Equal("rest-option-applied"), "the REST options were not applied")
		reachMember(ctx, g, cl, "engaged")

		// The caller's cluster options apply: an object the hub does not manage stays out of the
		// member's cache.
		g.Expect(memberEnv.Client.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "foreign"},
		})).To(Succeed())
		g.Consistently(func(g Gomega) {
			var list corev1.ConfigMapList
			g.Expect(cl.GetClient().List(ctx, &list, client.InNamespace("default"))).To(Succeed())
			for _, cm := range list.Items {
				g.Expect(cm.Name).NotTo(Equal("foreign"))
			}
		}, time.Second, 100*time.Millisecond).Should(Succeed())
	})

	t.Run("re-engages when the profile's access changes", func(t *testing.T) {
		g := NewWithT(t)
		// Same API server, another address its certificate covers: a different access.
		setServer(strings.Replace(memberEnv.Config.Host, "127.0.0.1", "localhost", 1))
		second := seen.waitFor(g, memberName, first.cluster)
		g.Eventually(first.ctx.Done()).Should(BeClosed(), "the old engagement is cancelled")
		cl := getMember(g, provider)
		g.Expect(cl).To(BeIdenticalTo(second.cluster))
		g.Expect(cl.GetConfig().Host).To(ContainSubstring("localhost"))
		reachMember(ctx, g, cl, "re-engaged")
		first = second
	})

	t.Run("disengages when the Secret loses its credentials, re-engages when they return", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		secret.Data[clusterprofile.DefaultSecretKey] = []byte("apiVersion: v1\nkind: Config\n")
		g.Expect(hubClient.Update(ctx, secret)).To(Succeed())
		g.Eventually(first.ctx.Done()).Should(BeClosed())
		expectNotFound(g, provider)

		secret.Data[clusterprofile.DefaultSecretKey] = kubeconfig
		g.Expect(hubClient.Update(ctx, secret)).To(Succeed())
		third := seen.waitFor(g, memberName, first.cluster)
		reachMember(ctx, g, getMember(g, provider), "restored")
		first = third
	})

	t.Run("refuses profiles that point at another member's Secret or at a server of their choosing", func(t *testing.T) {
		attacks := []struct {
			profile string
			ap      clusterinventoryv1alpha1.AccessProvider
			reason  credentials.Reason
		}{
			{"member-x", clusterprofile.NewAccessProvider(memberEnv.Config.Host, memberEnv.Config.CAData, clusterprofile.SecretRef{Name: secretName}), credentials.ReasonUnboundSecret},
			{"member-y", clusterprofile.NewAccessProvider("https://attacker.example", nil, clusterprofile.SecretRef{Name: "member-y"}), credentials.ReasonNoCA},
			{"member-z", func() clusterinventoryv1alpha1.AccessProvider {
				ap := clusterprofile.NewAccessProvider(memberEnv.Config.Host, memberEnv.Config.CAData, clusterprofile.SecretRef{Name: "member-z"})
				ap.Cluster.ProxyURL = "http://attacker.example:3128"
				return ap
			}(), credentials.ReasonProxy},
		}
		for _, a := range attacks {
			g := NewWithT(t)
			if a.reason != credentials.ReasonUnboundSecret { // their own, bound Secret holding valid credentials
				g.Expect(hubClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.profile},
					Data: map[string][]byte{clusterprofile.DefaultSecretKey: kubeconfig}})).To(Succeed())
			}
			p := &clusterinventoryv1alpha1.ClusterProfile{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.profile},
				Spec:       clusterinventoryv1alpha1.ClusterProfileSpec{ClusterManager: clusterinventoryv1alpha1.ClusterManager{Name: "test"}},
			}
			g.Expect(hubClient.Create(ctx, p)).To(Succeed())
			p.Status.AccessProviders = []clusterinventoryv1alpha1.AccessProvider{a.ap}
			g.Expect(hubClient.Status().Update(ctx, p)).To(Succeed())

			g.Eventually(func() credentials.Reason { return credentials.ReasonOf(refusals.Refused(a.profile)) }).
				WithTimeout(30*time.Second).Should(Equal(a.reason), "profile %s", a.profile)
			g.Eventually(func(g Gomega) {
				var list eventsv1.EventList
				g.Expect(hubClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				var notes []string
				for _, e := range list.Items {
					if e.Regarding.Name == a.profile && e.Reason == inventory.EventCredentialsRefused {
						notes = append(notes, e.Note)
					}
				}
				g.Expect(notes).To(ContainElement(ContainSubstring(string(a.reason))))
			}).WithTimeout(30*time.Second).Should(Succeed(), "no CredentialsRefused event on %s", a.profile)
			_, err := provider.Get(ctx, multicluster.ClusterName(a.profile))
			g.Expect(err).To(MatchError(multicluster.ErrClusterNotFound), "a refused profile must not be engaged")
		}
		// The member whose Secret was pointed at is untouched and still served.
		g := NewWithT(t)
		g.Expect(first.ctx.Err()).NotTo(HaveOccurred(), "member-a was disengaged by another profile's refusal")
		reachMember(ctx, g, getMember(g, provider), "still-served")
		g.Expect(refusals.Refused(memberName)).To(Succeed())
	})

	t.Run("disengages when the profile is deleted", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(hubClient.Delete(ctx, profile)).To(Succeed())
		g.Eventually(first.ctx.Done()).Should(BeClosed())
		expectNotFound(g, provider)
	})
}

func getMember(g Gomega, p *clusterprofile.Provider) cluster.Cluster {
	var cl cluster.Cluster
	g.Eventually(func() error {
		var err error
		cl, err = p.Get(context.Background(), memberName)
		return err
	}).Should(Succeed())
	return cl
}

func expectNotFound(g Gomega, p *clusterprofile.Provider) {
	g.Eventually(func() error {
		_, err := p.Get(context.Background(), memberName)
		return err
	}).Should(MatchError(multicluster.ErrClusterNotFound))
}

// reachMember writes a ConfigMap through the member's client and reads it back through its cache.
func reachMember(ctx context.Context, g Gomega, cl cluster.Cluster, name string) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{managedBy: "urutau-fleet"}},
		Data:       map[string]string{"from": "hub"},
	}
	g.Expect(cl.GetClient().Create(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &corev1.ConfigMap{}
		g.Expect(cl.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
		g.Expect(got.Data).To(HaveKeyWithValue("from", "hub"))
	}).Should(Succeed())
}

// engagements is a multicluster-aware runnable that records what the manager engages it with,
// as the hub's controllers are engaged.
type engagements struct {
	mu   sync.Mutex
	last map[multicluster.ClusterName]engagement
}

type engagement struct {
	ctx     context.Context
	cluster cluster.Cluster
}

func (e *engagements) Start(ctx context.Context) error { <-ctx.Done(); return nil }

func (e *engagements) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last == nil {
		e.last = map[multicluster.ClusterName]engagement{}
	}
	e.last[name] = engagement{ctx: ctx, cluster: cl}
	return nil
}

// waitFor waits for a live engagement of name with a cluster other than not.
func (e *engagements) waitFor(g Gomega, name multicluster.ClusterName, not cluster.Cluster) engagement {
	var got engagement
	g.Eventually(func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		en, ok := e.last[name]
		switch {
		case !ok, en.cluster == not:
			return errors.New("not engaged yet")
		case en.ctx.Err() != nil:
			return errors.New("engagement already cancelled")
		}
		got = en
		return nil
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return got
}
