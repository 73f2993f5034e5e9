package credentials

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// metadataSpellings are ways to write the metadata endpoint 169.254.169.254 (or another address
// the hub never dials) as a URL host.
var metadataSpellings = []string{
	"169.254.169.254",
	"[::ffff:169.254.169.254]", // IPv4-mapped
	"[::ffff:a9fe:a9fe]",
	"[::a9fe:a9fe]",                          // IPv4-compatible
	"[::ffff:0:a9fe:a9fe]",                   // IPv4-translated (SIIT)
	"[64:ff9b::a9fe:a9fe]",                   // NAT64, well-known prefix
	"[64:ff9b::169.254.169.254]",             // the same, dotted
	"[64:ff9b:1:a9fe:a9:fe00::]",             // NAT64, local-use prefix, RFC 6052 /48 position
	"[64:ff9b:1::a9fe:a9fe]",                 // local-use prefix, /96 position
	"[2002:a9fe:a9fe::]",                     // 6to4
	"[2002:a9fe:a9fe:1::1]",                  // 6to4, a host behind it
	"[2001:0:a9fe:a9fe::1]",                  // Teredo server
	"[2001:0:4136:e378:8000:63bf:5601:5601]", // Teredo client (inverted bits)
	"[2001:db8::5efe:a9fe:a9fe]",             // ISATAP interface id
	"[fe80::1]",                              // link-local IPv6
	"[fe80::1%25eth0]",                       // with a zone
	"[fe80::a9fe:a9fe%25eth0]",
	"[febf::1]",           // the top of fe80::/10
	"[fd00:ec2::254]",     // AWS IPv6 metadata
	"[fd20:ce::254]",      // GCP IPv6 metadata
	"100.100.100.200",     // Alibaba Cloud metadata
	"168.63.129.16",       // Azure WireServer
	"0xa9fea9fe",          // hexadecimal
	"0XA9FEA9FE",          //
	"2852039166",          // decimal
	"0251.0376.0251.0376", // octal
	"0xa9.0xfe.0xa9.0xfe", // hexadecimal parts
	"169.254.43518",       // three parts
	"169.16689662",        // two parts
	"0",                   // 0.0.0.0
	"0.0.0.0",
	"[::]",
	"224.0.0.251",
	"[ff02::1]",
	"metadata",
	"metadata.google.internal",
	"METADATA.Google.Internal.",
	"metadata.goog",
	"instance-data.ec2.internal",
}

// fineHosts are hosts a member's server may name.
var fineHosts = []string{
	"member.example",
	"10.0.0.1",
	"127.0.0.1",
	"[::1]",
	"[2001:db8::1]",
	"[64:ff9b::a00:1]",     // NAT64 of 10.0.0.1
	"[2002:a00:1::]",       // 6to4 of 10.0.0.1
	"[fd00::1]",            // unique local, not a metadata address
	"1e100.example",        // digits, but a name
	"metadata.example.com", // not a metadata name
	"0x1.example",
}

// TestForbiddenSpellings: every spelling of a link-local or metadata address, as a server and, with
// --member-allow-proxy, as a proxy, is refused by the screen with server-not-allowed; ordinary
// hosts are not.
func TestForbiddenSpellings(t *testing.T) {
	allowProxy := Policy{AllowProxy: true}
	for _, host := range metadataSpellings {
		server := kubeconfig("    server: https://"+host+":6443\n    certificate-authority-data: "+caData, goodUser)
		if _, err := ScreenKubeconfig(server, Policy{}); ReasonOf(err) != ReasonServerNotAllowed {
			t.Errorf("server %s: %v, want %s", host, err, ReasonServerNotAllowed)
		}
		proxy := kubeconfig(good()+"\n    proxy-url: http://"+host+":3128", goodUser)
		if _, err := ScreenKubeconfig(proxy, allowProxy); ReasonOf(err) != ReasonServerNotAllowed {
			t.Errorf("proxy %s: %v, want %s", host, err, ReasonServerNotAllowed)
		}
	}
	for _, host := range fineHosts {
		server := kubeconfig("    server: https://"+host+":6443\n    certificate-authority-data: "+caData, goodUser)
		if _, err := ScreenKubeconfig(server, Policy{}); err != nil {
			t.Errorf("server %s: refused: %v", host, err)
		}
		proxy := kubeconfig(good()+"\n    proxy-url: socks5://"+host+":1080", goodUser)
		if _, err := ScreenKubeconfig(proxy, allowProxy); err != nil {
			t.Errorf("proxy %s: refused: %v", host, err)
		}
	}
}

// TestForbiddenSpellingsSayWhy: the message says what the host is.
func TestForbiddenSpellingsSayWhy(t *testing.T) {
	for host, want := range map[string]string{
		"0xa9fea9fe":               `written as "0xa9fea9fe" instead of dotted decimal (169.254.169.254)`,
		"[64:ff9b::a9fe:a9fe]":     "NAT64",
		"metadata.google.internal": "cloud metadata host name",
	} {
		_, err := ScreenKubeconfig(kubeconfig("    server: https://"+host+"\n    certificate-authority-data: "+caData, goodUser), Policy{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", host, err, want)
		}
	}
}

// TestProxyHostAllowlist: with --member-server-allowlist, the proxy a member uses must be in it
// too: the hub connects to the proxy.
func TestProxyHostAllowlist(t *testing.T) {
	list, err := ParseAllowlist([]string{"*.example"})
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{AllowProxy: true, Servers: list}
	if _, err := ScreenKubeconfig(kubeconfig(good()+"\n    proxy-url: http://proxy.example:3128", goodUser), p); err != nil {
		t.Errorf("an allowed proxy is refused: %v", err)
	}
	_, err = ScreenKubeconfig(kubeconfig(good()+"\n    proxy-url: http://u:p@proxy.elsewhere:3128", goodUser), p)
	if ReasonOf(err) != ReasonServerNotAllowed || !strings.Contains(err.Error(), `proxy-url host "proxy.elsewhere"`) {
		t.Errorf("a proxy outside the allow-list: %v", err)
	}
}

// TestAllowlistNamesALinkLocalRange: an allow-list CIDR lets the admin name a link-local member,
// in any spelling that embeds it, and nothing else of the range.
func TestAllowlistNamesALinkLocalRange(t *testing.T) {
	list, err := ParseAllowlist([]string{"169.254.10.0/24", "*.example"})
	if err != nil {
		t.Fatal(err)
	}
	for address, refused := range map[string]bool{
		"169.254.10.5:443":          false,
		"[64:ff9b::a9fe:a05]:443":   false,
		"[::ffff:169.254.10.5]:443": false,
		"169.254.169.254:443":       true,
		"[64:ff9b::a9fe:a9fe]:443":  true,
		"[2002:a9fe:a9fe::]:443":    true,
	} {
		if err := checkDialAddress(address, list); (err != nil) != refused {
			t.Errorf("checkDialAddress(%s) = %v, refused want %v", address, err, refused)
		}
	}
}

// TestCheckDialAddressSpellings: the dial-time check refuses every IP spelling of the table, as
// the resolver hands them over.
func TestCheckDialAddressSpellings(t *testing.T) {
	for _, host := range metadataSpellings {
		ip, err := netip.ParseAddr(strings.ReplaceAll(strings.Trim(host, "[]"), "%25", "%"))
		if err != nil {
			continue // a name or a legacy spelling: never what a resolver returns
		}
		address := netip.AddrPortFrom(ip, 443).String()
		if err := checkDialAddress(address, Allowlist{}); ReasonOf(err) != ReasonServerNotAllowed {
			t.Errorf("checkDialAddress(%s) = %v, want a refusal", address, err)
		}
	}
	for _, address := range []string{"10.0.0.1:443", "[2001:db8::1]:443", "[64:ff9b::a00:1]:443", "127.0.0.1:6443"} {
		if err := checkDialAddress(address, Allowlist{}); err != nil {
			t.Errorf("checkDialAddress(%s) = %v", address, err)
		}
	}
}

// TestGuardDialChecksTheResolvedAddress: a name that resolves to the metadata endpoint (as
// 169.254.169.254.nip.io does), in IPv4 or as NAT64 IPv6, is refused when connecting; a name
// that resolves to loopback connects. The names are answered by a DNS server in the test.
func TestGuardDialChecksTheResolvedAddress(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = listener.Close() }()
	go func() {
		for {
			c, err := listener.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(listener.Addr().String())
	resolver := fakeDNS(t, map[string]netip.Addr{
		"169.254.169.254.nip.io.": netip.MustParseAddr("169.254.169.254"),
		"nat64.example.":          netip.MustParseAddr("64:ff9b::a9fe:a9fe"),
		"loopback.example.":       netip.MustParseAddr("127.0.0.1"),
	})
	dial := guardDial(Policy{}, resolver)
	for _, name := range []string{"169.254.169.254.nip.io", "nat64.example"} {
		_, err := dial(t.Context(), "tcp", net.JoinHostPort(name, port))
		if ReasonOf(err) != ReasonServerNotAllowed {
			t.Errorf("dialling %s: %v, want a refusal", name, err)
		}
	}
	c, err := dial(t.Context(), "tcp", net.JoinHostPort("loopback.example", port))
	if err != nil {
		t.Fatalf("dialling a name that resolves to loopback: %v", err)
	}
	_ = c.Close()
}

// fakeDNS is a resolver whose every query goes to a DNS server in the test that answers A and
// AAAA queries for names (fully qualified) and nothing else.
func fakeDNS(t *testing.T, names map[string]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := dnsAnswer(buf[:n], names); reply != nil {
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// dnsAnswer answers one DNS query (RFC 1035 wire format): the question, and one record when the
// name is known and the type (A or AAAA) fits its address.
func dnsAnswer(q []byte, names map[string]netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	end := i + 5 // the zero label, type, class
	qtype := binary.BigEndian.Uint16(q[i+1:])
	name := strings.ToLower(strings.Join(labels, ".")) + "."
	ip, known := names[name]
	var rdata []byte
	switch {
	case known && qtype == 1 && ip.Is4():
		a := ip.As4()
		rdata = a[:]
	case known && qtype == 28 && ip.Is6():
		a := ip.As16()
		rdata = a[:]
	}
	out := append([]byte{}, q[:2]...)         // id
	out = append(out, 0x81, 0x80, 0, 1, 0, 0) // response, recursion; one question
	if rdata != nil {
		out[7] = 1 // one answer
	}
	out = append(out, 0, 0, 0, 0) // no authority, no additional
	out = append(out, q[12:end]...)
	if rdata != nil {
		out = append(out, 0xc0, 12) // the question's name
		out = binary.BigEndian.AppendUint16(out, qtype)
		out = append(out, 0, 1, 0, 0, 0, 60) // class IN, TTL 60
		out = binary.BigEndian.AppendUint16(out, uint16(len(rdata)))
		out = append(out, rdata...)
	}
	return out
}

func TestParseLegacyIPv4(t *testing.T) {
	for in, want := range map[string]string{
		"0xa9fea9fe": "169.254.169.254", "2852039166": "169.254.169.254", "0251.0376.0251.0376": "169.254.169.254",
		"169.254.43518": "169.254.169.254", "169.16689662": "169.254.169.254", "0": "0.0.0.0", "127.1": "127.0.0.1",
		"0x7f.1": "127.0.0.1", "010.0.0.1": "8.0.0.1",
	} {
		got, ok := parseLegacyIPv4(in)
		if !ok || got.String() != want {
			t.Errorf("parseLegacyIPv4(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"member.example", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "4294967296", "08", "", "1..2", "1e100"} {
		if got, ok := parseLegacyIPv4(in); ok {
			t.Errorf("parseLegacyIPv4(%q) = %v, want not an address", in, got)
		}
	}
}
