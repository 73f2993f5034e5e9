package chaos

import (
	"context"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// throughProxy starts member m's proxy and points m's kubeconfig Secret on the hub at it: the
// hub reaches m through the proxy, everything else (the recorder, the executor, m's own pods)
// directly. It returns the Secret as it is now, for Register.
func (e *env) throughProxy(ctx context.Context, m string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := e.hub.Get(ctx, inventorySecret(m), s); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig Secret of %s: %w", m, err)
	}
	cfg, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig Secret of %s: %w", m, err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, fmt.Errorf("the kubeconfig Secret of %s: server %q: %w", m, c.Server, err)
		}
		p := e.proxies[m]
		if p == nil {
			if p, err = newProxy(u.Host); err != nil {
				return nil, fmt.Errorf("a proxy for %s: %w", m, err)
			}
			p.logf = e.logf
			e.proxies[m] = p
		}
		u.Host = p.addr()
		c.Server = u.String()
	}
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	s.Data["kubeconfig"] = raw
	if err := e.hub.Update(ctx, s); err != nil {
		return nil, fmt.Errorf("pointing the kubeconfig Secret of %s at its proxy: %w", m, err)
	}
	return s, nil
}

// partition cuts the hub's path to member m (hang: connections accepted and never answered;
// otherwise refused), or opens it again (open).
func (e *env) partition(m string, hang, open bool) error {
	cut := pathRefuse
	switch {
	case open:
		cut = pathOpen
	case hang:
		cut = pathHang
	}
	return e.proxies[m].setCut(cut)
}

// pathsOpen opens every member's path from the hub.
func (e *env) pathsOpen() []error {
	var errs []error
	for _, m := range Members {
		if err := e.partition(m, false, true); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
