package webhook

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/testenv"
)

const (
	testVWC    = "urutau-fleet-validating-webhook-configuration"
	testSecret = "urutau-fleet-webhook-cert"
	serviceDNS = "urutau-fleet-webhook-service.urutau-system.svc"
	// metricsServiceDNS is the name config/monitoring's ServiceMonitor verifies.
	metricsServiceDNS = "urutau-fleet-metrics-service.urutau-system.svc"
)

// startSelfSignedEnv starts a real API server with the namespace and a ValidatingWebhookConfiguration
// that points at clientConfig.
func startSelfSignedEnv(t *testing.T, clientConfig admissionregistrationv1.WebhookClientConfig) *testenv.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	ctx := t.Context()
	clusters, err := testenv.Start(ctx, "selfsigned")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clusters[0].Stop() })
	c := clusters[0].Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "urutau-system"}}); err != nil {
		t.Fatal(err)
	}
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testVWC},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vcdcpipeline.urutau.io", FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: clientConfig,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"urutau.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"cdcpipelines"}},
			}},
		}},
	}
	if err := c.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	return clusters[0]
}

func replicaOf(c client.Client, dir string, now func() time.Time) SelfSigned {
	return SelfSigned{Client: c, Namespace: "urutau-system", Service: "urutau-fleet-webhook-service",
		OtherServices: []string{"urutau-fleet-metrics-service"},
		Secret:        testSecret, WebhookConfiguration: testVWC, CertDir: dir, FieldManager: "urutau-operator",
		CAValidity: 90 * 24 * time.Hour, LeafValidity: 30 * 24 * time.Hour, Now: now}
}

// TestSelfSigned provisions the webhook certificate against a real API server the way two hub
// replicas do, then fast-forwards a fake clock through leaf renewals and a CA rotation: at every
// step the API server's caBundle verifies the certificate each replica serves, the Secret never
// holds a serving key, and a check with nothing to do writes nothing.
func TestSelfSigned(t *testing.T) {
	path := Path
	env := startSelfSignedEnv(t, admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: "urutau-system", Name: "urutau-fleet-webhook-service", Path: &path}})
	ctx, c := t.Context(), env.Client
	now := time.Now()
	clock := func() time.Time { return now }
	one, two := replicaOf(c, t.TempDir(), clock), replicaOf(c, t.TempDir(), clock)

	ensureBoth := func(step string) {
		t.Helper()
		for _, r := range []SelfSigned{one, two} {
			if err := r.Ensure(ctx); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		}
		expectVerified(t, c, step, now, one.CertDir, two.CertDir)
		expectScrapeVerified(t, c, step, now, one.CertDir, two.CertDir)
	}
	ensureBoth("first start")
	a, b := readCert(t, one.CertDir), readCert(t, two.CertDir)
	if a.SerialNumber.Cmp(b.SerialNumber) == 0 {
		t.Error("the replicas share a serving certificate: each issues its own")
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "urutau-system", Name: testSecret}, secret); err != nil {
		t.Fatal(err)
	}
	if _, ok := secret.Data[corev1.TLSPrivateKeyKey]; ok {
		t.Error("the shared Secret holds a serving key")
	}
	firstCA := string(secret.Data[caCertKey])

	t.Run("idle is quiet", func(t *testing.T) {
		before := resourceVersions(t, c)
		ensureBoth("idle")
		if after := resourceVersions(t, c); after != before {
			t.Errorf("a check with nothing to do wrote: %v -> %v", before, after)
		}
	})

	t.Run("leaf renewed with a third of its validity left, CA kept", func(t *testing.T) {
		now = now.Add(21 * 24 * time.Hour)
		ensureBoth("leaf renewal")
		if readCert(t, one.CertDir).SerialNumber.Cmp(a.SerialNumber) == 0 {
			t.Error("the serving certificate was not renewed")
		}
		if got := storedCA(t, c); got != firstCA {
			t.Error("the CA changed on a leaf renewal")
		}
	})

	t.Run("CA rotated with a third left, old and new CA both in the caBundle", func(t *testing.T) {
		now = now.Add(21 * 24 * time.Hour) // day 42: leaves renewed again, valid to day 72
		ensureBoth("second leaf renewal")
		if storedCA(t, c) != firstCA {
			t.Fatal("the CA was rotated with more than a third left")
		}
		now = now.Add(19 * 24 * time.Hour) // day 61 of 90: less than a third left
		// One replica rotates; the other still serves a certificate of the old CA.
		if err := one.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		expectVerified(t, c, "mid rotation", now, one.CertDir, two.CertDir)
		if storedCA(t, c) == firstCA {
			t.Fatal("the CA was not rotated")
		}
		ensureBoth("after rotation")
		bundle := caBundle(t, c)
		if n := len(pemCerts(bundle)); n != 2 {
			t.Errorf("caBundle holds %d certificates during the rotation, want 2", n)
		}
		now = now.Add(30 * 24 * time.Hour) // day 91: past the old CA's end
		ensureBoth("old CA expired")
		if n := len(pemCerts(caBundle(t, c))); n != 1 {
			t.Errorf("caBundle holds %d certificates after the old CA expired, want 1", n)
		}
	})

	t.Run("a Secret of an older hub (self-signed tls.crt, no CA key) is taken over without breaking its CA", func(t *testing.T) {
		oldCert, oldKey, err := certutil.GenerateSelfSignedCertKey(serviceDNS, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		blocks := pemCerts(oldCert)
		oldCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: blocks[len(blocks)-1].Raw})
		old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: "older"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: oldCert, corev1.TLSPrivateKeyKey: oldKey, caCertKey: oldCA}}
		if err := c.Create(ctx, old); err != nil {
			t.Fatal(err)
		}
		r := replicaOf(c, t.TempDir(), time.Now)
		r.Secret = "older"
		if err := r.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		bundle := caBundle(t, c)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(bundle)
		if _, err := blocks[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: serviceDNS}); err != nil {
			t.Errorf("a replica of the older hub still serving its certificate would fail: %v", err)
		}
	})
}

// expectVerified: the configuration's caBundle verifies what each replica serves, for the
// Service's DNS name, at time at.
func expectVerified(t *testing.T, c client.Client, step string, at time.Time, dirs ...string) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle(t, c)) {
		t.Fatalf("%s: caBundle is not PEM", step)
	}
	for _, d := range dirs {
		if _, err := readCert(t, d).Verify(x509.VerifyOptions{Roots: pool, DNSName: serviceDNS, CurrentTime: at}); err != nil {
			t.Errorf("%s: the API server could not verify the certificate in %s: %v", step, d, err)
		}
	}
}

// expectScrapeVerified checks what a ServiceMonitor (config/monitoring) does: the metrics
// endpoint's certificate (the same files) verifies against ca.crt of the Secret, for the metrics
// Service's name.
func expectScrapeVerified(t *testing.T, c client.Client, step string, at time.Time, dirs ...string) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(storedCA(t, c))) {
		t.Fatalf("%s: the Secret's ca.crt is not PEM", step)
	}
	for _, d := range dirs {
		if _, err := readCert(t, d).Verify(x509.VerifyOptions{Roots: pool, DNSName: metricsServiceDNS, CurrentTime: at}); err != nil {
			t.Errorf("%s: a scraper could not verify the metrics certificate in %s: %v", step, d, err)
		}
	}
}

func caBundle(t *testing.T, c client.Client) []byte {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: testVWC}, vwc); err != nil {
		t.Fatal(err)
	}
	if vwc.Webhooks[0].SideEffects == nil || len(vwc.Webhooks[0].Rules) == 0 {
		t.Fatal("setting the caBundle lost the rest of the webhook")
	}
	return vwc.Webhooks[0].ClientConfig.CABundle
}

func storedCA(t *testing.T, c client.Client) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "urutau-system", Name: testSecret}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[caCertKey])
}

func resourceVersions(t *testing.T, c client.Client) [2]string {
	t.Helper()
	s := &corev1.Secret{}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "urutau-system", Name: testSecret}, s); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Name: testVWC}, vwc); err != nil {
		t.Fatal(err)
	}
	return [2]string{s.ResourceVersion, vwc.ResourceVersion}
}

func readCert(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, corev1.TLSCertKey))
	if err != nil {
		t.Fatal(err)
	}
	certs := pemCerts(raw)
	if len(certs) == 0 {
		t.Fatalf("no certificate in %s", dir)
	}
	return certs[0]
}

func pemCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}
