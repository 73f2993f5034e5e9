package clusterprofile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	"github.com/urutau-io/fleet/internal/credentials"
)

const (
	// DefaultAccessProviderName is the status.accessProviders entry the provider reads: the name of
	// upstream's kubeconfig-secretreader plugin, whose extension format we share.
	DefaultAccessProviderName = "kubeconfig-secretreader"
	// DefaultSecretKey is the Secret data key used when the extension names none: the kubeconfig
	// provider's key, so one Secret serves both providers.
	DefaultSecretKey = "kubeconfig"
	// execExtensionName is the kubeconfig cluster extension that client-go hands to exec plugins;
	// the secret reader's {name, key, namespace, context} live in it.
	execExtensionName = "client.authentication.k8s.io/exec"
)

// SecretRef names the kubeconfig Secret holding a member's credentials. Its JSON is the
// kubeconfig-secretreader plugin's config.
type SecretRef struct {
	Name      string `json:"name"`
	Key       string `json:"key,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Context   string `json:"context,omitempty"`
}

// NewAccessProvider is the status.accessProviders entry that points the provider at a member's API
// server (server, caData) with credentials from the kubeconfig Secret ref. Cluster managers, the
// demo and tests write it into a ClusterProfile's status.
func NewAccessProvider(server string, caData []byte, ref SecretRef) clusterinventoryv1alpha1.AccessProvider {
	raw, _ := json.Marshal(ref) // cannot fail: strings only
	return clusterinventoryv1alpha1.AccessProvider{
		Name: DefaultAccessProviderName,
		Cluster: clientcmdv1.Cluster{
			Server:                   server,
			CertificateAuthorityData: caData,
			Extensions: []clientcmdv1.NamedExtension{{
				Name:      execExtensionName,
				Extension: runtime.RawExtension{Raw: raw},
			}},
		},
	}
}

// errInvalidAccess marks errors that only a change to the profile or its Secret can fix: the
// provider disengages the member and waits for that change instead of retrying.
var errInvalidAccess = errors.New("invalid access")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalidAccess, fmt.Sprintf(format, args...))
}

// accessProvider returns the profile's entry named name. AccessProviders win over the deprecated
// CredentialProviders, as the API documents.
func accessProvider(profile *clusterinventoryv1alpha1.ClusterProfile, name string) (*clusterinventoryv1alpha1.AccessProvider, error) {
	for _, list := range [][]clusterinventoryv1alpha1.AccessProvider{profile.Status.AccessProviders, profile.Status.CredentialProviders} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], nil
			}
		}
	}
	return nil, invalid("ClusterProfile %s/%s has no status.accessProviders entry named %q", profile.Namespace, profile.Name, name)
}

// secretRef reads the Secret reference of an access provider entry and checks it stays in
// namespace.
func secretRef(ap *clusterinventoryv1alpha1.AccessProvider, namespace string) (SecretRef, error) {
	for _, ext := range ap.Cluster.Extensions {
		if ext.Name != execExtensionName {
			continue
		}
		var ref SecretRef
		if err := json.Unmarshal(ext.Extension.Raw, &ref); err != nil {
			return SecretRef{}, invalid("access provider %q: extension %q is not a JSON object {name, key, namespace, context}", ap.Name, execExtensionName)
		}
		if ref.Name == "" {
			return SecretRef{}, invalid("access provider %q: extension %q names no Secret", ap.Name, execExtensionName)
		}
		if ref.Namespace != "" && ref.Namespace != namespace {
			return SecretRef{}, invalid("access provider %q: Secret %s/%s must be in the profile's namespace %q",
				ap.Name, ref.Namespace, ref.Name, namespace)
		}
		ref.Namespace = namespace
		if ref.Key == "" {
			ref.Key = DefaultSecretKey
		}
		return ref, nil
	}
	return SecretRef{}, invalid("access provider %q has no %q extension naming a kubeconfig Secret", ap.Name, execExtensionName)
}

// access is everything that decides how the hub reaches a member. It is comparable: a member whose
// access is unchanged is left engaged, any difference re-engages it.
type access struct {
	server, caData, tlsServerName, proxyURL string
	insecure                                bool
	token, certData, keyData                string
}

// BoundProfileLabel binds a kubeconfig Secret to the ClusterProfile it names. Without the rule,
// whoever writes a ClusterProfile could point any member's credentials at a server, CA and proxy
// of their choosing.
const BoundProfileLabel = "urutau.io/cluster-profile"

// bound refuses a Secret that is not bound to the profile named profile. The label alone decides
// when the Secret carries it: a Secret labelled for another profile is that profile's, whatever
// its name. A Secret without the label is bound to the profile of its own name only.
func bound(profile string, secret *corev1.Secret) error {
	owner, labelled := secret.Labels[BoundProfileLabel]
	switch {
	case labelled && owner == profile:
		return nil
	case labelled:
		return refused(&credentials.Refusal{Reason: credentials.ReasonUnboundSecret, Message: fmt.Sprintf(
			"Secret %s/%s is not bound to ClusterProfile %q: its label %s binds it to %q; a profile may use only a Secret labelled %s=%s, or an unlabelled one of its own name",
			secret.Namespace, secret.Name, profile, BoundProfileLabel, owner, BoundProfileLabel, profile)})
	case secret.Name == profile:
		return nil
	}
	return refused(&credentials.Refusal{Reason: credentials.ReasonUnboundSecret, Message: fmt.Sprintf(
		"Secret %s/%s is not bound to ClusterProfile %q: a profile may use only a Secret labelled %s=%s, or an unlabelled one of its own name",
		secret.Namespace, secret.Name, profile, BoundProfileLabel, profile)})
}

// refused marks a credentials refusal as invalid access too: both the metric/event and the
// provider's "wait for a change" apply.
func refused(r *credentials.Refusal) error { return fmt.Errorf("%w: %w", errInvalidAccess, r) }

// screenCluster applies the credentials rules to the profile's cluster entry: https with CA data,
// no CA file, no proxy or insecure TLS unless p allows them, a server p allows.
func screenCluster(apName string, c clientcmdv1.Cluster, p credentials.Policy) error {
	err := credentials.ScreenCluster("access provider "+apName, &clientcmdapi.Cluster{
		Server: c.Server, TLSServerName: c.TLSServerName, InsecureSkipTLSVerify: c.InsecureSkipTLSVerify,
		CertificateAuthority: c.CertificateAuthority, CertificateAuthorityData: c.CertificateAuthorityData, ProxyURL: c.ProxyURL,
	}, p)
	var r *credentials.Refusal
	if errors.As(err, &r) {
		return refused(r)
	}
	return err
}

// accessOf combines the profile's cluster entry with the user credentials of the kubeconfig in
// secret (context ref.Context, or the current context). Every user entry of that kubeconfig is
// screened, not only the one used.
func accessOf(cluster clientcmdv1.Cluster, secret *corev1.Secret, ref SecretRef, p credentials.Policy) (access, error) {
	if err := screenCluster(DefaultAccessProviderName, cluster, p); err != nil {
		return access{}, err
	}
	data := secret.Data[ref.Key]
	if len(data) == 0 {
		return access{}, invalid("Secret %s/%s has no key %q", secret.Namespace, secret.Name, ref.Key)
	}
	kc, err := credentials.ParseKubeconfig(data) // its refusal quotes nothing of the document
	var r *credentials.Refusal
	if errors.As(err, &r) {
		r.Message = fmt.Sprintf("Secret %s/%s key %q: %s", secret.Namespace, secret.Name, ref.Key, r.Message)
		return access{}, refused(r)
	}
	for _, name := range slices.Sorted(maps.Keys(kc.AuthInfos)) {
		if err := credentials.ScreenUser(name, kc.AuthInfos[name]); errors.As(err, &r) {
			r.Message = fmt.Sprintf("Secret %s/%s: %s", secret.Namespace, secret.Name, r.Message)
			return access{}, refused(r)
		}
	}
	ctxName := ref.Context
	if ctxName == "" {
		ctxName = kc.CurrentContext
	}
	kctx, ok := kc.Contexts[ctxName]
	if !ok {
		return access{}, invalid("Secret %s/%s: kubeconfig has no context %q", secret.Namespace, secret.Name, ctxName)
	}
	user, ok := kc.AuthInfos[kctx.AuthInfo]
	if !ok {
		return access{}, invalid("Secret %s/%s: kubeconfig has no user %q", secret.Namespace, secret.Name, kctx.AuthInfo)
	}
	return access{
		server:        cluster.Server,
		caData:        string(cluster.CertificateAuthorityData),
		tlsServerName: cluster.TLSServerName,
		proxyURL:      cluster.ProxyURL,
		insecure:      cluster.InsecureSkipTLSVerify,
		token:         user.Token,
		certData:      string(user.ClientCertificateData),
		keyData:       string(user.ClientKeyData),
	}, nil
}

func (a access) restConfig() *rest.Config {
	cfg := &rest.Config{
		Host:        a.server,
		BearerToken: a.token,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   a.insecure,
			ServerName: a.tlsServerName,
			CAData:     []byte(a.caData),
			CertData:   []byte(a.certData),
			KeyData:    []byte(a.keyData),
		},
	}
	if a.proxyURL != "" {
		u, _ := url.Parse(a.proxyURL) // checked by screenCluster
		cfg.Proxy = http.ProxyURL(u)
	}
	return cfg
}
