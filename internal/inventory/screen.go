package inventory

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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

// screeningClient screens the kubeconfig Secrets it reads. Every Secret of the provider
// namespace it returns passed the screen: one without the kubeconfig label reads as absent, like
// a refused one. The label is checked on the Secret as read, not on the event that queued the
// request: a Secret that lost the label after its request was queued (carrying, say, tokenFile:
// /dev/zero) would otherwise reach clientcmd.RESTConfigFromKubeConfig unscreened.
type screeningClient struct {
	client.Client
	namespace string
	policy    credentials.Policy
	refusals  *Refusals
}

func (c *screeningClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Namespace != c.namespace {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		if c.isSecret(obj) {
			// Only typed Secrets are screened; the provider reads no other form.
			return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
		}
		return c.Client.Get(ctx, key, obj, opts...)
	}
	if err := c.Client.Get(ctx, key, s, opts...); err != nil {
		return err
	}
	switch {
	case s.Labels[KubeconfigSecretLabel] != "true":
		*s = corev1.Secret{}
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	case !s.DeletionTimestamp.IsZero():
		return nil // the provider only disengages it
	}
	if err := ScreenKubeconfigSecret(s, c.policy); err != nil {
		c.refusals.Refuse(s, s.Name, err)
		*s = corev1.Secret{}
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	c.refusals.Accept(s.Name)
	return nil
}

// List returns, of the provider namespace's Secrets, only kubeconfig Secrets that pass the screen
// (refusals are recorded by Get, which the provider calls for each).
func (c *screeningClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	secrets, ok := list.(*corev1.SecretList)
	if !ok {
		if c.isSecret(list) {
			return fmt.Errorf("listing Secrets as %T: only typed SecretLists are screened", list)
		}
		return nil
	}
	kept := secrets.Items[:0]
	for _, s := range secrets.Items {
		if s.Namespace != c.namespace || (s.Labels[KubeconfigSecretLabel] == "true" && ScreenKubeconfigSecret(&s, c.policy) == nil) {
			kept = append(kept, s)
		}
	}
	secrets.Items = kept
	return nil
}

// isSecret tells whether obj (an object or a list) is of kind Secret in another form than the typed
// one (unstructured, metadata only).
func (c *screeningClient) isSecret(obj runtime.Object) bool {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return false
	}
	return gvk.Group == "" && (gvk.Kind == "Secret" || gvk.Kind == "SecretList")
}
