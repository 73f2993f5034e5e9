package cli

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fleetview"
)

// hubFlags say how to reach the hub: kubectl's connection flags (--kubeconfig, --context, --as,
// --server, --token, --request-timeout, ...) and the hub's namespace.
type hubFlags struct {
	config       *genericclioptions.ConfigFlags
	hubNamespace string
}

// newHubFlags returns the hub flags of a command; only a command that reads pipelines of one
// namespace takes -n (namespaced).
func newHubFlags(namespaced bool) *hubFlags {
	cf := genericclioptions.NewConfigFlags(true)
	// The plugin keeps no discovery cache: --cache-dir would be a flag that does nothing.
	cf.CacheDir = nil
	if !namespaced {
		cf.Namespace = nil
	}
	return &hubFlags{config: cf}
}

func (h *hubFlags) addFlags(cmd *cobra.Command) {
	markConnectionFlags(cmd, h.config.AddFlags)
	cmd.Flags().StringVar(&h.hubNamespace, "hub-namespace", fleetview.DefaultHubNamespace,
		"The hub's --cluster-provider-namespace: where the hub runs and keeps member entries, health records and tombstones.")
	complete := func(name string, f func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)) {
		_ = cmd.RegisterFlagCompletionFunc(name, f)
	}
	complete("context", h.kubeconfigNames(func(c *clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.Contexts)) }))
	complete("cluster", h.kubeconfigNames(func(c *clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.Clusters)) }))
	complete("user", h.kubeconfigNames(func(c *clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.AuthInfos)) }))
	complete("hub-namespace", h.completeNamespaces)
	if h.config.Namespace != nil {
		// -n picks the pipelines shown: the command's own flag, not only how to connect.
		n := cmd.Flags().Lookup("namespace")
		n.Usage = "Namespace of the pipelines (default: the kubeconfig context's namespace)."
		delete(n.Annotations, flagGroup)
		complete("namespace", h.completeNamespaces)
	}
}

// restConfig is the hub's client configuration, as kubectl builds it from the same flags.
func (h *hubFlags) restConfig() (*rest.Config, error) {
	cfg, err := h.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// client is a client of the hub.
func (h *hubFlags) client() (client.Client, error) {
	cfg, err := h.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub: %w", err)
	}
	return c, nil
}

// namespace is -n, else the namespace of the kubeconfig context, else "default".
func (h *hubFlags) namespace() (string, error) {
	ns, _, err := h.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return ns, nil
}

// kubeconfigPath is --kubeconfig ("" for kubectl's default search).
func (h *hubFlags) kubeconfigPath() string { return *h.config.KubeConfig }

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = urutauv1alpha1.AddToScheme(s)
	return s
}

// restConfig loads a kubeconfig as kubectl does (path "" searches $KUBECONFIG, then
// ~/.kube/config): the member's, for join and leave.
func restConfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// kubeconfigNames completes a flag from the names in the kubeconfig the command would load.
func (h *hubFlags) kubeconfigNames(names func(*clientcmdapi.Config) []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		raw, err := h.config.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return names(&raw), cobra.ShellCompDirectiveNoFileComp
	}
}

func (h *hubFlags) completeNamespaces(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	c, err := h.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var l corev1.NamespaceList
	if err := c.List(cmd.Context(), &l); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, n := range l.Items {
		names = append(names, n.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// contextNames are the contexts of the kubeconfig at path (kubectl's default search for "").
func contextNames(path string) []string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	raw, err := rules.Load()
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(raw.Contexts))
}
