package credentials

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestScreenRESTConfig(t *testing.T) {
	base := func() *rest.Config {
		return &rest.Config{Host: "https://member.example:6443", BearerToken: "t",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}
	}
	proxy, _ := url.Parse("http://proxy:3128")
	tests := []struct {
		name   string
		mutate func(*rest.Config)
		policy Policy
		want   Reason
	}{
		{name: "plain", mutate: func(*rest.Config) {}},
		{name: "exec", mutate: func(c *rest.Config) { c.ExecProvider = &clientcmdapi.ExecConfig{Command: "/hub"} }, want: ReasonExec},
		{name: "auth provider", mutate: func(c *rest.Config) { c.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"} }, want: ReasonAuthProvider},
		{name: "token file", mutate: func(c *rest.Config) { c.BearerTokenFile = "/var/run/secrets/token" }, want: ReasonFilePath},
		{name: "key file", mutate: func(c *rest.Config) { c.KeyFile = "/k" }, want: ReasonFilePath},
		{name: "CA file", mutate: func(c *rest.Config) { c.CAFile = "/ca" }, want: ReasonFilePath},
		{name: "impersonation", mutate: func(c *rest.Config) { c.Impersonate.UserName = "admin" }, want: ReasonImpersonation},
		{name: "impersonated groups", mutate: func(c *rest.Config) { c.Impersonate.Groups = []string{"system:masters"} }, want: ReasonImpersonation},
		{name: "proxy", mutate: func(c *rest.Config) { c.Proxy = http.ProxyURL(proxy) }, want: ReasonProxy},
		{name: "proxy allowed", mutate: func(c *rest.Config) { c.Proxy = http.ProxyURL(proxy) }, policy: Policy{AllowProxy: true}},
		{name: "insecure", mutate: func(c *rest.Config) { c.Insecure, c.CAData = true, nil }, want: ReasonInsecureTLS},
		{name: "insecure allowed", mutate: func(c *rest.Config) { c.Insecure, c.CAData = true, nil }, policy: Policy{AllowInsecure: true}},
		{name: "no CA", mutate: func(c *rest.Config) { c.CAData = nil }, want: ReasonNoCA},
		{name: "http", mutate: func(c *rest.Config) { c.Host = "http://member.example" }, want: ReasonNotHTTPS},
		{name: "bare host", mutate: func(c *rest.Config) { c.Host = "member.example:6443" }, want: ReasonNotHTTPS},
		{name: "metadata endpoint", mutate: func(c *rest.Config) { c.Host = "https://169.254.169.254" }, want: ReasonServerNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base()
			tt.mutate(cfg)
			err := RESTOption(tt.policy)(cfg)
			if got := ReasonOf(err); got != tt.want {
				t.Fatalf("reason = %q, want %q (err %v)", got, tt.want, err)
			}
			if tt.want == "" && cfg.Proxy == nil && cfg.Dial == nil {
				t.Error("no guarded dialer installed")
			}
		})
	}
}

func TestCheckDialAddress(t *testing.T) {
	linkLocal, err := ParseAllowlist([]string{"169.254.10.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		address string
		list    Allowlist
		refused bool
	}{
		{address: "127.0.0.1:6443"},
		{address: "10.0.0.1:443"},
		{address: "[::1]:443"},
		{address: "169.254.169.254:443", refused: true},
		{address: "[fe80::1]:443", refused: true},
		{address: "[fd00:ec2::254]:443", refused: true},
		{address: "[::ffff:169.254.169.254]:443", refused: true},
		{address: "0.0.0.0:443", refused: true},
		{address: "224.0.0.1:443", refused: true},
		{address: "169.254.10.5:443", list: linkLocal},
		{address: "169.254.169.254:443", list: linkLocal, refused: true},
	}
	for _, tt := range tests {
		err := checkDialAddress(tt.address, tt.list)
		if (err != nil) != tt.refused {
			t.Errorf("checkDialAddress(%s, %s) = %v, refused want %v", tt.address, tt.list, err, tt.refused)
		}
	}
}

// TestGuardDial dials for real: a host name that resolves to a link-local address is refused when
// connecting, whatever the kubeconfig said.
func TestGuardDial(t *testing.T) {
	dial := GuardDial(Policy{})
	_, err := dial(t.Context(), "tcp", "169.254.169.254:443")
	if ReasonOf(err) != ReasonServerNotAllowed {
		t.Fatalf("dialling the metadata endpoint: %v, want a refusal", err)
	}
	if !strings.Contains(err.Error(), "link-local") {
		t.Errorf("message %q does not say why", err)
	}
}

func TestParseAllowlist(t *testing.T) {
	a, err := ParseAllowlist([]string{" API.eu.example ", "*.members.example", "10.0.0.0/8", "192.168.1.7", "", "[2001:db8::1]"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"api.eu.example": true, "API.EU.EXAMPLE.": true, "other.eu.example": false,
		"x.members.example": true, "a.b.members.example": true, "members.example": false,
		"10.200.0.1": true, "11.0.0.1": false, "192.168.1.7": true, "192.168.1.8": false,
		"2001:db8::1": true, "::ffff:10.0.0.1": true,
	} {
		if got := a.AllowsHost(host); got != want {
			t.Errorf("AllowsHost(%q) = %v, want %v", host, got, want)
		}
	}
	if !(Allowlist{}).AllowsHost("anything") {
		t.Error("the empty list must allow every host")
	}
	for _, bad := range []string{"10.0.0.0/33", "a.*.example", "*.", "host:6443", "*.ex*ample"} {
		if _, err := ParseAllowlist([]string{bad}); err == nil {
			t.Errorf("ParseAllowlist(%q) accepted it", bad)
		}
	}
}
