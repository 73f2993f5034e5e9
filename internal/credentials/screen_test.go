package credentials

import (
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

var caData = base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n"))

// kubeconfig is a one-context kubeconfig with the given cluster and user fields (YAML lines,
// indented under the entry).
func kubeconfig(cluster, user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
current-context: m
contexts:
- name: m
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster:
` + cluster + `
users:
- name: u
  user:
` + user + "\n")
}

const (
	goodCluster = "    server: https://member.example:6443\n    certificate-authority-data: "
	goodUser    = "    token: abc"
)

func good() string { return goodCluster + caData }

// TestScreenKubeconfig is the table of attacks of issue "A hub you can hand to tenants", item 1,
// and their neighbours: each is refused with its reason and a message naming what to do.
func TestScreenKubeconfig(t *testing.T) {
	allowlist, err := ParseAllowlist([]string{"*.example", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		data       []byte
		policy     Policy
		wantReason Reason
		wantIn     string
	}{
		{name: "token", data: kubeconfig(good(), goodUser)},
		{name: "client certificate data", data: kubeconfig(good(), "    client-certificate-data: "+caData+"\n    client-key-data: "+caData)},
		{name: "tls-server-name allowed", data: kubeconfig(good()+"\n    tls-server-name: api.internal", goodUser)},
		{name: "exec command /hub", data: kubeconfig(good(), "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /hub\n      args: [--leader-elect=false]"),
			wantReason: ReasonExec, wantIn: `exec credential plugins (program hub) are refused`},
		{name: "auth provider", data: kubeconfig(good(), "    auth-provider:\n      name: oidc"), wantReason: ReasonAuthProvider, wantIn: `auth-provider plugins (oidc)`},
		{name: "tokenFile of the hub's service account", data: kubeconfig(good(), "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"),
			wantReason: ReasonFilePath, wantIn: `user "u": tokenFile is refused: it is a file path`},
		{name: "tokenFile /dev/zero", data: kubeconfig(good(), "    tokenFile: /dev/zero"), wantReason: ReasonFilePath, wantIn: "tokenFile"},
		{name: "client-key path", data: kubeconfig(good(), "    client-certificate-data: "+caData+"\n    client-key: /tmp/k8s-webhook-server/serving-certs/tls.key"),
			wantReason: ReasonFilePath, wantIn: `client-key is a file path`},
		{name: "client-certificate path", data: kubeconfig(good(), "    client-certificate: /etc/cert\n    client-key-data: "+caData),
			wantReason: ReasonFilePath, wantIn: "client-certificate"},
		{name: "certificate-authority path", data: kubeconfig("    server: https://member.example:6443\n    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt", goodUser),
			wantReason: ReasonFilePath, wantIn: `cluster "c": certificate-authority is a file path`},
		{name: "proxy-url", data: kubeconfig(good()+"\n    proxy-url: http://attacker:3128", goodUser), wantReason: ReasonProxy, wantIn: "--member-allow-proxy"},
		{name: "proxy-url allowed by the admin", data: kubeconfig(good()+"\n    proxy-url: http://proxy:3128", goodUser), policy: Policy{AllowProxy: true}},
		{name: "proxy-url allowed but not a URL", data: kubeconfig(good()+"\n    proxy-url: ftp://proxy", goodUser), policy: Policy{AllowProxy: true}, wantReason: ReasonProxy, wantIn: "http, https or socks5"},
		{name: "impersonation as", data: kubeconfig(good(), goodUser+"\n    as: system:admin"), wantReason: ReasonImpersonation, wantIn: "impersonation"},
		{name: "impersonation as-groups", data: kubeconfig(good(), goodUser+"\n    as-groups: [system:masters]"), wantReason: ReasonImpersonation},
		{name: "impersonation as-uid", data: kubeconfig(good(), goodUser+"\n    as-uid: \"0\""), wantReason: ReasonImpersonation},
		{name: "insecure-skip-tls-verify", data: kubeconfig("    server: https://attacker.example\n    insecure-skip-tls-verify: true", goodUser),
			wantReason: ReasonInsecureTLS, wantIn: "--member-allow-insecure-tls"},
		{name: "insecure allowed by the admin", data: kubeconfig("    server: https://member.example\n    insecure-skip-tls-verify: true", goodUser), policy: Policy{AllowInsecure: true}},
		{name: "insecure and CA data", data: kubeconfig(good()+"\n    insecure-skip-tls-verify: true", goodUser), policy: Policy{AllowInsecure: true},
			wantReason: ReasonInsecureTLS, wantIn: "exclude each other"},
		{name: "no CA data", data: kubeconfig("    server: https://member.example:6443", goodUser), wantReason: ReasonNoCA, wantIn: "certificate-authority-data"},
		{name: "http server", data: kubeconfig("    server: http://member.example:8080\n    certificate-authority-data: "+caData, goodUser),
			wantReason: ReasonNotHTTPS, wantIn: `server http://member.example:8080 must be an https:// URL`},
		{name: "server without scheme", data: kubeconfig("    server: member.example:6443\n    certificate-authority-data: "+caData, goodUser), wantReason: ReasonNotHTTPS},
		{name: "server with user info", data: kubeconfig("    server: https://a:b@member.example\n    certificate-authority-data: "+caData, goodUser), wantReason: ReasonNotHTTPS},
		{name: "no server", data: kubeconfig("    certificate-authority-data: "+caData, goodUser), wantReason: ReasonNoContext, wantIn: "has no server"},
		{name: "metadata endpoint", data: kubeconfig("    server: https://169.254.169.254\n    certificate-authority-data: "+caData, goodUser),
			wantReason: ReasonServerNotAllowed, wantIn: "link-local"},
		{name: "IPv6 metadata endpoint", data: kubeconfig("    server: https://[fd00:ec2::254]\n    certificate-authority-data: "+caData, goodUser), wantReason: ReasonServerNotAllowed},
		{name: "unspecified address", data: kubeconfig("    server: https://0.0.0.0:6443\n    certificate-authority-data: "+caData, goodUser), wantReason: ReasonServerNotAllowed},
		{name: "allow-list: matching wildcard", data: kubeconfig(good(), goodUser), policy: Policy{Servers: allowlist}},
		{name: "allow-list: matching CIDR", data: kubeconfig("    server: https://10.1.2.3:6443\n    certificate-authority-data: "+caData, goodUser), policy: Policy{Servers: allowlist}},
		{name: "allow-list: outside", data: kubeconfig("    server: https://kubernetes.default.svc\n    certificate-authority-data: "+caData, goodUser), policy: Policy{Servers: allowlist},
			wantReason: ReasonServerNotAllowed, wantIn: `server host "kubernetes.default.svc" is not in the hub's --member-server-allowlist (*.example,10.0.0.0/8)`},
		{name: "allow-list: apex of a wildcard", data: kubeconfig("    server: https://example\n    certificate-authority-data: "+caData, goodUser), policy: Policy{Servers: allowlist}, wantReason: ReasonServerNotAllowed},
		{name: "no credentials", data: kubeconfig(good(), "    username: u"), wantReason: ReasonNoCredentials, wantIn: "neither a token nor client-certificate-data"},
		{name: "half a client certificate", data: kubeconfig(good(), "    client-certificate-data: "+caData), wantReason: ReasonNoCredentials, wantIn: "go together"},
		{name: "garbage", data: []byte("this is not a kubeconfig: {[\x00"), wantReason: ReasonUnparseable, wantIn: "does not parse"},
		{name: "too large", data: make([]byte, MaxKubeconfigBytes+1), wantReason: ReasonTooLarge},
		{name: "no current context", data: []byte(strings.Replace(string(kubeconfig(good(), goodUser)), "current-context: m", "", 1)), wantReason: ReasonNoContext},
		{name: "current context missing", data: []byte(strings.Replace(string(kubeconfig(good(), goodUser)), "current-context: m", "current-context: x", 1)),
			wantReason: ReasonNoContext, wantIn: `"x" does not exist`},
		{name: "context names a missing user", data: []byte(strings.Replace(string(kubeconfig(good(), goodUser)), "user: u}", "user: nobody}", 1)),
			wantReason: ReasonNoContext, wantIn: `user "nobody"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ScreenKubeconfig(tt.data, tt.policy)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if cfg == nil {
					t.Fatal("no config returned")
				}
				return
			}
			if err == nil {
				t.Fatalf("admitted, want a refusal for %s", tt.wantReason)
			}
			if got := ReasonOf(err); got != tt.wantReason {
				t.Errorf("reason = %q, want %q (%v)", got, tt.wantReason, err)
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("message %q does not contain %q", err, tt.wantIn)
			}
		})
	}
}

// TestScreenKubeconfigEveryEntry: an exec user that the current context does not select is
// refused too.
func TestScreenKubeconfigEveryEntry(t *testing.T) {
	data := string(kubeconfig(good(), goodUser)) + `- name: other
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: sh
`
	_, err := ScreenKubeconfig([]byte(data), Policy{})
	if ReasonOf(err) != ReasonExec || !strings.Contains(err.Error(), `user "other"`) {
		t.Fatalf("err = %v, want the exec user named", err)
	}
}

// TestScreenKubeconfigMatchesClientcmd: what ScreenKubeconfig admits, clientcmd turns into a
// rest.Config that ScreenRESTConfig admits too (the two screens agree).
func TestScreenKubeconfigMatchesClientcmd(t *testing.T) {
	for _, data := range [][]byte{
		kubeconfig(good(), goodUser),
		kubeconfig(good(), "    client-certificate-data: "+caData+"\n    client-key-data: "+caData),
	} {
		if _, err := ScreenKubeconfig(data, Policy{}); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := RESTOption(Policy{})(cfg); err != nil {
			t.Fatalf("RESTOption refused what ScreenKubeconfig admitted: %v", err)
		}
		if cfg.Dial == nil {
			t.Error("RESTOption did not install the guarded dialer")
		}
	}
}
