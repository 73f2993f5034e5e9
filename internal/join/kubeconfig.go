package join

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/urutau-io/fleet/internal/credentials"
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

// screen refuses a kubeconfig the hub would refuse: the hub's own screening of member credentials
// (internal/credentials), with the policy its --member-* flags set.
func screen(kubeconfig []byte, p credentials.Policy) error {
	if _, err := credentials.ScreenKubeconfig(kubeconfig, p); err != nil {
		return fmt.Errorf("refusing the kubeconfig built for the hub, which the hub would refuse too (%s): %w", credentials.ReasonOf(err), err)
	}
	return nil
}
