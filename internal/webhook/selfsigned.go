package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The RBAC of the self-signed mode is not generated into the role every install gets: it ships
// with config/hub/self-signed only (rbac.yaml there), scoped to the one Secret and the one
// ValidatingWebhookConfiguration by name.

// Secret data keys of the CA that SelfSigned keeps.
const (
	caCertKey     = "ca.crt"
	caKeyKey      = "ca.key"
	caPreviousKey = "ca-previous.crt"
)

// Defaults of SelfSigned.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultLeafValidity = 90 * 24 * time.Hour
)

// SelfSigned provisions and renews the webhook's serving certificate without cert-manager.
//
// One long-lived CA lives in a Secret shared by every hub replica (ca.crt, ca.key). Each replica
// issues its own serving certificate from it, on its own disk only, and renews it on a timer
// (Start) when a third of its validity is left: the webhook server's certificate watcher reloads
// the files, so nothing restarts. The ValidatingWebhookConfiguration's caBundle holds the CA, and
// while the CA itself is being replaced (a third of its validity left) the previous CA too, until
// it expires: a replica still serving a certificate of the previous CA keeps verifying while the
// others move on, and no admission fails during a rotation.
type SelfSigned struct {
	Client client.Client
	// Namespace and Service are where the API server reaches the webhook.
	Namespace, Service string
	// OtherServices are further Services of Namespace the certificate serves (the metrics
	// endpoint shares it, so that a scraper verifies the hub with the same CA).
	OtherServices []string
	// Hosts are further names (DNS names or IP addresses) the serving certificate is for, e.g.
	// when the API server calls the webhook by URL.
	Hosts []string
	// Secret holds the CA (keys ca.crt, ca.key, ca-previous.crt during a rotation).
	Secret string
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose caBundle is set.
	WebhookConfiguration string
	// CertDir is the webhook server's certificate directory (tls.crt, tls.key).
	CertDir string
	// FieldManager owns the caBundle.
	FieldManager string
	// CAValidity and LeafValidity default to DefaultCAValidity and DefaultLeafValidity; each is
	// renewed when a third of it is left.
	CAValidity, LeafValidity time.Duration
	// CheckInterval is how often Start checks; default LeafValidity/100, at most an hour.
	CheckInterval time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

func (s SelfSigned) withDefaults() SelfSigned {
	if s.CAValidity == 0 {
		s.CAValidity = DefaultCAValidity
	}
	if s.LeafValidity == 0 {
		s.LeafValidity = DefaultLeafValidity
	}
	if s.CheckInterval == 0 {
		s.CheckInterval = min(s.LeafValidity/100, time.Hour)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s
}

// Ensure makes the CA, the caBundle and this replica's serving certificate current. Run it once
// before the webhook server starts (it needs the files), then Start keeps them current.
func (s SelfSigned) Ensure(ctx context.Context) error {
	s = s.withDefaults()
	ca, err := s.ensureCA(ctx)
	if err != nil {
		return err
	}
	if err := s.ensureBundle(ctx, ca.bundle(s.Now())); err != nil {
		return err
	}
	return s.ensureLeaf(ca)
}

// Start re-runs Ensure every CheckInterval until ctx ends, on every replica (each serves its
// own certificate). A failed check is logged and retried at the next tick: the current
// certificate stays valid for a third of its validity.
func (s SelfSigned) Start(ctx context.Context) error {
	s = s.withDefaults()
	log := ctrl.Log.WithName("webhook-certificate")
	t := time.NewTicker(s.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.Ensure(ctx); err != nil {
				log.Error(err, "Keeping the webhook certificate current failed; retrying", "in", s.CheckInterval)
			}
		}
	}
}

// NeedLeaderElection is false: every replica serves the webhook with its own certificate.
func (SelfSigned) NeedLeaderElection() bool { return false }

// ensureCA returns the stored CA, first replacing it when it is missing, unusable or has less
// than a third of its validity left (the old one becomes the previous CA while it is valid).
func (s SelfSigned) ensureCA(ctx context.Context) (*caState, error) {
	key := client.ObjectKey{Namespace: s.Namespace, Name: s.Secret}
	secret := &corev1.Secret{}
	err := s.Client.Get(ctx, key, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	exists := err == nil
	now := s.Now()
	current := parseCA(secret.Data)
	if current != nil && current.fresh(now, s.CAValidity) {
		return current, nil
	}
	next, err := newCA(now, s.CAValidity, s.Service+"."+s.Namespace)
	if err != nil {
		return nil, err
	}
	if current != nil && now.Before(current.cert.NotAfter) {
		next.previous = current.certPEM
	} else if prev := secret.Data[caCertKey]; len(prev) > 0 && validUntil(prev, now) {
		next.previous = prev // a CA without its key (an older hub's): keep trusting it meanwhile
	}
	data := maps.Clone(secret.Data) // keys of an older format stay: a TLS Secret needs tls.crt and tls.key
	if data == nil {
		data = map[string][]byte{}
	}
	data[caCertKey], data[caKeyKey] = next.certPEM, next.keyPEM
	delete(data, caPreviousKey)
	if next.previous != nil {
		data[caPreviousKey] = next.previous
	}
	secret.Data = data
	if exists {
		err = s.Client.Update(ctx, secret) // optimistic lock: one replica wins
	} else {
		secret.ObjectMeta = metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Secret}
		err = s.Client.Create(ctx, secret)
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return s.storedCA(ctx, key) // another replica rotated first: use its CA
	case apierrors.IsForbidden(err) && !exists:
		return nil, fmt.Errorf("the Secret %s does not exist and the hub may not create it: config/hub/self-signed ships it: %w", key, err)
	case err != nil:
		return nil, fmt.Errorf("storing the webhook CA in Secret %s: %w", key, err)
	}
	return next, nil
}

func (s SelfSigned) storedCA(ctx context.Context, key client.ObjectKey) (*caState, error) {
	secret := &corev1.Secret{}
	if err := s.Client.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	if ca := parseCA(secret.Data); ca != nil {
		return ca, nil
	}
	return nil, fmt.Errorf("the CA in Secret %s is not usable", key)
}

// ensureBundle sets bundle as the caBundle of every webhook of the configuration, only when one
// differs (idle is quiet).
func (s SelfSigned) ensureBundle(ctx context.Context, bundle []byte) error {
	live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: s.WebhookConfiguration}, live); err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", s.WebhookConfiguration, err)
	}
	if !slices.ContainsFunc(live.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return !bytes.Equal(w.ClientConfig.CABundle, bundle)
	}) {
		return nil
	}
	vwc := admissionregistrationv1ac.ValidatingWebhookConfiguration(s.WebhookConfiguration)
	for _, w := range live.Webhooks {
		vwc.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(w.Name).
			WithClientConfig(admissionregistrationv1ac.WebhookClientConfig().WithCABundle(bundle...)))
	}
	if err := s.Client.Apply(ctx, vwc, client.FieldOwner(s.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("setting the caBundle of %s: %w", s.WebhookConfiguration, err)
	}
	return nil
}

// ensureLeaf issues this replica's serving certificate from ca when the one in CertDir is
// missing, not from ca, for other hosts, or has less than a third of its validity left.
func (s SelfSigned) ensureLeaf(ca *caState) error {
	certPath, keyPath := filepath.Join(s.CertDir, corev1.TLSCertKey), filepath.Join(s.CertDir, corev1.TLSPrivateKeyKey)
	hosts := s.hosts()
	if leafCurrent(certPath, keyPath, ca, hosts, s.Now(), s.LeafValidity) {
		return nil
	}
	certPEM, keyPEM, err := ca.issue(s.Now(), s.LeafValidity, hosts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.CertDir, 0o700); err != nil {
		return err
	}
	// Key first, then certificate, each replaced atomically: the certificate watcher reloads on
	// each change and keeps serving the old pair until the new one matches.
	if err := writeAtomic(keyPath, keyPEM); err != nil {
		return err
	}
	return writeAtomic(certPath, certPEM)
}

// hosts are the names of the serving certificate: the DNS names of Service and OtherServices,
// then Hosts.
func (s SelfSigned) hosts() []string {
	var names []string
	for _, name := range append([]string{s.Service}, s.OtherServices...) {
		svc := name + "." + s.Namespace
		names = append(names, svc+".svc", svc, svc+".svc.cluster.local")
	}
	return append(names, s.Hosts...)
}

// leafCurrent tells whether the files hold a usable pair from ca for hosts with more than a third
// of validity left.
func leafCurrent(certPath, keyPath string, ca *caState, hosts []string, now time.Time, validity time.Duration) bool {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || leaf.CheckSignatureFrom(ca.cert) != nil {
		return false
	}
	if !sameNames(leaf, hosts) {
		return false
	}
	return leaf.NotAfter.Sub(now) > validity/3
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return errors.Join(err, os.Remove(tmp.Name()))
	}
	return nil
}
