package clusterprofile

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	"github.com/urutau-io/fleet/internal/credentials"
)

func TestAccessProvider(t *testing.T) {
	ap := func(name, server string) clusterinventoryv1alpha1.AccessProvider {
		return clusterinventoryv1alpha1.AccessProvider{Name: name, Cluster: clientcmdv1.Cluster{Server: server}}
	}
	tests := []struct {
		name       string
		status     clusterinventoryv1alpha1.ClusterProfileStatus
		wantServer string // "" means an invalid-access error
	}{
		{name: "no status", status: clusterinventoryv1alpha1.ClusterProfileStatus{}},
		{
			name:       "accessProviders",
			status:     clusterinventoryv1alpha1.ClusterProfileStatus{AccessProviders: []clusterinventoryv1alpha1.AccessProvider{ap("other", "x"), ap(DefaultAccessProviderName, "https://a")}},
			wantServer: "https://a",
		},
		{
			name:       "deprecated credentialProviders",
			status:     clusterinventoryv1alpha1.ClusterProfileStatus{CredentialProviders: []clusterinventoryv1alpha1.AccessProvider{ap(DefaultAccessProviderName, "https://c")}},
			wantServer: "https://c",
		},
		{
			name: "accessProviders win over credentialProviders",
			status: clusterinventoryv1alpha1.ClusterProfileStatus{
				AccessProviders:     []clusterinventoryv1alpha1.AccessProvider{ap(DefaultAccessProviderName, "https://a")},
				CredentialProviders: []clusterinventoryv1alpha1.AccessProvider{ap(DefaultAccessProviderName, "https://c")},
			},
			wantServer: "https://a",
		},
		{
			name:   "only other providers",
			status: clusterinventoryv1alpha1.ClusterProfileStatus{AccessProviders: []clusterinventoryv1alpha1.AccessProvider{ap("open-cluster-management", "https://o")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &clusterinventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}, Status: tt.status}
			got, err := accessProvider(p, DefaultAccessProviderName)
			if tt.wantServer == "" {
				if !errors.Is(err, errInvalidAccess) {
					t.Fatalf("err = %v, want an invalid-access error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Cluster.Server != tt.wantServer {
				t.Errorf("server = %q, want %q", got.Cluster.Server, tt.wantServer)
			}
		})
	}
}

func TestSecretRef(t *testing.T) {
	withExt := func(name, raw string) *clusterinventoryv1alpha1.AccessProvider {
		return &clusterinventoryv1alpha1.AccessProvider{Name: DefaultAccessProviderName, Cluster: clientcmdv1.Cluster{
			Extensions: []clientcmdv1.NamedExtension{{Name: name, Extension: runtime.RawExtension{Raw: []byte(raw)}}},
		}}
	}
	tests := []struct {
		name    string
		ap      *clusterinventoryv1alpha1.AccessProvider
		want    SecretRef
		wantErr string
	}{
		{name: "no extension", ap: &clusterinventoryv1alpha1.AccessProvider{Name: DefaultAccessProviderName}, wantErr: "no \"client.authentication.k8s.io/exec\" extension"},
		{name: "other extension", ap: withExt("example.com/x", `{"name":"s"}`), wantErr: "no \"client.authentication.k8s.io/exec\" extension"},
		{name: "defaults key and namespace", ap: withExt(execExtensionName, `{"name":"s"}`), want: SecretRef{Name: "s", Key: DefaultSecretKey, Namespace: "hubns"}},
		{
			name: "everything set",
			ap:   withExt(execExtensionName, `{"name":"s","key":"value","namespace":"hubns","context":"admin"}`),
			want: SecretRef{Name: "s", Key: "value", Namespace: "hubns", Context: "admin"},
		},
		{name: "other namespace refused", ap: withExt(execExtensionName, `{"name":"s","namespace":"kube-system"}`), wantErr: "must be in the profile's namespace"},
		{name: "no name", ap: withExt(execExtensionName, `{"key":"k"}`), wantErr: "names no Secret"},
		{name: "not JSON", ap: withExt(execExtensionName, `[`), wantErr: "extension"},
		{
			name: "round trip of NewAccessProvider",
			ap: func() *clusterinventoryv1alpha1.AccessProvider {
				ap := NewAccessProvider("https://m", nil, SecretRef{Name: "m-kubeconfig", Context: "c"})
				return &ap
			}(),
			want: SecretRef{Name: "m-kubeconfig", Key: DefaultSecretKey, Namespace: "hubns", Context: "c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := secretRef(tt.ap, "hubns")
			if tt.wantErr != "" {
				if !errors.Is(err, errInvalidAccess) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want an invalid-access error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ref = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// kubeconfig writes a kubeconfig whose current context is "main" with user u; context "other"
// uses a token user.
func kubeconfig(t *testing.T, u *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://ignored-server"}
	cfg.AuthInfos["u"] = u
	cfg.AuthInfos["token-user"] = &clientcmdapi.AuthInfo{Token: "other-token"}
	cfg.Contexts["main"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "token-user"}
	cfg.Contexts["dangling"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "nobody"}
	cfg.CurrentContext = "main"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAccessOf(t *testing.T) {
	certUser := &clientcmdapi.AuthInfo{ClientCertificateData: []byte("CERT"), ClientKeyData: []byte("KEY")}
	cluster := clientcmdv1.Cluster{Server: "https://member:6443", CertificateAuthorityData: []byte("CA"), TLSServerName: "member"}
	secret := func(data []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hubns", Name: "s"}, Data: map[string][]byte{"kubeconfig": data}}
	}
	ref := SecretRef{Name: "s", Key: "kubeconfig", Namespace: "hubns"}
	allowlist, err := credentials.ParseAllowlist([]string{"member"})
	if err != nil {
		t.Fatal(err)
	}
	token := secret(kubeconfig(t, &clientcmdapi.AuthInfo{Token: "t"}))
	tests := []struct {
		name       string
		cluster    clientcmdv1.Cluster
		secret     *corev1.Secret
		ref        SecretRef
		policy     credentials.Policy
		want       access
		wantErr    string
		wantReason credentials.Reason // a credentials refusal (event and metric), else only invalid access
	}{
		{
			name: "client certificate from the current context; server and CA from the profile",
			// The kubeconfig's own server is ignored: the profile says where the member is.
			cluster: cluster, secret: secret(kubeconfig(t, certUser)), ref: ref,
			want: access{server: "https://member:6443", caData: "CA", tlsServerName: "member", certData: "CERT", keyData: "KEY"},
		},
		{
			name:    "named context",
			cluster: cluster, secret: secret(kubeconfig(t, certUser)), ref: SecretRef{Name: "s", Key: "kubeconfig", Context: "other"},
			want: access{server: "https://member:6443", caData: "CA", tlsServerName: "member", token: "other-token"},
		},
		{
			name:    "proxy and insecure carried over when the admin allows them",
			cluster: clientcmdv1.Cluster{Server: "https://m", ProxyURL: "http://proxy:3128", InsecureSkipTLSVerify: true},
			secret:  token, ref: ref, policy: credentials.Policy{AllowProxy: true, AllowInsecure: true},
			want: access{server: "https://m", proxyURL: "http://proxy:3128", insecure: true, token: "t"},
		},
		{name: "server in the allow-list", cluster: cluster, secret: token, ref: ref, policy: credentials.Policy{Servers: allowlist},
			want: access{server: "https://member:6443", caData: "CA", tlsServerName: "member", token: "t"}},
		{name: "proxy refused", cluster: clientcmdv1.Cluster{Server: "https://m", CertificateAuthorityData: []byte("CA"), ProxyURL: "http://attacker:3128"},
			secret: token, ref: ref, wantErr: "proxy-url is refused", wantReason: credentials.ReasonProxy},
		{name: "insecure refused", cluster: clientcmdv1.Cluster{Server: "https://attacker", InsecureSkipTLSVerify: true},
			secret: token, ref: ref, wantErr: "insecure-skip-tls-verify is refused", wantReason: credentials.ReasonInsecureTLS},
		{name: "http server refused", cluster: clientcmdv1.Cluster{Server: "http://m:8080", CertificateAuthorityData: []byte("CA")},
			secret: token, ref: ref, wantErr: "https://", wantReason: credentials.ReasonNotHTTPS},
		{name: "no CA refused", cluster: clientcmdv1.Cluster{Server: "https://m"}, secret: token, ref: ref, wantErr: "certificate-authority-data", wantReason: credentials.ReasonNoCA},
		{name: "server outside the allow-list", cluster: clientcmdv1.Cluster{Server: "https://10.0.0.1", CertificateAuthorityData: []byte("CA")},
			secret: token, ref: ref, policy: credentials.Policy{Servers: allowlist}, wantErr: "allowlist", wantReason: credentials.ReasonServerNotAllowed},
		{name: "no server", cluster: clientcmdv1.Cluster{}, secret: secret(kubeconfig(t, certUser)), ref: ref, wantErr: "no server", wantReason: credentials.ReasonNoContext},
		{name: "CA file path", cluster: clientcmdv1.Cluster{Server: "https://m", CertificateAuthority: "/etc/ca"}, secret: secret(kubeconfig(t, certUser)), ref: ref,
			wantErr: "is a file path", wantReason: credentials.ReasonFilePath},
		{name: "insecure with CA", cluster: clientcmdv1.Cluster{Server: "https://m", InsecureSkipTLSVerify: true, CertificateAuthorityData: []byte("CA")},
			secret: secret(kubeconfig(t, certUser)), ref: ref, policy: credentials.Policy{AllowInsecure: true}, wantErr: "exclude each other", wantReason: credentials.ReasonInsecureTLS},
		{name: "missing key", cluster: cluster, secret: secret(kubeconfig(t, certUser)), ref: SecretRef{Name: "s", Key: "value"}, wantErr: "has no key \"value\""},
		{name: "not a kubeconfig", cluster: cluster, secret: secret([]byte("{{{")), ref: ref, wantErr: "key \"kubeconfig\": the kubeconfig does not parse", wantReason: credentials.ReasonUnparseable},
		{name: "unknown context", cluster: cluster, secret: secret(kubeconfig(t, certUser)), ref: SecretRef{Name: "s", Key: "kubeconfig", Context: "nope"}, wantErr: "no context \"nope\""},
		{name: "unknown user", cluster: cluster, secret: secret(kubeconfig(t, certUser)), ref: SecretRef{Name: "s", Key: "kubeconfig", Context: "dangling"}, wantErr: "no user \"nobody\""},
		{name: "exec refused", cluster: cluster, secret: secret(kubeconfig(t, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/hub", APIVersion: "client.authentication.k8s.io/v1"}})), ref: ref,
			wantErr: `Secret hubns/s: user "u": exec credential plugins (program hub) are refused`, wantReason: credentials.ReasonExec},
		{name: "exec refused in a user the context does not select", cluster: cluster, ref: SecretRef{Name: "s", Key: "kubeconfig", Context: "other"},
			secret: secret(kubeconfig(t, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "sh", APIVersion: "client.authentication.k8s.io/v1"}})), wantErr: "exec", wantReason: credentials.ReasonExec},
		{name: "token file refused", cluster: cluster, secret: secret(kubeconfig(t, &clientcmdapi.AuthInfo{TokenFile: "/var/run/token"})), ref: ref, wantErr: "tokenFile", wantReason: credentials.ReasonFilePath},
		{name: "client key file refused", cluster: cluster, secret: secret(kubeconfig(t, &clientcmdapi.AuthInfo{ClientCertificateData: []byte("C"), ClientKey: "/k"})), ref: ref,
			wantErr: "client-key", wantReason: credentials.ReasonFilePath},
		{name: "impersonation refused", cluster: cluster, secret: secret(kubeconfig(t, &clientcmdapi.AuthInfo{Token: "t", Impersonate: "system:admin"})), ref: ref,
			wantErr: "impersonation", wantReason: credentials.ReasonImpersonation},
		{name: "certificate without key", cluster: cluster, secret: secret(kubeconfig(t, &clientcmdapi.AuthInfo{ClientCertificateData: []byte("CERT")})), ref: ref, wantErr: "go together", wantReason: credentials.ReasonNoCredentials},
		{name: "no credentials", cluster: cluster, secret: secret(kubeconfig(t, &clientcmdapi.AuthInfo{})), ref: ref, wantErr: "neither a token nor client-certificate-data", wantReason: credentials.ReasonNoCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := accessOf(tt.cluster, tt.secret, tt.ref, tt.policy)
			if tt.wantErr != "" {
				if !errors.Is(err, errInvalidAccess) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want an invalid-access error containing %q", err, tt.wantErr)
				}
				if got := credentials.ReasonOf(err); got != tt.wantReason {
					t.Errorf("reason = %q, want %q", got, tt.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("access = %+v\nwant     %+v", got, tt.want)
			}
		})
	}
}

func TestBound(t *testing.T) {
	secret := func(name string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hubns", Name: name, Labels: labels}}
	}
	tests := []struct {
		name   string
		secret *corev1.Secret
		ok     bool
	}{
		{name: "same name", secret: secret("member-a", nil), ok: true},
		{name: "label names the profile", secret: secret("member-a-kubeconfig", map[string]string{BoundProfileLabel: "member-a"}), ok: true},
		{name: "another member's Secret", secret: secret("member-b", nil)},
		{name: "another member's bound Secret", secret: secret("member-b-kubeconfig", map[string]string{BoundProfileLabel: "member-b"})},
		{name: "unlabelled Secret of another name", secret: secret("member-a-kubeconfig", nil)},
		// The label alone decides: a Secret of the profile's name that is bound to another
		// profile is that profile's.
		{name: "Secret of the profile's name bound to another profile", secret: secret("member-a", map[string]string{BoundProfileLabel: "member-b"})},
		{name: "Secret of the profile's name with an empty binding", secret: secret("member-a", map[string]string{BoundProfileLabel: ""})},
	}
	for _, tt := range tests {
		err := bound("member-a", tt.secret)
		if (err == nil) != tt.ok {
			t.Errorf("%s: bound = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil && (credentials.ReasonOf(err) != credentials.ReasonUnboundSecret || !errors.Is(err, errInvalidAccess) ||
			!strings.Contains(err.Error(), `not bound to ClusterProfile "member-a"`) || !strings.Contains(err.Error(), BoundProfileLabel+"=member-a")) {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

func TestRESTConfig(t *testing.T) {
	a := access{server: "https://m", caData: "CA", tlsServerName: "m", proxyURL: "http://proxy:3128", token: "t", certData: "C", keyData: "K"}
	cfg := a.restConfig()
	if cfg.Host != "https://m" || cfg.BearerToken != "t" || string(cfg.CAData) != "CA" || cfg.ServerName != "m" ||
		string(cfg.CertData) != "C" || string(cfg.KeyData) != "K" {
		t.Errorf("rest.Config = %+v", cfg)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://m/api", nil)
	u, err := cfg.Proxy(req)
	if err != nil || u.String() != "http://proxy:3128" {
		t.Errorf("proxy = %v, %v", u, err)
	}
	if (access{server: "https://m"}).restConfig().Proxy != nil {
		t.Error("a proxy is set without proxy-url")
	}
}

// TestAccessOfEchoesNoSecret: a ClusterProfile's Secret whose kubeconfig has two users of one name
// (clientcmd's error prints both, tokens included), an exec user with a secret argument, or a
// profile whose server or proxy carries a password: the refusal names the problem and quotes none
// of it. The secret is random, planted fresh in every case.
func TestAccessOfEchoesNoSecret(t *testing.T) {
	s := "cnry" + rand.Text()
	twoUsers := []byte(`apiVersion: v1
kind: Config
current-context: m
contexts: [{name: m, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://m", certificate-authority-data: Q0E=}}]
users:
- {name: u, user: {token: ` + s + `}}
- {name: u, user: {token: ` + s + `-2}}
`)
	withKey := func(data []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hubns", Name: "s"}, Data: map[string][]byte{"kubeconfig": data}}
	}
	ca := []byte("CA")
	ref := SecretRef{Name: "s", Key: "kubeconfig"}
	for name, tc := range map[string]struct {
		cluster clientcmdv1.Cluster
		secret  *corev1.Secret
		policy  credentials.Policy
	}{
		"two users of one name": {cluster: clientcmdv1.Cluster{Server: "https://m", CertificateAuthorityData: ca}, secret: withKey(twoUsers)},
		"exec argument": {cluster: clientcmdv1.Cluster{Server: "https://m", CertificateAuthorityData: ca},
			secret: withKey(kubeconfig(t, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/usr/bin/tool", Args: []string{"--token=" + s}, APIVersion: "client.authentication.k8s.io/v1"}}))},
		"server password": {cluster: clientcmdv1.Cluster{Server: "https://u:" + s + "@m", CertificateAuthorityData: ca}, secret: withKey(kubeconfig(t, &clientcmdapi.AuthInfo{Token: "t"}))},
		"proxy password to the metadata endpoint": {cluster: clientcmdv1.Cluster{Server: "https://m", CertificateAuthorityData: ca, ProxyURL: "http://u:" + s + "@169.254.169.254:3128"},
			secret: withKey(kubeconfig(t, &clientcmdapi.AuthInfo{Token: "t"})), policy: credentials.Policy{AllowProxy: true}},
		"token pasted as tokenFile": {cluster: clientcmdv1.Cluster{Server: "https://m", CertificateAuthorityData: ca}, secret: withKey(kubeconfig(t, &clientcmdapi.AuthInfo{TokenFile: s}))},
	} {
		_, err := accessOf(tc.cluster, tc.secret, ref, tc.policy)
		if credentials.ReasonOf(err) == "" {
			t.Fatalf("%s: err = %v, want a refusal with a reason", name, err)
		}
		if strings.Contains(err.Error(), s) {
			t.Errorf("%s: the secret appears in %q", name, err)
		}
	}
}
