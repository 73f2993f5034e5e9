package join

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// endpoint is how the hub reaches a member's API server.
type endpoint struct {
	Server     string
	CAData     []byte
	ServerName string
}

// memberEndpoint takes the member's address and CA from the kubeconfig join was given, or from the
// overrides: the address the person running join uses is not always one the hub's pods can reach.
func memberEndpoint(cfg *rest.Config, server, caFile string) (endpoint, error) {
	e := endpoint{Server: cfg.Host, CAData: cfg.CAData, ServerName: cfg.ServerName}
	if server != "" {
		e.Server = server
	}
	switch {
	case caFile != "":
		raw, err := os.ReadFile(caFile)
		if err != nil {
			return e, fmt.Errorf("--member-ca-file: %w", err)
		}
		e.CAData = raw
	case len(e.CAData) == 0 && cfg.CAFile != "":
		raw, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return e, fmt.Errorf("reading the member's certificate authority %s: %w", cfg.CAFile, err)
		}
		e.CAData = raw
	}
	u, err := url.Parse(e.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return e, fmt.Errorf("member server %q: must be an https:// URL the hub can reach (set --member-server)", e.Server)
	}
	if len(e.CAData) == 0 {
		return e, errors.New("the member's kubeconfig has no certificate authority (insecure-skip-tls-verify?): give the member's CA with --member-ca-file")
	}
	return e, nil
}

// hubKubeconfig is the kubeconfig the hub uses for the member: one cluster, one token, nothing else.
func hubKubeconfig(member string, e endpoint, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[member] = &clientcmdapi.Cluster{Server: e.Server, CertificateAuthorityData: e.CAData, TLSServerName: e.ServerName}
	cfg.AuthInfos[SpokeServiceAccount] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[member] = &clientcmdapi.Context{Cluster: member, AuthInfo: SpokeServiceAccount}
	cfg.CurrentContext = member
	return clientcmd.Write(*cfg)
}

// Screen refuses a kubeconfig the hub must not be given. It is the one place join screens
// credentials: point it at the hub's own screening (the same rules the hub applies to every
// inventory entry) where that is available.
var Screen = screenKubeconfig

// screenKubeconfig refuses whatever would make the hub run a program, read a file, impersonate,
// or talk to a server without verifying it.
func screenKubeconfig(data []byte) error {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("the kubeconfig does not parse: %w", err)
	}
	var errs []error
	for name, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		switch {
		case err != nil || u.Scheme != "https":
			errs = append(errs, fmt.Errorf("cluster %s: server %q is not https", name, c.Server))
		case c.InsecureSkipTLSVerify || len(c.CertificateAuthorityData) == 0:
			errs = append(errs, fmt.Errorf("cluster %s: the server's certificate would not be verified", name))
		case c.CertificateAuthority != "" || c.ProxyURL != "":
			errs = append(errs, fmt.Errorf("cluster %s: file references and proxies are not allowed", name))
		}
	}
	for name, u := range cfg.AuthInfos {
		switch {
		case u.Exec != nil || u.AuthProvider != nil:
			errs = append(errs, fmt.Errorf("user %s: runs a credential plugin", name))
		case u.TokenFile != "" || u.ClientCertificate != "" || u.ClientKey != "":
			errs = append(errs, fmt.Errorf("user %s: reads files", name))
		case u.Impersonate != "" || len(u.ImpersonateGroups) > 0 || u.ImpersonateUID != "":
			errs = append(errs, fmt.Errorf("user %s: impersonates", name))
		case u.Token == "" && len(u.ClientCertificateData) == 0:
			errs = append(errs, fmt.Errorf("user %s: has no credentials", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("refusing an unsafe kubeconfig: %w", err)
	}
	return nil
}
