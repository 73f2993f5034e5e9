package credentials

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Policy is what the platform admin allows in member credentials beyond the safe default (every
// field false or empty). The hub takes it from its flags; `hub member-secret` from the same flags.
type Policy struct {
	// AllowProxy lets a cluster entry set proxy-url (--member-allow-proxy).
	AllowProxy bool
	// AllowInsecure lets a cluster entry set insecure-skip-tls-verify instead of
	// certificate-authority-data (--member-allow-insecure-tls).
	AllowInsecure bool
	// Servers, when not empty, is the only set of hosts a member's server may name
	// (--member-server-allowlist).
	Servers Allowlist
}

// Allowlist is a list of server host patterns: an exact host name ("api.eu-1.example.com"), a
// wildcard for any subdomain ("*.example.com", not the apex), or a CIDR ("10.0.0.0/8") that
// matches IP addresses. Ports are not part of a pattern. The empty list allows every host.
type Allowlist struct {
	names    []string // lower case, exact
	suffixes []string // ".example.com" for "*.example.com"
	prefixes []netip.Prefix
}

// ParseAllowlist parses patterns as the flag gives them. Empty entries are skipped.
func ParseAllowlist(patterns []string) (Allowlist, error) {
	var a Allowlist
	var errs []error
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSpace(p))
		switch {
		case p == "":
		case strings.Contains(p, "/"):
			prefix, err := netip.ParsePrefix(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("server allow-list entry %q: not a CIDR: %w", p, err))
				continue
			}
			a.prefixes = append(a.prefixes, prefix.Masked())
		case strings.HasPrefix(p, "*."):
			if strings.ContainsAny(p[2:], "*:") || p[2:] == "" {
				errs = append(errs, fmt.Errorf("server allow-list entry %q: a wildcard is \"*.\" followed by a domain", p))
				continue
			}
			a.suffixes = append(a.suffixes, p[1:])
		case strings.ContainsAny(p, "*"):
			errs = append(errs, fmt.Errorf("server allow-list entry %q: \"*\" is allowed only as the first label (*.example.com)", p))
		default:
			if ip, err := netip.ParseAddr(strings.Trim(p, "[]")); err == nil {
				a.prefixes = append(a.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
				continue
			}
			if strings.Contains(p, ":") {
				errs = append(errs, fmt.Errorf("server allow-list entry %q: give a host without a port", p))
				continue
			}
			a.names = append(a.names, p)
		}
	}
	return a, errors.Join(errs...)
}

// Empty tells whether the list allows every host.
func (a Allowlist) Empty() bool {
	return len(a.names) == 0 && len(a.suffixes) == 0 && len(a.prefixes) == 0
}

// AllowsHost tells whether host (a name or an IP literal, without port) matches the list. The
// empty list matches every host.
func (a Allowlist) AllowsHost(host string) bool {
	if a.Empty() {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return a.coversIP(ip)
	}
	if _, ok := parseLegacyIPv4(host); ok {
		return false // never a name; forbiddenHost says why
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, n := range a.names {
		if host == n {
			return true
		}
	}
	for _, s := range a.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// coversIP tells whether one of the list's CIDRs contains ip (never true for the empty list).
func (a Allowlist) coversIP(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// String is the list as flags would give it back.
func (a Allowlist) String() string {
	var out []string
	out = append(out, a.names...)
	for _, s := range a.suffixes {
		out = append(out, "*"+s)
	}
	for _, p := range a.prefixes {
		out = append(out, p.String())
	}
	return strings.Join(out, ",")
}

// splitHost returns the host of a host[:port] authority, without brackets.
func splitHost(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}
