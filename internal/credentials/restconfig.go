package credentials

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// RESTOption screens a member's rest.Config however it was built, so it can be passed to any
// provider's RESTOptions: the last line of defence behind ScreenKubeconfig (which gives the precise
// reason first). It refuses what ScreenUser and ScreenCluster refuse, as far as a rest.Config
// still shows it, and makes every connection go through GuardDial.
func RESTOption(p Policy) func(*rest.Config) error {
	return func(cfg *rest.Config) error {
		if err := ScreenRESTConfig(cfg, p); err != nil {
			return err
		}
		if cfg.Dial == nil && cfg.Proxy == nil {
			cfg.Dial = GuardDial(p)
		}
		return nil
	}
}

// ScreenRESTConfig refuses a rest.Config that would run a program, read a file, impersonate, use a
// proxy or skip TLS verification without the policy's consent, or reach a host it does not allow.
func ScreenRESTConfig(cfg *rest.Config, p Policy) error {
	const name = "rest config"
	switch {
	case cfg.ExecProvider != nil:
		return refuse(ReasonExec, "exec credential plugins (command %q) are refused", cfg.ExecProvider.Command)
	case cfg.AuthProvider != nil:
		return refuse(ReasonAuthProvider, "auth-provider %q is refused", cfg.AuthProvider.Name)
	case cfg.BearerTokenFile != "":
		return refuse(ReasonFilePath, "tokenFile %q is refused", cfg.BearerTokenFile)
	case cfg.CertFile != "", cfg.KeyFile != "", cfg.CAFile != "":
		return refuse(ReasonFilePath, "certificate, key and CA file paths are refused; use inline data")
	case cfg.Impersonate.UserName != "" || cfg.Impersonate.UID != "" || len(cfg.Impersonate.Groups) > 0 || len(cfg.Impersonate.Extra) > 0:
		return refuse(ReasonImpersonation, "impersonation is refused")
	case cfg.Proxy != nil && !p.AllowProxy:
		return refuse(ReasonProxy, "a proxy is refused; start the hub with --member-allow-proxy to allow proxies")
	}
	if err := screenServer(name, cfg.Host, p); err != nil {
		return err
	}
	return screenTLS(name, cfg.Insecure, len(cfg.CAData) > 0, p)
}

// GuardDial returns a dialer that refuses to connect to an address the policy forbids, checked on
// the address actually dialled, so a host name that resolves to a metadata endpoint is caught too.
func GuardDial(p Policy) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
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
		return refuse(ReasonServerNotAllowed, "connecting to %s is refused: link-local, unspecified or multicast address (name it in --member-server-allowlist if it really is a member)", address)
	}
	return nil
}
