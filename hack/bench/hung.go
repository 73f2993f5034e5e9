package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/testenv"
)

// runHung measures step 5: the last member behind a proxy that stops answering (it accepts
// connections and forwards nothing, as a host behind a network that drops packets), P more
// pipelines created, and the clock stopped when every placement on a healthy member is complete.
// The member's kubeconfig Secret is switched to the proxy first and the bench waits until the hub
// has engaged it again, caches and controllers, and has no reconcile left to run, so the member
// hangs once engaged. (A member that
// hangs while the hub engages it is another case: see docs/benchmarks.md.)
func (e *env) runHung(ctx context.Context, o options, s size, res *pairRun, hub *hubProcess, sysNS, ns string, members []*testenv.Cluster) error {
	hung := members[s.C-1]
	u, err := url.Parse(hung.Config.Host)
	if err != nil {
		return err
	}
	proxy, err := testenv.NewProxy(u.Host)
	if err != nil {
		return err
	}
	defer func() { _ = proxy.Close() }()
	kc, err := hung.Kubeconfig()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return err
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + proxy.Addr()
	}
	if kc, err = clientcmd.Write(*cfg); err != nil {
		return err
	}
	engaged, err := hub.engagements(hung.Name)
	if err != nil {
		return err
	}
	want := testenv.KubeconfigSecret(sysNS, hung.Name, kc, nil)
	secret := &corev1.Secret{}
	if err := e.clients["hub"].Get(ctx, client.ObjectKeyFromObject(want), secret); err != nil {
		return err
	}
	secret.Data = want.Data
	if err := e.clients["hub"].Update(ctx, secret); err != nil {
		return fmt.Errorf("pointing %s's Secret at the proxy: %w", hung.Name, err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		n, err := hub.engagements(hung.Name)
		if err != nil {
			return err
		}
		if n > engaged {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the hub did not engage %s again through the proxy: see %s", hung.Name, hub.logf.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Changing the Secret brought back the pipelines placed on the member; the step measures a
	// hung member, not that: it starts when the hub has nothing left to do.
	if err := waitIdle(ctx, hub.metricsAddr, 5*time.Minute); err != nil {
		return err
	}
	proxy.Hang()
	defer proxy.Resume()
	if res.hung, err = e.runWithout(ctx, o, s, ns, members, hung); err != nil {
		return err
	}
	fmt.Printf("   hung member %s: healthy placements converged in %s %s\n", hung.Name, res.hung.took.Round(time.Millisecond), res.hung.err)
	return nil
}
