package webhook

import (
	"crypto/x509"
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

// TestSelfSigned provisions the webhook certificate against a real API server the way two hub
// replicas would, and checks the result is usable: the API server's caBundle verifies the serving
// certificate for the Service's DNS name.
func TestSelfSigned(t *testing.T) {
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
	fail, none, path := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, Path
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "urutau-fleet-validating-webhook-configuration"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vcdcpipeline.urutau.io", FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "urutau-system", Name: "urutau-fleet-webhook-service", Path: &path}},
		}},
	}
	if err := c.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	replica := func(dir string) SelfSigned {
		return SelfSigned{Client: c, Namespace: "urutau-system", Service: "urutau-fleet-webhook-service",
			Secret: "urutau-fleet-webhook-cert", WebhookConfiguration: vwc.Name, CertDir: dir,
			FieldManager: "urutau-operator", RenewBefore: 30 * 24 * time.Hour}
	}
	one, two := t.TempDir(), t.TempDir()
	if err := replica(one).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := replica(two).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(one, "tls.crt"))
	b, _ := os.ReadFile(filepath.Join(two, "tls.crt"))
	if len(a) == 0 || string(a) != string(b) {
		t.Fatal("the two replicas serve different certificates (or none)")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(vwc), vwc); err != nil {
		t.Fatal(err)
	}
	bundle := vwc.Webhooks[0].ClientConfig.CABundle
	if vwc.Webhooks[0].ClientConfig.Service == nil || vwc.Webhooks[0].SideEffects == nil {
		t.Fatal("setting the caBundle lost the rest of the webhook")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatalf("caBundle is not PEM: %q", bundle)
	}
	leaf, err := x509.ParseCertificate(pemBlocks(a)[0].Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "urutau-fleet-webhook-service.urutau-system.svc"}); err != nil {
		t.Fatalf("the API server could not verify the webhook's certificate: %v", err)
	}

	// A certificate inside its renewal window (here: expiring in an hour) is replaced at the next
	// start.
	soonCert, soonKey, err := certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{
		Host: "urutau-fleet-webhook-service.urutau-system.svc", MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stored := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "urutau-system", Name: "urutau-fleet-webhook-cert"}, stored); err != nil {
		t.Fatal(err)
	}
	stored.Data = map[string][]byte{"tls.crt": soonCert, "tls.key": soonKey, "ca.crt": soonCert}
	if err := c.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	later := replica(t.TempDir())
	if err := later.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	renewed, _ := os.ReadFile(filepath.Join(later.CertDir, "tls.crt"))
	if string(renewed) == string(soonCert) || string(renewed) == string(a) {
		t.Fatal("a certificate inside the renewal window was not replaced")
	}
}
