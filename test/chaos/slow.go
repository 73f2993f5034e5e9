package chaos

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/fleet"
)

// Slow members: a path to the hub that answers late (proxy.go), and an admission webhook on a
// member that holds the hub's writes of coordinator StatefulSets (a policy engine under load).
// Either may outlast --member-timeout: the hub's client gives up while the member may still
// commit the write.

// slowWebhookName names the ValidatingWebhookConfiguration SlowAdmission registers in a member.
const slowWebhookName = "chaos-slow-admission"

// holder is the suite's admission webhook server: it holds each admission request of the hub
// (its field manager names the hub's) for the delay its URL path says, and allows everything.
// It serves every member; each member's webhook configuration says how long to hold.
type holder struct {
	url    string
	caPEM  []byte
	server *http.Server
	mu     sync.Mutex
	// held counts the requests held so far, for the log.
	held int
}

// newHolder serves HTTPS on a free port of 127.0.0.1 with a certificate made for it.
func newHolder() (*holder, error) {
	cert, caPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &holder{url: "https://" + ln.Addr().String(), caPEM: caPEM}
	mux := http.NewServeMux()
	mux.HandleFunc("/hold/", h.serve)
	h.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = h.server.ServeTLS(ln, "", "") }()
	return h, nil
}

func (h *holder) close() { _ = h.server.Close() }

// serve answers one AdmissionReview: allowed, after the delay of its path (/hold/<millis>) when
// the hub made the request.
func (h *holder) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	millis, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hold/"))
	if byHub(review.Request.Options.Raw) {
		h.mu.Lock()
		h.held++
		h.mu.Unlock()
		select {
		case <-time.After(ms(millis)):
		case <-r.Context().Done():
		}
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// byHub tells whether a request's options (Create-, Update- or PatchOptions) name one of the
// hub's field managers (ssa.FieldManagerFor: the base, "@", the member).
func byHub(options []byte) bool {
	var o struct {
		FieldManager string `json:"fieldManager"`
	}
	_ = json.Unmarshal(options, &o)
	return strings.HasPrefix(o.FieldManager, fleet.DefaultFieldManager+"@")
}

// slowAdmission registers the holding webhook in member m for the history's namespaces.
func (x *executor) slowAdmission(ctx context.Context, o SlowAdmission) error {
	h, err := x.env.holderServer()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("%s/hold/%d", h.url, o.Millis)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: slowWebhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "hold.chaos.urutau.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: h.caPEM},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             utilptr.To(admissionregistrationv1.SideEffectClassNone),
			// Held past its timeout, a request goes on: the webhook is slow, not a policy.
			FailurePolicy:  utilptr.To(admissionregistrationv1.Ignore),
			TimeoutSeconds: utilptr.To(int32(min(30, o.Millis/1000+5))),
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: x.nss}}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
					Resources: []string{"statefulsets"}, Scope: utilptr.To(admissionregistrationv1.NamespacedScope)},
			}},
		}},
	}
	c := x.env.members[o.Member]
	if err := dropWebhook(ctx, c); err != nil {
		return err
	}
	return c.Create(ctx, vwc)
}

// dropWebhook removes the holding webhook from a member, if it is there.
func dropWebhook(ctx context.Context, c client.Client) error {
	err := c.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: slowWebhookName}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// webhooksGone removes the holding webhook from every member (Heal, and before each history).
func (e *env) webhooksGone(ctx context.Context) []error {
	var errs []error
	for _, m := range Members {
		if err := dropWebhook(ctx, e.members[m]); err != nil {
			errs = append(errs, fmt.Errorf("removing the slow admission webhook of %s: %w", m, err))
		}
	}
	return errs
}

// holderServer is the env's webhook server, started on first use.
func (e *env) holderServer() (*holder, error) {
	if e.holder != nil {
		return e.holder, nil
	}
	h, err := newHolder()
	if err != nil {
		return nil, fmt.Errorf("the slow admission webhook server: %w", err)
	}
	e.holder = h
	return h, nil
}

// selfSigned makes a certificate for 127.0.0.1, its own CA, and returns it with its PEM.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chaos slow admission"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
