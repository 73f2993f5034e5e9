package credentials

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// RESTOption screens a member's rest.Config however it was built, so it can be passed to any
// provider's RESTOptions: the last line of defence behind ScreenKubeconfig (which gives the precise
// reason first). It refuses what ScreenUser and ScreenCluster refuse, as far as a rest.Config
// still shows it, and makes every connection go through GuardDial: the server's, or the proxy's
// when the config uses one (the hub then dials the proxy, never the server itself).
func RESTOption(p Policy) func(*rest.Config) error {
	return func(cfg *rest.Config) error {
		if err := ScreenRESTConfig(cfg, p); err != nil {
			return err
		}
		if cfg.Dial == nil {
			cfg.Dial = GuardDial(p)
		}
		return nil
	}
}

// ScreenRESTConfig refuses a rest.Config that would run a program, read a file, impersonate, use a
// proxy or skip TLS verification without the policy's consent, or reach a host it does not allow
// (the server's, or the proxy's).
func ScreenRESTConfig(cfg *rest.Config, p Policy) error {
	const entry = "the member's rest config"
	switch {
	case cfg.ExecProvider != nil:
		return refuse(ReasonExec, "%s: exec credential plugins (program %s) are refused", entry, programName(cfg.ExecProvider.Command))
	case cfg.AuthProvider != nil:
		return refuse(ReasonAuthProvider, "%s: auth-provider plugins (%s) are refused", entry, programName(cfg.AuthProvider.Name))
	case cfg.BearerTokenFile != "":
		return refuse(ReasonFilePath, "%s: a token file is refused", entry)
	case cfg.CertFile != "", cfg.KeyFile != "", cfg.CAFile != "":
		return refuse(ReasonFilePath, "%s: certificate, key and CA file paths are refused; use inline data", entry)
	case cfg.Impersonate.UserName != "" || cfg.Impersonate.UID != "" || len(cfg.Impersonate.Groups) > 0 || len(cfg.Impersonate.Extra) > 0:
		return refuse(ReasonImpersonation, "%s: impersonation is refused", entry)
	case cfg.Proxy != nil && !p.AllowProxy:
		return refuse(ReasonProxy, "%s: a proxy is refused; start the hub with --member-allow-proxy to allow proxies", entry)
	}
	if err := screenServer(entry, cfg.Host, p); err != nil {
		return err
	}
	if err := screenTLS(entry, cfg.Insecure, len(cfg.CAData) > 0, p); err != nil {
		return err
	}
	return screenProxyFunc(entry, cfg, p)
}

// screenProxyFunc screens the proxy a rest.Config's Proxy function picks for its server, as
// screenProxy screens a proxy-url.
func screenProxyFunc(entry string, cfg *rest.Config, p Policy) error {
	if cfg.Proxy == nil {
		return nil
	}
	server, err := url.Parse(cfg.Host)
	if err != nil {
		return nil // screenServer refused it already
	}
	proxy, err := cfg.Proxy(&http.Request{URL: server, Header: http.Header{}})
	if err != nil {
		return refuse(ReasonProxy, "%s: its proxy function fails for the server", entry)
	}
	if proxy == nil {
		return nil
	}
	return screenProxy(entry, proxy.String(), p)
}

// GuardDial returns a dialer that refuses to connect to an address the policy forbids, checked on
// the address actually dialled, so a host name that resolves to a metadata endpoint is caught too
// (169.254.169.254.nip.io, or a name whose DNS answer changes after the screen).
func GuardDial(p Policy) func(ctx context.Context, network, address string) (net.Conn, error) {
	return guardDial(p, nil)
}

// guardDial is GuardDial with the resolver to use (nil: the system's).
func guardDial(p Policy, resolver *net.Resolver) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  resolver,
		Control: func(_, address string, _ syscall.RawConn) error {
			return checkDialAddress(address, p.Servers)
		},
	}
	return d.DialContext
}

// checkDialAddress is GuardDial's check on one resolved ip:port.
func checkDialAddress(address string, a Allowlist) error {
	ip, err := netip.ParseAddr(splitHost(address))
	if err != nil {
		return fmt.Errorf("connecting to %q: not an IP address", address)
	}
	if a.forbiddenIP(ip) {
		return refuse(ReasonServerNotAllowed, "connecting to %s is refused: a link-local, unspecified, multicast or cloud metadata address, or one that embeds such an IPv4 address (name it in --member-server-allowlist if it really is a member)", address)
	}
	return nil
}
