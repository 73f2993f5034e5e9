package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/version"
)

const (
	// HubDeployment is the hub's Deployment in the hub namespace: config/hub and the chart both
	// name it so.
	HubDeployment = "urutau-fleet-hub"
	// LabelVersion is the label the release files and the chart put on every object, the
	// Deployment included: the release installed (vX.Y.Z).
	LabelVersion = "app.kubernetes.io/version"
	hubContainer = "hub"
)

// versions is what `version -o json|yaml` prints.
type versions struct {
	Client version.Info `json:"clientVersion"`
	Hub    *hubVersion  `json:"hubVersion,omitempty"`
}

// hubVersion is the running hub's release, as its Deployment says.
type hubVersion struct {
	// Version is the Deployment's app.kubernetes.io/version label, else the release tag of its
	// image (repository:vX.Y.Z), else "unknown" (a hub installed from a checkout).
	Version string `json:"version"`
	// Deployment is namespace/name.
	Deployment    string `json:"deployment"`
	Image         string `json:"image,omitempty"`
	Replicas      int32  `json:"replicas"`
	ReadyReplicas int32  `json:"readyReplicas"`
}

var imageTagRE = regexp.MustCompile(`:(v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?)$`)

// hubVersionOf reads the hub's release from its Deployment.
func hubVersionOf(d *appsv1.Deployment) hubVersion {
	v := hubVersion{Version: d.Labels[LabelVersion], Deployment: d.Namespace + "/" + d.Name,
		ReadyReplicas: d.Status.ReadyReplicas, Replicas: 1}
	if d.Spec.Replicas != nil {
		v.Replicas = *d.Spec.Replicas
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == hubContainer {
			v.Image = c.Image
		}
	}
	if m := imageTagRE.FindStringSubmatch(v.Image); v.Version == "" && m != nil {
		v.Version = m[1]
	}
	if v.Version == "" {
		v.Version = "unknown"
	}
	return v
}

// skew warns when the plugin and the hub are different minor releases: a plugin reads what its
// own release's hub publishes.
func skew(client, hub string) string {
	c, h := minorOf(client), minorOf(hub)
	if c == "" || h == "" || c == h {
		return ""
	}
	return fmt.Sprintf("Warning: the plugin (%s) and the hub (%s) are different releases: use the plugin of the hub's release.", client, hub)
}

var minorRE = regexp.MustCompile(`^v(\d+\.\d+)\.\d+`)

func minorOf(v string) string {
	if m := minorRE.FindStringSubmatch(v); m != nil {
		return m[1]
	}
	return ""
}

func versionCommand() *cobra.Command {
	hub := newHubFlags(false)
	var clientOnly bool
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the running hub's.",
		Long: "Print the plugin's version and the running hub's: the app.kubernetes.io/version label of the Deployment " +
			HubDeployment + " in --hub-namespace, which the release files and the chart set to the release installed.",
		Example:           "  kubectl urutau version\n  kubectl urutau version --client\n  kubectl urutau version -o json",
		Args:              maxArgs(0, "version takes no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return usageError{fmt.Errorf("-o %q: must be json or yaml (or empty for text)", output)}
			}
			v := versions{Client: version.Get()}
			if clientOnly {
				return printVersions(cmd.OutOrStdout(), output, v)
			}
			hv, err := readHubVersion(cmd, hub)
			if err != nil {
				_ = printVersions(cmd.OutOrStdout(), output, v)
				return err
			}
			v.Hub = &hv
			if w := skew(v.Client.Version, hv.Version); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), w)
			}
			return printVersions(cmd.OutOrStdout(), output, v)
		},
	}
	hub.addFlags(cmd)
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Print the plugin's version only; do not contact the hub.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "One of json, yaml; text when empty.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func readHubVersion(cmd *cobra.Command, hub *hubFlags) (hubVersion, error) {
	c, err := hub.installedClient()
	if err != nil {
		return hubVersion{}, err
	}
	d := &appsv1.Deployment{}
	err = c.Get(cmd.Context(), client.ObjectKey{Namespace: hub.hubNamespace, Name: HubDeployment}, d)
	if apierrors.IsNotFound(err) {
		return hubVersion{}, fmt.Errorf("the hub's API is installed but no Deployment %s runs in namespace %s (--hub-namespace names where the hub runs)",
			HubDeployment, hub.hubNamespace)
	}
	if err != nil {
		return hubVersion{}, fmt.Errorf("reading the hub's Deployment: %w", err)
	}
	return hubVersionOf(d), nil
}

func printVersions(w io.Writer, output string, v versions) error {
	var raw []byte
	var err error
	switch output {
	case "json":
		raw, err = json.MarshalIndent(v, "", "  ")
		raw = append(raw, '\n')
	case "yaml":
		raw, err = yaml.Marshal(v)
	default:
		raw = []byte("Client Version: " + v.Client.String() + "\n")
		if h := v.Hub; h != nil {
			raw = fmt.Appendf(raw, "Hub Version: %s (Deployment %s, %d/%d ready, image %s)\n", h.Version, h.Deployment, h.ReadyReplicas, h.Replicas, none(h.Image))
		}
	}
	if err != nil {
		return err
	}
	_, err = w.Write(raw)
	return err
}
