package credentials

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// hostileKubeconfigs are kubeconfigs that carry the secret s where a refusal message could echo
// it: tokens of users with one name (clientcmd's parse error prints the whole list), user and
// password in server and proxy URLs, queries and fragments, an exec command line, arguments and
// environment, auth-provider configs, a token pasted into a file-path field. Entry names (of
// clusters, users, contexts) are identifiers, shown quoted and cut short, never secrets.
func hostileKubeconfigs(s string) map[string][]byte {
	user := func(fields string) []byte { return kubeconfig(good(), fields) }
	cluster := func(fields string) []byte { return kubeconfig(fields, goodUser) }
	ca := "\n    certificate-authority-data: " + caData
	twoUsers := string(kubeconfig(good(), "    token: "+s)) + "- name: u\n  user:\n    token: " + s + "-2\n"
	twoClusters := strings.Replace(string(kubeconfig("    server: https://x:"+s+"@a.example"+ca, goodUser)),
		"clusters:\n", "clusters:\n- name: c\n  cluster:\n    server: https://y:"+s+"@b.example\n", 1)
	return map[string][]byte{
		"two users of one name":         []byte(twoUsers),
		"two clusters of one name":      []byte(twoClusters),
		"server user:password":          cluster("    server: https://admin:" + s + "@member.example:6443" + ca),
		"server token as user":          cluster("    server: https://" + s + "@member.example:6443" + ca),
		"server query":                  cluster("    server: https://member.example/?token=" + s + "\n    insecure-skip-tls-verify: true" + ca),
		"server path":                   cluster("    server: http://member.example/k8s/" + s + ca),
		"server fragment":               cluster("    server: http://member.example/#" + s + ca),
		"opaque server":                 cluster("    server: https:" + s + ca),
		"http server with password":     cluster("    server: http://admin:" + s + "@member.example" + ca),
		"unparseable server":            cluster("    server: \"https://member.example:" + s + "%zz\"" + ca),
		"metadata server with password": cluster("    server: https://admin:" + s + "@169.254.169.254" + ca),
		"proxy with password":           cluster(good() + "\n    proxy-url: http://proxy:" + s + "@proxy.example:3128"),
		"ftp proxy with password":       cluster(good() + "\n    proxy-url: ftp://proxy:" + s + "@proxy.example"),
		"exec args":                     user("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /usr/bin/aws\n      args: [--token, " + s + "]"),
		"exec env":                      user("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n      env: [{name: TOKEN, value: " + s + "}]"),
		"exec command line":             user("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: \"/bin/sh -c 'curl -H " + s + "'\""),
		"exec command directory":        user("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /opt/" + s + "/bin/tool"),
		"auth-provider config":          user("    auth-provider:\n      name: oidc\n      config: {client-secret: " + s + ", id-token: " + s + ", refresh-token: " + s + "}"),
		"token pasted as tokenFile":     user("    tokenFile: " + s),
		"key pasted as client-key":      user("    client-certificate-data: " + caData + "\n    client-key: " + s),
		"cert pasted as a path":         user("    client-certificate: " + s + "\n    client-key-data: " + caData),
		"CA pasted as a path":           cluster("    server: https://member.example\n    certificate-authority: " + s),
		"password without token":        user("    username: admin\n    password: " + s),
		"impersonation":                 user("    token: t\n    as: " + s + "\n    as-user-extra: {k: [" + s + "]}"),
		"token next to bad YAML":        []byte("users:\n- name: u\n  user:\n    token: " + s + "\n  bad: [\n"),
		"token, missing context":        []byte(strings.Replace(string(kubeconfig(good(), "    token: "+s)), "current-context: m", "current-context: x", 1)),
	}
}

// canary is a random string no message contains by chance.
func canary(t testing.TB, seed []byte) string {
	t.Helper()
	if seed == nil {
		seed = make([]byte, 16)
		if _, err := rand.Read(seed); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(seed)
	return "cnry" + hex.EncodeToString(sum[:10])
}

// assertNoSecret fails when any text contains s.
func assertNoSecret(t testing.TB, s, what string, texts ...string) {
	t.Helper()
	for _, text := range texts {
		if strings.Contains(text, s) {
			t.Errorf("%s: the secret %q appears in %q", what, s, text)
		}
	}
}

// TestNoSecretInRefusals plants a random secret in every place of a kubeconfig a message could
// echo, for every hostile shape, with and without the admin's allowances, and asserts it appears
// in no refusal the screens return, nor in the tenant-visible sentence.
func TestNoSecretInRefusals(t *testing.T) {
	for round := 0; round < 8; round++ {
		s := canary(t, nil)
		for name, data := range hostileKubeconfigs(s) {
			// The safe default refuses every shape; the admin's allowances admit a proxy, and
			// whatever they still refuse must not echo the secret either.
			_, err := ScreenKubeconfig(data, Policy{})
			if err == nil {
				t.Fatalf("%s: admitted", name)
			}
			assertNoSecret(t, s, name, err.Error(), PublicMessage(ReasonOf(err)))
			if _, err := ScreenKubeconfig(data, Policy{AllowProxy: true, AllowInsecure: true}); err != nil {
				assertNoSecret(t, s, name+" (allowances)", err.Error())
			}
		}
	}
}

// TestNoSecretInRESTConfigRefusals: the rest.Config screen (the second line) echoes no secret
// either.
func TestNoSecretInRESTConfigRefusals(t *testing.T) {
	s := canary(t, nil)
	proxy, _ := url.Parse("http://p:" + s + "@169.254.169.254:3128")
	base := func() *rest.Config {
		return &rest.Config{Host: "https://member.example", BearerToken: s, TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}
	}
	for name, mutate := range map[string]func(*rest.Config){
		"exec": func(c *rest.Config) {
			c.ExecProvider = &clientcmdapi.ExecConfig{Command: "/bin/" + s + "/x", Args: []string{s}}
		},
		"auth provider": func(c *rest.Config) {
			c.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"id-token": s}}
		},
		"token file":      func(c *rest.Config) { c.BearerTokenFile = s },
		"host password":   func(c *rest.Config) { c.Host = "https://u:" + s + "@member.example" },
		"host query":      func(c *rest.Config) { c.Host = "http://member.example/?t=" + s },
		"metadata host":   func(c *rest.Config) { c.Host = "https://u:" + s + "@[64:ff9b::a9fe:a9fe]" },
		"metadata proxy":  func(c *rest.Config) { c.Proxy = http.ProxyURL(proxy) },
		"impersonate":     func(c *rest.Config) { c.Impersonate.UserName = s },
		"unparseable url": func(c *rest.Config) { c.Host = "https://member.example:" + s + "%zz" },
	} {
		cfg := base()
		mutate(cfg)
		err := ScreenRESTConfig(cfg, Policy{AllowProxy: true})
		if err == nil {
			t.Fatalf("%s: admitted", name)
		}
		assertNoSecret(t, s, name, err.Error())
	}
}

// FuzzNoSecretInRefusals is TestNoSecretInRefusals with the secret and the hostile shape chosen
// by the fuzzer:
//
//	go test ./internal/credentials -run '^$' -fuzz FuzzNoSecretInRefusals -fuzztime 60s
func FuzzNoSecretInRefusals(f *testing.F) {
	f.Add([]byte("seed"), uint8(0), false)
	f.Add([]byte("another"), uint8(7), true)
	f.Fuzz(func(t *testing.T, seed []byte, which uint8, allow bool) {
		s := canary(t, append([]byte{1}, seed...))
		shapes := hostileKubeconfigs(s)
		names := slices.Sorted(maps.Keys(shapes))
		name := names[int(which)%len(names)]
		_, err := ScreenKubeconfig(shapes[name], Policy{AllowProxy: allow, AllowInsecure: allow})
		if err != nil {
			assertNoSecret(t, s, name, err.Error(), PublicMessage(ReasonOf(err)))
		}
	})
}

// TestDuplicateUserNamesSaySo: the refusal of two users of one name says which name, and that
// is all it says of the document.
func TestDuplicateUserNamesSaySo(t *testing.T) {
	data := hostileKubeconfigs("s3cr3t-token")["two users of one name"]
	_, err := ScreenKubeconfig(data, Policy{})
	if ReasonOf(err) != ReasonUnparseable || !strings.Contains(err.Error(), `user "u" is defined twice`) {
		t.Fatalf("err = %v, want unparseable naming the user", err)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://member.example:6443":           "https://member.example:6443",
		"https://member.example:6443/":          "https://member.example:6443",
		"https://u:p@member.example":            "https://xxxxx@member.example",
		"https://tok@member.example":            "https://xxxxx@member.example",
		"https://member.example/k8s/c-1?x=y#z":  "https://member.example/...",
		"https://member.example?token=t":        "https://member.example/...",
		"http://[fe80::1%25eth0]:6443":          "http://[fe80::1%eth0]:6443",
		"https:opaque-token":                    "https: (not a URL with a host)",
		"member.example:6443":                   "member.example: (not a URL with a host)",
		"https://member.example:6443%zz":        "(a URL that does not parse)",
		"socks5://u:p@proxy.example:1080/x?y=z": "socks5://xxxxx@proxy.example:1080/...",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPublicMessage(t *testing.T) {
	got := PublicMessage(ReasonExec)
	if !strings.Contains(got, "reason exec") || !strings.Contains(got, "CredentialsRefused") {
		t.Errorf("PublicMessage = %q", got)
	}
	if Public(refuse(ReasonProxy, "user %q: secret", "x")) != PublicMessage(ReasonProxy) {
		t.Error("Public does not take the refusal's reason")
	}
	if !strings.Contains(PublicMessage(""), "reason invalid") {
		t.Error("an error without a reason is not called invalid")
	}
}
