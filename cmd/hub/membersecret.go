package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/fleetview"
	"github.com/urutau-io/fleet/internal/inventory"
)

const memberSecretCommand = "member-secret"

const memberSecretDescription = `hub member-secret prints the kubeconfig Secret that makes a cluster a member of the fleet. Apply it
to the hub (kubectl apply -f -). The member's name is the Secret's name; --labels are what
spec.placement.clusterSelector matches; --annotations carry per-member settings such as
urutau.io/keda-prometheus-address. The kubeconfig is reduced to one context (--context, or the
current one) and file references are inlined, because the hub cannot read the files of this
machine. The same Secret serves --cluster-provider=cluster-profile when a ClusterProfile's access
provider names it (the Secret must then be bound to the profile: same name, or the label
urutau.io/cluster-profile=<profile>).

The identity the hub gets should be the hub's least-privilege identity of config/spoke, not an
admin: with --service-account urutau-fleet-system/urutau-fleet-hub, member-secret uses the
kubeconfig's own credentials (an admin's, exec plugins included: they run here, never on the hub)
only to request a short-lived token for that ServiceAccount (TokenRequest, --token-duration), and
the Secret carries that token. Run it again before the token expires (the annotation
urutau.io/credentials-expire-at says when) to rotate it.

The result is screened as the hub screens it: no exec, auth-provider, file path, impersonation,
an https server with certificate-authority-data, no proxy or insecure TLS unless the
--member-allow-* flags (the hub's flags of the same names) allow them.

Usage:
  hub member-secret --name NAME --kubeconfig FILE [flags]

Flags:
`

type memberSecretOptions struct {
	name, kubeconfigPath, namespace, context string
	labels, annotations                      map[string]string
	serviceAccount                           string
	tokenDuration                            time.Duration
	policy                                   credentials.Policy
	serverAllowlist                          []string
}

// AnnotationCredentialsExpireAt is set by `hub member-secret --service-account` on the Secret: when
// its token expires (RFC 3339), so that people and alerts know when to run it again. `hub join`
// writes the same one.
const AnnotationCredentialsExpireAt = fleetview.AnnotationCredentialsExpireAt

func newMemberSecretFlagSet(o *memberSecretOptions) *pflag.FlagSet {
	fs := pflag.NewFlagSet(memberSecretCommand, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.name, "name", "", "Member name (the Secret's name). Required.")
	fs.StringVar(&o.kubeconfigPath, "kubeconfig", "", "Kubeconfig of the member cluster, as the hub should use it. Required.")
	fs.StringVar(&o.namespace, "namespace", "urutau-system", "The hub's --cluster-provider-namespace.")
	fs.StringVar(&o.context, "context", "", "Kubeconfig context to keep (default: the current context).")
	fs.StringToStringVar(&o.labels, "labels", nil, "Member labels, k=v,k2=v2.")
	fs.StringToStringVar(&o.annotations, "annotations", nil, "Member annotations, k=v,k2=v2.")
	fs.StringVar(&o.serviceAccount, "service-account", "",
		"NAMESPACE/NAME of the ServiceAccount in the member whose short-lived token the Secret carries (TokenRequest with the kubeconfig's credentials). Empty: the kubeconfig's own credentials.")
	fs.DurationVar(&o.tokenDuration, "token-duration", 24*time.Hour,
		"With --service-account: how long the token lasts (the member's API server may shorten it).")
	fs.BoolVar(&o.policy.AllowProxy, "member-allow-proxy", false, "Allow proxy-url, as the hub flag of that name does.")
	fs.BoolVar(&o.policy.AllowInsecure, "member-allow-insecure-tls", false, "Allow insecure-skip-tls-verify, as the hub flag of that name does.")
	fs.StringSliceVar(&o.serverAllowlist, "member-server-allowlist", nil, "The hub's --member-server-allowlist, to check the server against it.")
	return fs
}

// runMemberSecret prints a member's kubeconfig Secret as YAML on stdout.
func runMemberSecret(args []string, stdout io.Writer) error {
	var o memberSecretOptions
	fs := newMemberSecretFlagSet(&o)
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stdout, memberSecretDescription)
		fmt.Fprint(stdout, fs.FlagUsagesWrapped(100))
		return nil
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err == nil {
		err = o.validate()
	}
	if err == nil {
		o.policy.Servers, err = credentials.ParseAllowlist(o.serverAllowlist)
	}
	if err != nil {
		return fmt.Errorf("member-secret: %w\nrun 'hub member-secret --help' for usage", err)
	}

	// Bounded: the only request is the TokenRequest, to a member that may not answer.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, expires, err := o.kubeconfig(ctx)
	if err != nil {
		return fmt.Errorf("member-secret: %w", err)
	}
	annotations := maps.Clone(o.annotations)
	if !expires.IsZero() {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[AnnotationCredentialsExpireAt] = expires.UTC().Format(time.RFC3339)
	}
	secret := inventory.NewKubeconfigSecret(o.namespace, o.name, kc, o.labels, annotations)
	out, err := yaml.Marshal(secret)
	if err != nil {
		return fmt.Errorf("member-secret: %w", err)
	}
	_, err = stdout.Write(out)
	return err
}

func (o memberSecretOptions) validate() error {
	var errs []error
	if o.name == "" {
		errs = append(errs, errors.New("--name is required"))
	} else if msgs := validation.IsDNS1123Subdomain(o.name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--name %q: %s", o.name, strings.Join(msgs, "; ")))
	}
	if o.kubeconfigPath == "" {
		errs = append(errs, errors.New("--kubeconfig is required"))
	}
	if o.serviceAccount != "" {
		ns, name, ok := strings.Cut(o.serviceAccount, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			errs = append(errs, fmt.Errorf("--service-account %q: want NAMESPACE/NAME", o.serviceAccount))
		}
	}
	if o.tokenDuration < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--token-duration %s: the API server refuses tokens shorter than 10m", o.tokenDuration))
	}
	if msgs := validation.IsDNS1123Label(o.namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--namespace %q: %s", o.namespace, strings.Join(msgs, "; ")))
	}
	for _, k := range slices.Sorted(maps.Keys(o.labels)) {
		if k == inventory.KubeconfigSecretLabel {
			errs = append(errs, fmt.Errorf("--labels: %s is set by member-secret itself", k))
			continue
		}
		for _, m := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(o.labels[k])...) {
			errs = append(errs, fmt.Errorf("--labels %s=%s: %s", k, o.labels[k], m))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.annotations)) {
		for _, m := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("--annotations %s: %s", k, m))
		}
	}
	return errors.Join(errs...)
}

// kubeconfig is the member's kubeconfig as the Secret carries it: one context, files inlined,
// with a fresh ServiceAccount token instead of the user's credentials when --service-account is
// set (expires is then when it expires), screened as the hub screens it.
func (o memberSecretOptions) kubeconfig(ctx context.Context) (kc []byte, expires time.Time, err error) {
	cfg, err := memberKubeconfig(o.kubeconfigPath, o.context)
	if err != nil {
		return nil, time.Time{}, err
	}
	if o.serviceAccount != "" {
		if expires, err = withServiceAccountToken(ctx, cfg, o.serviceAccount, o.tokenDuration); err != nil {
			return nil, time.Time{}, err
		}
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, time.Time{}, err
	}
	if _, err := credentials.ScreenKubeconfig(out, o.policy); err != nil {
		return nil, time.Time{}, fmt.Errorf("the hub would refuse this kubeconfig (%s): %w", credentials.ReasonOf(err), err)
	}
	return out, expires, nil
}

// memberKubeconfig loads the kubeconfig at path and reduces it to one self-contained context:
// only that context, its cluster and user, with referenced files inlined.
func memberKubeconfig(path, contextName string) (*clientcmdapi.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg, err := clientcmd.LoadFromFile(path) // resolves relative file references against path
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig %s: %w", path, err)
	}
	if contextName != "" {
		cfg.CurrentContext = contextName
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("inlining the files of kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// withServiceAccountToken requests a token for the ServiceAccount sa ("namespace/name") of the
// member with cfg's own credentials, and makes it cfg's only user. It returns when the token
// expires.
func withServiceAccountToken(ctx context.Context, cfg *clientcmdapi.Config, sa string, d time.Duration) (time.Time, error) {
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return time.Time{}, fmt.Errorf("connecting to the member: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return time.Time{}, err
	}
	ns, name, _ := strings.Cut(sa, "/")
	seconds := int64(d / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("requesting a token for ServiceAccount %s in the member: %w", sa, err)
	}
	user := "serviceaccount-" + name
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{user: {Token: tr.Status.Token}}
	cfg.Contexts[cfg.CurrentContext].AuthInfo = user
	return tr.Status.ExpirationTimestamp.Time, nil
}
