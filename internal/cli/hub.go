package cli

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fleetview"
	"github.com/urutau-io/fleet/internal/version"
)

// releaseDownloads is where the release files are published.
const releaseDownloads = "https://github.com/urutau-io/fleet/releases"

// errHubNotInstalled says that the cluster serves no CDCPipeline API.
var errHubNotInstalled = errors.New("the urutau fleet hub is not installed")

// installedClient is a client of the hub, once it has checked that the cluster serves the
// CDCPipeline API: without it every command would fail with a "no matches for kind" that does
// not say what to do.
func (h *hubFlags) installedClient() (client.Client, error) {
	c, err := h.client()
	if err != nil {
		return nil, err
	}
	gvk := urutauv1alpha1.GroupVersion.WithKind("CDCPipeline")
	if _, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			cfg, _ := h.restConfig()
			return nil, notInstalled(cfg.Host, version.Get().Version)
		}
		return nil, fmt.Errorf("reading the hub's APIs: %w", err)
	}
	return c, nil
}

// notInstalled is the error for a cluster at server without the hub: what is missing and the
// commands that install the release the plugin comes from (the newest one for a development
// build).
func notInstalled(server, pluginVersion string) error {
	return fmt.Errorf("%w on the cluster at %s: it serves no CDCPipeline API (%s).\n"+
		"Pick the hub's context with --context, or install the hub there:\n  %s",
		errHubNotInstalled, server, urutauv1alpha1.GroupVersion, installHint(pluginVersion))
}

var releaseVersionRE = regexp.MustCompile(`^v(\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?)$`)

// installHint is how to install the hub of release pluginVersion (vX.Y.Z), or of the newest
// release for any other build.
func installHint(pluginVersion string) string {
	manifests, chart := releaseDownloads+"/latest/download", releaseDownloads+"/download/vX.Y.Z/urutau-fleet-X.Y.Z.tgz"
	if m := releaseVersionRE.FindStringSubmatch(pluginVersion); m != nil {
		manifests = releaseDownloads + "/download/" + pluginVersion
		chart = manifests + "/urutau-fleet-" + m[1] + ".tgz"
	}
	return "kubectl apply --server-side -f " + manifests + "/install.yaml\n" +
		"or with Helm:\n  helm install urutau-fleet " + chart + " --namespace " + fleetview.DefaultHubNamespace + " --create-namespace"
}

// completePipelines completes a pipeline name of the namespace -n names.
func (h *hubFlags) completePipelines(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := h.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ns, err := h.namespace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(urutauv1alpha1.GroupVersion.WithKind("CDCPipelineList"))
	if err := c.List(cmd.Context(), l, client.InNamespace(ns)); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.GetName())
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeMembers completes a member's name: the hub's inventory entries.
func (h *hubFlags) completeMembers(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := h.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	f, err := fleetview.Gather(cmd.Context(), c, fleetview.GatherOptions{HubNamespace: h.hubNamespace})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, m := range fleetview.Members(f) {
		names = append(names, m.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
