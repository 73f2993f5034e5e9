package webhook

import "crypto/tls"

// HardenTLS is the webhook server's TLS policy (webhook.Options.TLSOpts): TLS 1.2 or newer, and
// HTTP/1.1 only. HTTP/2 is off because its stream handling has had denial-of-service flaws
// (CVE-2023-44487, CVE-2023-39325) and the API server, the only client, needs nothing more.
func HardenTLS(c *tls.Config) {
	c.MinVersion = tls.VersionTLS12
	c.NextProtos = []string{"http/1.1"}
}
