package webhook

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// caState is the CA of the self-signed mode: its certificate and key, and the previous CA
// certificate while a rotation is under way.
type caState struct {
	cert            *x509.Certificate
	certPEM, keyPEM []byte
	key             *ecdsa.PrivateKey
	previous        []byte
}

// skew backdates certificates, for clocks a little behind ours.
const skew = 5 * time.Minute

// parseCA reads the CA from Secret data; nil when it is missing or unusable.
func parseCA(data map[string][]byte) *caState {
	cb, _ := pem.Decode(data[caCertKey])
	kb, _ := pem.Decode(data[caKeyKey])
	if cb == nil || kb == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil || !cert.IsCA {
		return nil
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil || !key.PublicKey.Equal(cert.PublicKey) {
		return nil
	}
	return &caState{cert: cert, certPEM: data[caCertKey], keyPEM: data[caKeyKey], key: key, previous: data[caPreviousKey]}
}

// newCA creates a CA valid for validity from now.
func newCA(now time.Time, validity time.Duration, name string) (*caState, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name + "-ca@" + now.UTC().Format(time.RFC3339)},
		NotBefore:             now.Add(-skew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating the webhook CA: %w", err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &caState{cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}, nil
}

// fresh tells whether the CA has more than a third of validity left.
func (c *caState) fresh(now time.Time, validity time.Duration) bool {
	return c.cert.NotAfter.Sub(now) > validity/3
}

// bundle is what the API server must trust: the CA, and the previous one while it is valid.
func (c *caState) bundle(now time.Time) []byte {
	out := bytes.Clone(c.certPEM)
	if len(c.previous) > 0 && validUntil(c.previous, now) {
		out = append(out, c.previous...)
	}
	return out
}

// issue creates a serving certificate and key for hosts, valid for validity from now.
func (c *caState) issue(now time.Time, validity time.Duration, hosts []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(validity)
	if c.cert.NotAfter.Before(notAfter) {
		notAfter = c.cert.NotAfter // never outlive the CA
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-skew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, nil, fmt.Errorf("issuing the webhook serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// sameNames tells whether certificate c is for exactly hosts (DNS names and IP addresses).
func sameNames(c *x509.Certificate, hosts []string) bool {
	have := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		have = append(have, ip.String())
	}
	want := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		want = append(want, h)
	}
	slices.Sort(have)
	slices.Sort(want)
	return slices.Equal(slices.Compact(have), slices.Compact(want))
}

// validUntil tells whether the first certificate of pemData is still valid at now.
func validUntil(pemData []byte, now time.Time) bool {
	b, _ := pem.Decode(pemData)
	if b == nil {
		return false
	}
	c, err := x509.ParseCertificate(b.Bytes)
	return err == nil && now.Before(c.NotAfter)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}
