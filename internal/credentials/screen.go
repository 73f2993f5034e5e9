package credentials

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"

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
	cfg, err := ParseKubeconfig(data)
	if err != nil {
		return nil, err
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
		return nil, refuse(ReasonNoContext, "the kubeconfig's current-context %s does not exist", quoteName(cfg.CurrentContext))
	case cfg.Clusters[ctx.Cluster] == nil:
		return nil, refuse(ReasonNoContext, "context %s names cluster %s, which the kubeconfig does not define", quoteName(cfg.CurrentContext), quoteName(ctx.Cluster))
	case cfg.AuthInfos[ctx.AuthInfo] == nil:
		return nil, refuse(ReasonNoContext, "context %s names user %s, which the kubeconfig does not define", quoteName(cfg.CurrentContext), quoteName(ctx.AuthInfo))
	}
	return cfg, nil
}

// ScreenUser refuses a user entry that would run a program, read a file or impersonate, or that
// carries no usable credentials (a bearer token, or client-certificate-data with client-key-data).
// The message names the field, never its value: a path field may hold a pasted token or key, an
// exec command line or an auth-provider's config holds secrets.
func ScreenUser(name string, u *clientcmdapi.AuthInfo) error {
	user := "user " + quoteName(name)
	switch {
	case u == nil:
		return refuse(ReasonNoCredentials, "%s is empty", user)
	case u.Exec != nil:
		return refuse(ReasonExec, "%s: exec credential plugins (program %s) are refused: the hub would run the program with its own environment; put a token or client-certificate-data in the kubeconfig", user, programName(u.Exec.Command))
	case u.AuthProvider != nil:
		return refuse(ReasonAuthProvider, "%s: auth-provider plugins (%s) are refused; put a token or client-certificate-data in the kubeconfig", user, programName(u.AuthProvider.Name))
	case u.TokenFile != "":
		return refuse(ReasonFilePath, "%s: tokenFile is refused: it is a file path, and the hub would read its own file system; put the token itself in token", user)
	case u.ClientCertificate != "":
		return refuse(ReasonFilePath, "%s: client-certificate is a file path, refused; use client-certificate-data", user)
	case u.ClientKey != "":
		return refuse(ReasonFilePath, "%s: client-key is a file path, refused; use client-key-data", user)
	case u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0:
		return refuse(ReasonImpersonation, "%s: impersonation (as, as-uid, as-groups, as-user-extra) is refused; give the hub the identity of config/spoke itself", user)
	case (len(u.ClientCertificateData) == 0) != (len(u.ClientKeyData) == 0):
		return refuse(ReasonNoCredentials, "%s: client-certificate-data and client-key-data go together", user)
	case u.Token == "" && len(u.ClientCertificateData) == 0:
		return refuse(ReasonNoCredentials, "%s has neither a token nor client-certificate-data", user)
	}
	return nil
}

// ScreenCluster refuses a cluster entry the hub must not connect to as given: a server that is
// not https or not allowed, a CA file path, missing CA data (or insecure-skip-tls-verify without
// the admin's consent), a proxy without the admin's consent or to a host a server could not be.
func ScreenCluster(name string, c *clientcmdapi.Cluster, p Policy) error {
	entry := "cluster " + quoteName(name)
	if c == nil {
		return refuse(ReasonNoContext, "%s is empty", entry)
	}
	if err := screenServer(entry, c.Server, p); err != nil {
		return err
	}
	if c.CertificateAuthority != "" {
		return refuse(ReasonFilePath, "%s: certificate-authority is a file path, refused; use certificate-authority-data", entry)
	}
	if err := screenTLS(entry, c.InsecureSkipTLSVerify, len(c.CertificateAuthorityData) > 0, p); err != nil {
		return err
	}
	return screenProxy(entry, c.ProxyURL, p)
}

// screenServer refuses a server URL that is not https, carries a user or password, or names a
// host the hub may not connect to. entry names the kubeconfig entry in messages.
func screenServer(entry, server string, p Policy) error {
	if server == "" {
		return refuse(ReasonNoContext, "%s has no server", entry)
	}
	u, err := url.Parse(server)
	if err != nil {
		return refuse(ReasonNotHTTPS, "%s: the server does not parse as a URL; write it as https://host:port", entry)
	}
	if u.Scheme != "https" || u.Host == "" {
		return refuse(ReasonNotHTTPS, "%s: server %s must be an https:// URL: the hub sends credentials to it", entry, RedactURL(server))
	}
	if u.User != nil {
		return refuse(ReasonNotHTTPS, "%s: server %s must not carry a user or password", entry, RedactURL(server))
	}
	return screenHost(entry, "server", u, p)
}

// screenHost refuses the host of u (a server, or a proxy: the hub connects to either) when the
// allow-list does not name it, or when it is an address the hub never dials (forbiddenHost).
func screenHost(entry, what string, u *url.URL, p Policy) error {
	host := u.Hostname()
	if !p.Servers.AllowsHost(host) {
		return refuse(ReasonServerNotAllowed, "%s: %s host %s is not in the hub's --member-server-allowlist (%s)", entry, what, quoteName(host), p.Servers)
	}
	if why := p.Servers.forbiddenHost(host); why != "" {
		return refuse(ReasonServerNotAllowed, "%s: %s %s is %s; the hub never connects there (metadata endpoints live there): name it in --member-server-allowlist if it really is a member",
			entry, what, RedactURL(u.String()), why)
	}
	return nil
}

func screenTLS(entry string, insecure, hasCA bool, p Policy) error {
	switch {
	case insecure && hasCA:
		return refuse(ReasonInsecureTLS, "%s: insecure-skip-tls-verify and certificate-authority-data exclude each other", entry)
	case insecure && !p.AllowInsecure:
		return refuse(ReasonInsecureTLS, "%s: insecure-skip-tls-verify is refused (the hub would send credentials to whoever answers); set certificate-authority-data, or start the hub with --member-allow-insecure-tls", entry)
	case !insecure && !hasCA:
		return refuse(ReasonNoCA, "%s has no certificate-authority-data: the hub does not trust its own system roots for members; add the member's CA", entry)
	}
	return nil
}

// screenProxy refuses a proxy unless the admin allows proxies, and then screens its host like a
// server's: the hub connects to the proxy, with the member's credentials inside.
func screenProxy(entry, proxy string, p Policy) error {
	if proxy == "" {
		return nil
	}
	if !p.AllowProxy {
		return refuse(ReasonProxy, "%s: proxy-url is refused; start the hub with --member-allow-proxy to allow proxies", entry)
	}
	u, err := url.Parse(proxy)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
		return refuse(ReasonProxy, "%s: proxy-url %s must be an http, https or socks5 URL", entry, RedactURL(proxy))
	}
	return screenHost(entry, "proxy-url", u, p)
}
