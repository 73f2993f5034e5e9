package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/fleet/inventory"
)

const memberSecretCommand = "member-secret"

const memberSecretDescription = `hub member-secret prints the kubeconfig Secret that makes a cluster a member of the fleet. Apply it
to the hub (kubectl apply -f -). The member's name is the Secret's name; --labels are what
spec.placement.clusterSelector matches; --annotations carry per-member settings such as
urutau.io/keda-prometheus-address. The kubeconfig is reduced to one context (--context, or the
current one) and file references are inlined, because the hub cannot read the files of this
machine. The same Secret serves --cluster-provider=cluster-profile when a ClusterProfile's access
provider names it. The kubeconfig's identity should be the hub's least-privilege identity of
config/spoke, not an admin.

Usage:
  hub member-secret --name NAME --kubeconfig FILE [flags]

Flags:
`

type memberSecretOptions struct {
	name, kubeconfigPath, namespace, context string
	labels, annotations                      map[string]string
}

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
	if err != nil {
		return fmt.Errorf("member-secret: %w\nrun 'hub member-secret --help' for usage", err)
	}

	kc, err := memberKubeconfig(o.kubeconfigPath, o.context)
	if err != nil {
		return fmt.Errorf("member-secret: %w", err)
	}
	secret := inventory.NewKubeconfigSecret(o.namespace, o.name, kc, o.labels, o.annotations)
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

// memberKubeconfig loads the kubeconfig at path and reduces it to one self-contained context:
// only that context, its cluster and user, with referenced files inlined.
func memberKubeconfig(path, context string) ([]byte, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg, err := clientcmd.LoadFromFile(path) // resolves relative file references against path
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig %s: %w", path, err)
	}
	if context != "" {
		cfg.CurrentContext = context
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("inlining the files of kubeconfig %s: %w", path, err)
	}
	return clientcmd.Write(*cfg)
}
