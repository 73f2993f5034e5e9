package credentials

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Reason says why credentials were refused. The values are metric label values and event
// messages refer to them: never change one.
type Reason string

const (
	ReasonUnparseable      Reason = "unparseable"
	ReasonTooLarge         Reason = "too-large"
	ReasonNoContext        Reason = "no-context"
	ReasonExec             Reason = "exec"
	ReasonAuthProvider     Reason = "auth-provider"
	ReasonFilePath         Reason = "file-path"
	ReasonImpersonation    Reason = "impersonation"
	ReasonProxy            Reason = "proxy"
	ReasonInsecureTLS      Reason = "insecure-tls"
	ReasonNoCA             Reason = "no-ca"
	ReasonNotHTTPS         Reason = "not-https"
	ReasonServerNotAllowed Reason = "server-not-allowed"
	ReasonNoCredentials    Reason = "no-credentials"
	// ReasonUnboundSecret is the ClusterProfile rule: a profile may use only a Secret bound to it.
	ReasonUnboundSecret Reason = "unbound-secret"
)

// Refusal is the error of every screening function: a Reason for metrics and a message for
// people, naming the kubeconfig entry and what to do instead.
type Refusal struct {
	Reason  Reason
	Message string
}

func (r *Refusal) Error() string { return r.Message }

func refuse(reason Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the Reason of a Refusal anywhere in err's chain, or "" when err is not one.
func ReasonOf(err error) Reason {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// MaxKubeconfigBytes bounds what is parsed: a Secret holds at most 1 MiB anyway.
const MaxKubeconfigBytes = 1 << 20

// ScreenKubeconfig parses a kubeconfig and screens every cluster and user entry in it (not only
// the current context's: nothing in a member's kubeconfig may be dangerous, whichever entry a
// later change selects). It returns the parsed config; the current context must name a cluster
// and a user that exist.
func ScreenKubeconfig(data []byte, p Policy) (*clientcmdapi.Config, error) {
	if len(data) > MaxKubeconfigBytes {
		return nil, refuse(ReasonTooLarge, "the kubeconfig is %d bytes, more than %d", len(data), MaxKubeconfigBytes)
	}
	// Load only decodes: it resolves no path and reads no file.
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, refuse(ReasonUnparseable, "the kubeconfig does not parse: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		if err := ScreenUser(name, cfg.AuthInfos[name]); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		if err := ScreenCluster(name, cfg.Clusters[name], p); err != nil {
			return nil, err
		}
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	switch {
	case cfg.CurrentContext == "":
		return nil, refuse(ReasonNoContext, "the kubeconfig sets no current-context")
	case !ok:
		return nil, refuse(ReasonNoContext, "the kubeconfig's current-context %q does not exist", cfg.CurrentContext)
	case cfg.Clusters[ctx.Cluster] == nil:
		return nil, refuse(ReasonNoContext, "context %q names cluster %q, which the kubeconfig does not define", cfg.CurrentContext, ctx.Cluster)
	case cfg.AuthInfos[ctx.AuthInfo] == nil:
		return nil, refuse(ReasonNoContext, "context %q names user %q, which the kubeconfig does not define", cfg.CurrentContext, ctx.AuthInfo)
	}
	return cfg, nil
}

// ScreenUser refuses a user entry that would run a program, read a file or impersonate, or that
// carries no usable credentials (a bearer token, or client-certificate-data with client-key-data).
func ScreenUser(name string, u *clientcmdapi.AuthInfo) error {
	switch {
	case u == nil:
		return refuse(ReasonNoCredentials, "user %q is empty", name)
	case u.Exec != nil:
		return refuse(ReasonExec, "user %q: exec credential plugins (command %q) are refused: the hub would run the program with its own environment; put a token or client-certificate-data in the kubeconfig", name, u.Exec.Command)
	case u.AuthProvider != nil:
		return refuse(ReasonAuthProvider, "user %q: auth-provider %q is refused; put a token or client-certificate-data in the kubeconfig", name, u.AuthProvider.Name)
	case u.TokenFile != "":
		return refuse(ReasonFilePath, "user %q: tokenFile %q is refused: the hub would read its own file system; put the token itself in token", name, u.TokenFile)
	case u.ClientCertificate != "":
		return refuse(ReasonFilePath, "user %q: client-certificate %q is a file path, refused; use client-certificate-data", name, u.ClientCertificate)
	case u.ClientKey != "":
		return refuse(ReasonFilePath, "user %q: client-key %q is a file path, refused; use client-key-data", name, u.ClientKey)
	case u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0:
		return refuse(ReasonImpersonation, "user %q: impersonation (as, as-uid, as-groups, as-user-extra) is refused; give the hub the identity of config/spoke itself", name)
	case (len(u.ClientCertificateData) == 0) != (len(u.ClientKeyData) == 0):
		return refuse(ReasonNoCredentials, "user %q: client-certificate-data and client-key-data go together", name)
	case u.Token == "" && len(u.ClientCertificateData) == 0:
		return refuse(ReasonNoCredentials, "user %q has neither a token nor client-certificate-data", name)
	}
	return nil
}

// ScreenCluster refuses a cluster entry the hub must not connect to as given: a server that is
// not https or not allowed, a CA file path, missing CA data (or insecure-skip-tls-verify without
// the admin's consent), a proxy without the admin's consent.
func ScreenCluster(name string, c *clientcmdapi.Cluster, p Policy) error {
	if c == nil {
		return refuse(ReasonNoContext, "cluster %q is empty", name)
	}
	if err := screenServer(name, c.Server, p); err != nil {
		return err
	}
	if c.CertificateAuthority != "" {
		return refuse(ReasonFilePath, "cluster %q: certificate-authority %q is a file path, refused; use certificate-authority-data", name, c.CertificateAuthority)
	}
	if err := screenTLS(name, c.InsecureSkipTLSVerify, len(c.CertificateAuthorityData) > 0, p); err != nil {
		return err
	}
	return screenProxy(name, c.ProxyURL, p)
}

func screenServer(name, server string, p Policy) error {
	if server == "" {
		return refuse(ReasonNoContext, "cluster %q has no server", name)
	}
	u, err := url.Parse(server)
	if err != nil {
		return refuse(ReasonNotHTTPS, "cluster %q: server %q does not parse: %v", name, server, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return refuse(ReasonNotHTTPS, "cluster %q: server %q must be an https:// URL: the hub sends credentials to it", name, server)
	}
	if u.User != nil {
		return refuse(ReasonNotHTTPS, "cluster %q: server %q must not carry a user or password", name, server)
	}
	host := splitHost(u.Host)
	if !p.Servers.AllowsHost(host) {
		return refuse(ReasonServerNotAllowed, "cluster %q: server host %q is not in the hub's --member-server-allowlist (%s)", name, host, p.Servers)
	}
	if ip, err := netip.ParseAddr(host); err == nil && p.Servers.forbiddenIP(ip) {
		return refuse(ReasonServerNotAllowed, "cluster %q: server %q is a link-local, unspecified or multicast address (metadata endpoints live there); name it in --member-server-allowlist if it really is a member", name, server)
	}
	return nil
}

func screenTLS(name string, insecure, hasCA bool, p Policy) error {
	switch {
	case insecure && hasCA:
		return refuse(ReasonInsecureTLS, "cluster %q: insecure-skip-tls-verify and certificate-authority-data exclude each other", name)
	case insecure && !p.AllowInsecure:
		return refuse(ReasonInsecureTLS, "cluster %q: insecure-skip-tls-verify is refused (the hub would send credentials to whoever answers); set certificate-authority-data, or start the hub with --member-allow-insecure-tls", name)
	case !insecure && !hasCA:
		return refuse(ReasonNoCA, "cluster %q has no certificate-authority-data: the hub does not trust its own system roots for members; add the member's CA", name)
	}
	return nil
}

func screenProxy(name, proxy string, p Policy) error {
	if proxy == "" {
		return nil
	}
	if !p.AllowProxy {
		return refuse(ReasonProxy, "cluster %q: proxy-url is refused; start the hub with --member-allow-proxy to allow proxies", name)
	}
	u, err := url.Parse(proxy)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
		return refuse(ReasonProxy, "cluster %q: proxy-url %q must be an http, https or socks5 URL", name, proxy)
	}
	return nil
}
