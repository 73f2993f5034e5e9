package inventory

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/urutau-io/fleet/internal/credentials"
)

// ScreenKubeconfigSecret screens the kubeconfig a member's Secret holds (key KubeconfigSecretKey).
func ScreenKubeconfigSecret(s *corev1.Secret, p credentials.Policy) error {
	data, ok := s.Data[KubeconfigSecretKey]
	if !ok || len(data) == 0 {
		return &credentials.Refusal{Reason: credentials.ReasonUnparseable,
			Message: fmt.Sprintf("kubeconfig Secret %s/%s has no key %q holding a kubeconfig", s.Namespace, s.Name, KubeconfigSecretKey)}
	}
	if _, err := credentials.ScreenKubeconfig(data, p); err != nil {
		return fmt.Errorf("kubeconfig Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// ScreenedKubeconfigProvider returns what to hand to multicluster-runtime's kubeconfig provider
// (its SetupWithManager) instead of mgr: the same manager, except that the provider's reads of
// kubeconfig Secrets in namespace are screened first. A Secret whose kubeconfig is refused reads
// as absent, so the provider disengages that member and engages nothing, and the refusal is
// recorded in refusals (event on the Secret, metric, reason for the reconciler).
//
// Why not only a RESTOption: the provider turns the Secret into a rest.Config with
// clientcmd.RESTConfigFromKubeConfig before any RESTOption runs, and that already reads a
// tokenFile (a tokenFile of /dev/zero would exhaust the hub's memory there), and a rest.Config no
// longer says which entry was at fault. The provider takes the Secret from its manager's client,
// which is the one place it can be screened before it is parsed. cmd/hub passes
// credentials.RESTOption as well, as a second line.
func ScreenedKubeconfigProvider(mgr mcmanager.Manager, namespace string, p credentials.Policy, refusals *Refusals) mcmanager.Manager {
	local := mgr.GetLocalManager()
	return screenedManager{Manager: mgr, local: screenedLocal{Manager: local, client: &screeningClient{
		Client: local.GetClient(), namespace: namespace, policy: p, refusals: refusals,
	}}}
}

type screenedManager struct {
	mcmanager.Manager
	local manager.Manager
}

func (m screenedManager) GetLocalManager() manager.Manager { return m.local }

type screenedLocal struct {
	manager.Manager
	client client.Client
}

func (l screenedLocal) GetClient() client.Client { return l.client }

// screeningClient screens the kubeconfig Secrets it reads.
type screeningClient struct {
	client.Client
	namespace string
	policy    credentials.Policy
	refusals  *Refusals
}

func (c *screeningClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Namespace != c.namespace || s.Labels[KubeconfigSecretLabel] != "true" || !s.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := ScreenKubeconfigSecret(s, c.policy); err != nil {
		c.refusals.Refuse(s, s.Name, err)
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	c.refusals.Accept(s.Name)
	return nil
}
