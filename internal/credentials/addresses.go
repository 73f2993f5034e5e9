package credentials

import (
	"net/netip"
	"strconv"
	"strings"
)

// The hub must never connect to a cloud metadata endpoint or any link-local address, however the
// address is written: a member's server (or, with --member-allow-proxy, its proxy) is chosen by
// whoever writes an inventory entry. The checks below run on the host as written (ScreenCluster,
// ScreenRESTConfig) and again on the address actually dialled (GuardDial), which catches names
// that resolve there (169.254.169.254.nip.io) and DNS answers that change after the screen.

// metadataIPs are cloud metadata endpoints outside the link-local ranges: AWS's IPv6 instance
// metadata, GCP's IPv6 metadata server, Alibaba Cloud's metadata and Azure's WireServer.
var metadataIPs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("fd20:ce::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

// metadataNames are host names of metadata endpoints on the clouds that publish one. The dial
// check catches them anyway once resolved; naming them here gives the precise reason early, and
// holds when a proxy resolves the name instead of the hub.
var metadataNames = []string{
	"metadata",
	"metadata.google.internal",
	"metadata.goog",
	"instance-data",
	"instance-data.ec2.internal",
}

// dangerousIP tells whether ip itself is an address the hub never dials: link-local (unicast and
// multicast, fe80::/10 with any zone), unspecified, multicast, or a metadata endpoint.
func dangerousIP(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	for _, m := range metadataIPs {
		if ip == m {
			return true
		}
	}
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified()
}

// embeddedIPv4 are the IPv4 addresses an IPv6 address carries by one of the standard
// transition mechanisms, each of which can deliver packets to that IPv4 address: IPv4-compatible
// (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96 and the local-use
// 64:ff9b:1::/48 of RFC 8215, at both of RFC 6052's /48 and /96 positions), 6to4 (2002::/16),
// Teredo (2001::/32: the server, and the client with its bits inverted) and ISATAP interface ids.
// IPv4-mapped addresses (::ffff:a.b.c.d) are unmapped before this is asked.
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if !ip.Is6() {
		return nil
	}
	b := ip.As16()
	v4 := func(a, b2, c, d byte) netip.Addr { return netip.AddrFrom4([4]byte{a, b2, c, d}) }
	low := v4(b[12], b[13], b[14], b[15])
	var out []netip.Addr
	switch {
	case allZero(b[0:12]):
		out = append(out, low)
	case allZero(b[0:8]) && b[8] == 0xff && b[9] == 0xff && allZero(b[10:12]):
		out = append(out, low)
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && allZero(b[4:12]):
		out = append(out, low)
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0x00 && b[5] == 0x01:
		out = append(out, v4(b[6], b[7], b[9], b[10]), low)
	case b[0] == 0x20 && b[1] == 0x02:
		out = append(out, v4(b[2], b[3], b[4], b[5]))
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00:
		out = append(out, v4(b[4], b[5], b[6], b[7]), v4(^b[12], ^b[13], ^b[14], ^b[15]))
	}
	if (b[8] == 0x00 || b[8] == 0x02) && b[9] == 0x00 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, low)
	}
	return out
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// forbiddenIP tells whether the hub must never connect to ip unless the allow-list names it (by a
// CIDR covering the address, or the IPv4 address it embeds): ip, or an IPv4 address it embeds, is
// dangerous (dangerousIP).
func (a Allowlist) forbiddenIP(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	for _, c := range append([]netip.Addr{ip}, embeddedIPv4(ip)...) {
		if dangerousIP(c) && !a.coversIP(c) {
			return true
		}
	}
	return false
}

// forbiddenHost says why the hub must not connect to host as written in a URL ("" when it may):
// a dangerous address in any spelling, an IPv4 address in a spelling other than dotted decimal
// (0xa9fea9fe, 2852039166, 0251.0376.0251.0376, 169.254.43518: C's inet_aton and so some
// resolvers and proxies read them as addresses, and no real server is named so), or a metadata
// host name the allow-list does not name exactly.
func (a Allowlist) forbiddenHost(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		if a.forbiddenIP(ip) {
			return "a link-local, unspecified, multicast or cloud metadata address (in any spelling: IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo)"
		}
		return ""
	}
	if ip, ok := parseLegacyIPv4(host); ok {
		return "an IPv4 address written as " + strconv.Quote(host) + " instead of dotted decimal (" + ip.String() + ")"
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, m := range metadataNames {
		if name == m && !a.namesExactly(name) {
			return "a cloud metadata host name"
		}
	}
	return ""
}

// namesExactly tells whether the allow-list names host itself (not by a wildcard).
func (a Allowlist) namesExactly(host string) bool {
	for _, n := range a.names {
		if n == host {
			return true
		}
	}
	return false
}

// parseLegacyIPv4 reads host as C's inet_aton does: one to four parts separated by dots, each
// decimal, octal (leading 0) or hexadecimal (0x), the last part filling the remaining bytes. ok is
// false for anything else. Callers try netip.ParseAddr first: what reaches this is never the
// plain dotted decimal form.
func parseLegacyIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseLegacyPart(p)
		last := i == len(parts)-1
		limit := uint64(0xff)
		if last {
			limit = 1<<(8*(5-len(parts))) - 1
		}
		if !ok || n > limit {
			return netip.Addr{}, false
		}
		if last {
			v = v<<(8*(5-len(parts))) | n
		} else {
			v = v<<8 | n
		}
	}
	ip := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return ip, true
}

// parseLegacyPart reads one part of an inet_aton address.
func parseLegacyPart(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		base = 8
	}
	n, err := strconv.ParseUint(p, base, 32)
	return n, err == nil
}
