package webhook

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups="",namespace=urutau-system,resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=urutau-fleet-validating-webhook-configuration,verbs=get;patch

// SelfSigned provisions the webhook's serving certificate without cert-manager: one Secret holds
// a self-signed CA and serving certificate, shared by every hub replica (the first creates it, the
// others read it); each replica writes it where the webhook server reads it and sets the CA as
// the caBundle of the ValidatingWebhookConfiguration.
type SelfSigned struct {
	Client client.Client
	// Namespace and Service are where the API server reaches the webhook.
	Namespace, Service string
	// Secret holds the certificate (keys tls.crt, tls.key, ca.crt).
	Secret string
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose caBundle is set.
	WebhookConfiguration string
	// CertDir is the webhook server's certificate directory.
	CertDir string
	// FieldManager owns the caBundle.
	FieldManager string
	// RenewBefore: a certificate closer than this to expiry is replaced at startup.
	RenewBefore time.Duration
}

// Ensure runs once at startup, before the webhook server starts.
func (s SelfSigned) Ensure(ctx context.Context) error {
	secret, err := s.secret(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.CertDir, 0o700); err != nil {
		return err
	}
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if err := os.WriteFile(filepath.Join(s.CertDir, k), secret.Data[k], 0o600); err != nil {
			return fmt.Errorf("writing the webhook certificate: %w", err)
		}
	}
	vwc := admissionregistrationv1ac.ValidatingWebhookConfiguration(s.WebhookConfiguration)
	live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: s.WebhookConfiguration}, live); err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", s.WebhookConfiguration, err)
	}
	for _, w := range live.Webhooks {
		vwc.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(w.Name).
			WithClientConfig(admissionregistrationv1ac.WebhookClientConfig().WithCABundle(secret.Data["ca.crt"]...)))
	}
	if err := s.Client.Apply(ctx, vwc, client.FieldOwner(s.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("setting the caBundle of %s: %w", s.WebhookConfiguration, err)
	}
	return nil
}

// secret returns the shared certificate Secret, creating (or renewing) it when needed.
func (s SelfSigned) secret(ctx context.Context) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: s.Namespace, Name: s.Secret}
	existing := &corev1.Secret{}
	err := s.Client.Get(ctx, key, existing)
	found := err == nil
	switch {
	case found && s.valid(existing):
		return existing, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	host := s.Service + "." + s.Namespace + ".svc"
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, []string{s.Service + "." + s.Namespace, host + ".cluster.local"})
	if err != nil {
		return nil, err
	}
	// GenerateSelfSignedCertKey returns the serving certificate followed by its CA.
	var ca []byte
	if blocks := pemBlocks(certPEM); len(blocks) > 1 {
		ca = pem.EncodeToMemory(blocks[len(blocks)-1])
	} else {
		ca = certPEM
	}
	fresh := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Secret},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca},
	}
	if found {
		// Expiring: replace it, unless another replica did so first.
		fresh.ResourceVersion = existing.ResourceVersion
		if err := s.Client.Update(ctx, fresh); err != nil && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("renewing Secret %s: %w", key, err)
		}
	} else if err := s.Client.Create(ctx, fresh); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating Secret %s: %w", key, err)
	}
	// Whoever won the race, everyone serves what is stored.
	stored := &corev1.Secret{}
	if err := s.Client.Get(ctx, key, stored); err != nil {
		return nil, err
	}
	if !s.valid(stored) {
		return nil, fmt.Errorf("the certificate in Secret %s is not usable", key)
	}
	return stored, nil
}

func (s SelfSigned) valid(sec *corev1.Secret) bool {
	blocks := pemBlocks(sec.Data[corev1.TLSCertKey])
	if len(blocks) == 0 || len(sec.Data[corev1.TLSPrivateKeyKey]) == 0 || len(sec.Data["ca.crt"]) == 0 {
		return false
	}
	cert, err := x509.ParseCertificate(blocks[0].Bytes)
	if err != nil {
		return false
	}
	return time.Now().Add(s.RenewBefore).Before(cert.NotAfter)
}

func pemBlocks(data []byte) []*pem.Block {
	var out []*pem.Block
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		out = append(out, b)
	}
}
