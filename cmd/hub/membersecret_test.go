package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/fleet/inventory"
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
	cfg.Clusters["b"] = &clientcmdapi.Cluster{Server: "https://b:6443"}
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

func TestMemberSecretHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"member-secret", "--help"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "hub member-secret prints") || !strings.Contains(out.String(), "--kubeconfig") {
		t.Errorf("help:\n%s", out.String())
	}
}
