package join

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestRequiredAccessFromSpoke: what join checks is what the embedded config/spoke grants the hub,
// and the long-lived token Secret is never applied.
func TestRequiredAccessFromSpoke(t *testing.T) {
	objs, err := SpokeObjects([]string{"shop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			t.Errorf("join would apply Secret %s: it uses a bound token, never a long-lived one", o.GetName())
		}
	}
	required, err := RequiredAccess(objs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range required {
		got = append(got, describe(a))
	}
	for _, want := range []string{"patch statefulsets.apps", "create roles.rbac.authorization.k8s.io", "get secrets", "list pods", "delete scaledobjects.keda.sh"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want+" ") }) {
			t.Errorf("join does not check %q; it checks %v", want, got)
		}
	}
	for _, never := range []string{"escalate ", "bind ", "create cdcpipelines"} {
		if slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, never) }) {
			t.Errorf("join checks %q, which the hub must not hold", never)
		}
	}
}

func TestScreenKubeconfig(t *testing.T) {
	ok := func() *clientcmdapi.Config {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["m"] = &clientcmdapi.Cluster{Server: "https://m.example:6443", CertificateAuthorityData: []byte("ca")}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
		cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "u"}
		cfg.CurrentContext = "m"
		return cfg
	}
	for _, tc := range []struct {
		name string
		edit func(*clientcmdapi.Config)
		want string
	}{
		{"a token and a CA", func(*clientcmdapi.Config) {}, ""},
		{"plain http", func(c *clientcmdapi.Config) { c.Clusters["m"].Server = "http://m.example" }, "not https"},
		{"insecure", func(c *clientcmdapi.Config) { c.Clusters["m"].InsecureSkipTLSVerify = true }, "would not be verified"},
		{"no CA", func(c *clientcmdapi.Config) { c.Clusters["m"].CertificateAuthorityData = nil }, "would not be verified"},
		{"exec plugin", func(c *clientcmdapi.Config) { c.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "sh"} }, "credential plugin"},
		{"token file", func(c *clientcmdapi.Config) { c.AuthInfos["u"].TokenFile = "/var/run/secrets/token" }, "reads files"},
		{"impersonation", func(c *clientcmdapi.Config) { c.AuthInfos["u"].Impersonate = "system:admin" }, "impersonates"},
		{"no credentials", func(c *clientcmdapi.Config) { c.AuthInfos["u"].Token = "" }, "no credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok()
			tc.edit(cfg)
			raw, err := clientcmd.Write(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = screenKubeconfig(raw)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMemberEndpoint(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, []byte("file-ca"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}
	e, err := memberEndpoint(cfg, "https://eu-1.internal:6443", "")
	if err != nil || e.Server != "https://eu-1.internal:6443" || string(e.CAData) != "ca" {
		t.Errorf("--member-server: %+v, %v", e, err)
	}
	if e, err := memberEndpoint(&rest.Config{Host: "https://h", TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}}, "", ""); err != nil || string(e.CAData) != "file-ca" {
		t.Errorf("a CA file in the kubeconfig is inlined: %+v, %v", e, err)
	}
	if _, err := memberEndpoint(&rest.Config{Host: "https://h", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "", ""); err == nil || !strings.Contains(err.Error(), "--member-ca-file") {
		t.Errorf("an insecure member kubeconfig without --member-ca-file: %v", err)
	}
	if _, err := memberEndpoint(cfg, "http://h:80", ""); err == nil || !strings.Contains(err.Error(), "--member-server") {
		t.Errorf("an http server: %v", err)
	}
}
