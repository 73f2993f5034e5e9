package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/testenv"
)

// writeKubeconfig writes a kubeconfig with two contexts into dir; "a" (current) uses a client
// certificate referenced by a relative file path.
func writeKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	for name, data := range map[string]string{"a.crt": "CERT-A", "a.key": "KEY-A"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["a"] = &clientcmdapi.Cluster{Server: "https://a:6443", CertificateAuthorityData: []byte("CA-A")}
	cfg.Clusters["b"] = &clientcmdapi.Cluster{Server: "https://b:6443", CertificateAuthorityData: []byte("CA-B")}
	// Contexts the hub would refuse.
	cfg.Clusters["insecure"] = &clientcmdapi.Cluster{Server: "https://attacker:6443", InsecureSkipTLSVerify: true}
	cfg.Clusters["http"] = &clientcmdapi.Cluster{Server: "http://b:8080", CertificateAuthorityData: []byte("CA-B")}
	cfg.AuthInfos["exec"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/hub", APIVersion: "client.authentication.k8s.io/v1"}}
	cfg.AuthInfos["as"] = &clientcmdapi.AuthInfo{Token: "t", Impersonate: "system:admin"}
	cfg.Contexts["exec"] = &clientcmdapi.Context{Cluster: "b", AuthInfo: "exec"}
	cfg.Contexts["as"] = &clientcmdapi.Context{Cluster: "b", AuthInfo: "as"}
	cfg.Contexts["insecure"] = &clientcmdapi.Context{Cluster: "insecure", AuthInfo: "b"}
	cfg.Contexts["http"] = &clientcmdapi.Context{Cluster: "http", AuthInfo: "b"}
	cfg.AuthInfos["a"] = &clientcmdapi.AuthInfo{ClientCertificate: "a.crt", ClientKey: "a.key"}
	cfg.AuthInfos["b"] = &clientcmdapi.AuthInfo{Token: "token-b"}
	cfg.Contexts["a"] = &clientcmdapi.Context{Cluster: "a", AuthInfo: "a"}
	cfg.Contexts["b"] = &clientcmdapi.Context{Cluster: "b", AuthInfo: "b"}
	cfg.CurrentContext = "a"
	path := filepath.Join(dir, "config")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func memberSecret(t *testing.T, args ...string) *corev1.Secret {
	t.Helper()
	var out bytes.Buffer
	if err := run(append([]string{"member-secret"}, args...), &out); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := yaml.UnmarshalStrict(out.Bytes(), s); err != nil {
		t.Fatalf("output is not a Secret: %v\n%s", err, out.String())
	}
	return s
}

func TestMemberSecret(t *testing.T) {
	path := writeKubeconfig(t, t.TempDir())

	t.Run("current context, files inlined, labels and annotations", func(t *testing.T) {
		s := memberSecret(t, "--name=member-a", "--kubeconfig", path,
			"--labels=region=eu,tier=prod", "--annotations", inventory.KEDAPrometheusAddressKey+"=http://prom.a:9090")
		if s.Kind != "Secret" || s.APIVersion != "v1" || s.Namespace != "urutau-system" || s.Name != "member-a" {
			t.Errorf("Secret = %s %s %s/%s", s.APIVersion, s.Kind, s.Namespace, s.Name)
		}
		want := map[string]string{inventory.KubeconfigSecretLabel: "true", "region": "eu", "tier": "prod"}
		if len(s.Labels) != len(want) {
			t.Errorf("labels = %v, want %v", s.Labels, want)
		}
		for k, v := range want {
			if s.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, s.Labels[k], v)
			}
		}
		if got := s.Annotations[inventory.KEDAPrometheusAddressKey]; got != "http://prom.a:9090" {
			t.Errorf("annotation = %q", got)
		}
		if !(inventory.KubeconfigSecrets{Namespace: "urutau-system"}).IsEntry(s) {
			t.Error("not an entry of the kubeconfig inventory")
		}
		kc, err := clientcmd.Load(s.Data[inventory.KubeconfigSecretKey])
		if err != nil {
			t.Fatal(err)
		}
		if len(kc.Contexts) != 1 || kc.CurrentContext != "a" || len(kc.Clusters) != 1 || len(kc.AuthInfos) != 1 {
			t.Errorf("kubeconfig not reduced to context a: %+v", kc)
		}
		u := kc.AuthInfos["a"]
		if string(u.ClientCertificateData) != "CERT-A" || string(u.ClientKeyData) != "KEY-A" || u.ClientCertificate != "" {
			t.Errorf("files not inlined: %+v", u)
		}
		// The hub's own loader accepts it.
		if _, err := clientcmd.RESTConfigFromKubeConfig(s.Data[inventory.KubeconfigSecretKey]); err != nil {
			t.Errorf("the hub cannot use the kubeconfig: %v", err)
		}
	})

	t.Run("named context and namespace", func(t *testing.T) {
		s := memberSecret(t, "--name=member-b", "--kubeconfig="+path, "--context=b", "--namespace=fleet")
		if s.Namespace != "fleet" {
			t.Errorf("namespace = %q", s.Namespace)
		}
		kc, err := clientcmd.Load(s.Data[inventory.KubeconfigSecretKey])
		if err != nil {
			t.Fatal(err)
		}
		if kc.CurrentContext != "b" || len(kc.Contexts) != 1 || kc.AuthInfos["b"].Token != "token-b" {
			t.Errorf("kubeconfig = %+v", kc)
		}
	})
}

func TestMemberSecretErrors(t *testing.T) {
	path := writeKubeconfig(t, t.TempDir())
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "nothing", args: nil, want: []string{"--name is required", "--kubeconfig is required"}},
		{name: "bad name", args: []string{"--name=Member_A", "--kubeconfig=" + path}, want: []string{"--name \"Member_A\""}},
		{name: "bad label value", args: []string{"--name=a", "--kubeconfig=" + path, "--labels=url=http://x"}, want: []string{"--labels url=http://x"}},
		{name: "reserved label", args: []string{"--name=a", "--kubeconfig=" + path, "--labels=sigs.k8s.io/multicluster-runtime-kubeconfig=false"}, want: []string{"set by member-secret itself"}},
		{name: "bad annotation key", args: []string{"--name=a", "--kubeconfig=" + path, "--annotations=-bad=x"}, want: []string{"--annotations -bad"}},
		{name: "missing file", args: []string{"--name=a", "--kubeconfig=/nonexistent/config"}, want: []string{"reading the kubeconfig"}},
		{name: "unknown context", args: []string{"--name=a", "--kubeconfig=" + path, "--context=zz"}, want: []string{"zz"}},
		{name: "positional argument", args: []string{"--name=a", "--kubeconfig=" + path, "extra"}, want: []string{"unexpected arguments"}},
		// What the hub would refuse is refused here already, with the hub's reason.
		{name: "exec user", args: []string{"--name=a", "--kubeconfig=" + path, "--context=exec"}, want: []string{"the hub would refuse this kubeconfig (exec)", `program hub`}},
		{name: "impersonation", args: []string{"--name=a", "--kubeconfig=" + path, "--context=as"}, want: []string{"(impersonation)"}},
		{name: "insecure TLS", args: []string{"--name=a", "--kubeconfig=" + path, "--context=insecure"}, want: []string{"(insecure-tls)", "--member-allow-insecure-tls"}},
		{name: "http server", args: []string{"--name=a", "--kubeconfig=" + path, "--context=http"}, want: []string{"(not-https)"}},
		{name: "server outside the allow-list", args: []string{"--name=a", "--kubeconfig=" + path, "--context=b", "--member-server-allowlist=*.example"}, want: []string{"(server-not-allowed)"}},
		{name: "bad allow-list", args: []string{"--name=a", "--kubeconfig=" + path, "--member-server-allowlist=a.*"}, want: []string{"server allow-list entry"}},
		{name: "bad service account", args: []string{"--name=a", "--kubeconfig=" + path, "--service-account=hub"}, want: []string{"--service-account \"hub\": want NAMESPACE/NAME"}},
		{name: "token too short", args: []string{"--name=a", "--kubeconfig=" + path, "--service-account=ns/hub", "--token-duration=1m"}, want: []string{"shorter than 10m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(append([]string{"member-secret"}, tt.args...), &bytes.Buffer{})
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestMemberSecretAllowsWhatTheAdminAllows: insecure TLS passes with the flag the hub has too.
func TestMemberSecretAllowsWhatTheAdminAllows(t *testing.T) {
	path := writeKubeconfig(t, t.TempDir())
	s := memberSecret(t, "--name=a", "--kubeconfig="+path, "--context=insecure", "--member-allow-insecure-tls")
	kc, err := clientcmd.Load(s.Data[inventory.KubeconfigSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	if !kc.Clusters["insecure"].InsecureSkipTLSVerify {
		t.Errorf("kubeconfig = %+v", kc.Clusters)
	}
}

func TestMemberSecretHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"member-secret", "--help"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "hub member-secret prints") || !strings.Contains(out.String(), "--kubeconfig") {
		t.Errorf("help:\n%s", out.String())
	}
}

// TestMemberSecretServiceAccountToken mints a short-lived token with TokenRequest against a real API
// server: the Secret carries a token of the ServiceAccount, not the admin's credentials, and the
// hub's screening admits it.
func TestMemberSecretServiceAccountToken(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real API server; runs without -short")
	}
	ctx := t.Context()
	clusters, err := testenv.Start(ctx, "member")
	if err != nil {
		t.Fatal(err)
	}
	member := clusters[0]
	t.Cleanup(func() { _ = member.Stop() })
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "urutau-fleet-system"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-fleet-system", Name: "urutau-fleet-hub"}},
	} {
		if err := member.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := member.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := os.WriteFile(path, admin, 0o600); err != nil {
		t.Fatal(err)
	}

	before := time.Now()
	s := memberSecret(t, "--name=member-a", "--kubeconfig="+path, "--service-account=urutau-fleet-system/urutau-fleet-hub", "--token-duration=1h")
	expires, err := time.Parse(time.RFC3339, s.Annotations[AnnotationCredentialsExpireAt])
	if err != nil {
		t.Fatalf("annotation %s: %v", AnnotationCredentialsExpireAt, err)
	}
	if expires.Before(before.Add(50*time.Minute)) || expires.After(before.Add(70*time.Minute)) {
		t.Errorf("token expires at %s, want about an hour from %s", expires, before)
	}
	data := s.Data[inventory.KubeconfigSecretKey]
	kc, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range kc.AuthInfos {
		if len(u.ClientCertificateData) > 0 || len(u.ClientKeyData) > 0 || u.Token == "" {
			t.Errorf("user %q carries more than a token: %+v", name, u)
		}
	}
	if _, err := credentials.ScreenKubeconfig(data, credentials.Policy{}); err != nil {
		t.Fatalf("the hub would refuse it: %v", err)
	}
	// Who the member sees.
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:urutau-fleet-system:urutau-fleet-hub" {
		t.Errorf("the member sees %q", got)
	}

	// A ServiceAccount that does not exist is a clear error.
	err = run([]string{"member-secret", "--name=a", "--kubeconfig=" + path, "--service-account=urutau-fleet-system/nobody"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "requesting a token for ServiceAccount urutau-fleet-system/nobody") {
		t.Errorf("err = %v", err)
	}
}
