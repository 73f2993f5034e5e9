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
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/urutau-io/fleet/internal/credentials"
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

// TestScreen: join refuses what the hub refuses (internal/credentials), with the hub's policy, and
// names the reason.
func TestScreen(t *testing.T) {
	ok := func() *clientcmdapi.Config {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["m"] = &clientcmdapi.Cluster{Server: "https://m.example:6443", CertificateAuthorityData: []byte("ca")}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
		cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "u"}
		cfg.CurrentContext = "m"
		return cfg
	}
	onlyExample, err := credentials.ParseAllowlist([]string{"*.example"})
	if err != nil {
		t.Fatal(err)
	}
	onlyOther, err := credentials.ParseAllowlist([]string{"*.other"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		edit   func(*clientcmdapi.Config)
		policy credentials.Policy
		want   string
	}{
		{"a token and a CA", func(*clientcmdapi.Config) {}, credentials.Policy{}, ""},
		{"inside the hub's allow-list", func(*clientcmdapi.Config) {}, credentials.Policy{Servers: onlyExample}, ""},
		{"outside the hub's allow-list", func(*clientcmdapi.Config) {}, credentials.Policy{Servers: onlyOther}, "(server-not-allowed)"},
		{"a link-local server", func(c *clientcmdapi.Config) { c.Clusters["m"].Server = "https://169.254.169.254" }, credentials.Policy{}, "(server-not-allowed)"},
		{"plain http", func(c *clientcmdapi.Config) { c.Clusters["m"].Server = "http://m.example" }, credentials.Policy{}, "(not-https)"},
		{"insecure", func(c *clientcmdapi.Config) { c.Clusters["m"].InsecureSkipTLSVerify = true }, credentials.Policy{}, "(insecure-tls)"},
		{"exec plugin", func(c *clientcmdapi.Config) { c.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "sh"} }, credentials.Policy{}, "(exec)"},
		{"token file", func(c *clientcmdapi.Config) { c.AuthInfos["u"].TokenFile = "/var/run/secrets/token" }, credentials.Policy{}, "(file-path)"},
		{"impersonation", func(c *clientcmdapi.Config) { c.AuthInfos["u"].Impersonate = "system:admin" }, credentials.Policy{}, "(impersonation)"},
		{"no credentials", func(c *clientcmdapi.Config) { c.AuthInfos["u"].Token = "" }, credentials.Policy{}, "(no-credentials)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok()
			tc.edit(cfg)
			raw, err := clientcmd.Write(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = screen(raw, tc.policy)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "the hub would refuse") {
				t.Errorf("the error does not say why join refuses: %v", err)
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

// TestSpokeNamesDistinctFromHub: no object of config/spoke, with opened namespaces (even the
// hub's own, which join refuses but an overlay made by hand might open), has the kind, namespace
// and name of an object of the hub's install, whichever overlay: the hub's cluster may join as its
// own member, join force-applies config/spoke, and leave deletes it by name.
func TestSpokeNamesDistinctFromHub(t *testing.T) {
	spoke, err := SpokeObjects([]string{"shop", "urutau-system"})
	if err != nil {
		t.Fatal(err)
	}
	for _, overlay := range []string{"self-signed", "default"} {
		res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../config/hub/"+overlay)
		if err != nil {
			t.Fatal(err)
		}
		hub := map[string]bool{}
		for _, r := range res.Resources() {
			hub[r.GetKind()+"/"+r.GetNamespace()+"/"+r.GetName()] = true
		}
		for _, o := range spoke {
			if k := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName(); hub[k] {
				t.Errorf("config/spoke and config/hub/%s both have %s: joining the hub's cluster to itself overwrites the hub's, and leave deletes it", overlay, k)
			}
		}
	}
}
