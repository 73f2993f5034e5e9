package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/join"
)

// memberFlags say how to reach the member with the credentials of the person running the command.
type memberFlags struct {
	kubeconfig, context string
}

func (m *memberFlags) addFlags(cmd *cobra.Command, hub *hubFlags) {
	cmd.Flags().StringVar(&m.kubeconfig, "member-kubeconfig", "", "Kubeconfig of the member (default: the hub's kubeconfig).")
	cmd.Flags().StringVar(&m.context, "member-context", "", "Kubeconfig context of the member.")
	_ = cmd.MarkFlagFilename("member-kubeconfig")
	_ = cmd.RegisterFlagCompletionFunc("member-context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		path := m.kubeconfig
		if path == "" {
			path = hub.kubeconfigPath()
		}
		return contextNames(path), cobra.ShellCompDirectiveNoFileComp
	})
}

func (m *memberFlags) set() bool { return m.kubeconfig != "" || m.context != "" }

func (m *memberFlags) config(hub *hubFlags) (*rest.Config, error) {
	path := m.kubeconfig
	if path == "" {
		path = hub.kubeconfigPath()
	}
	cfg, err := restConfig(path, m.context)
	if err != nil {
		return nil, fmt.Errorf("the member: %w", err)
	}
	return cfg, nil
}

func joinCommand() *cobra.Command {
	hub := newHubFlags(false)
	var o join.Options
	var m memberFlags
	var allowlist []string
	cmd := &cobra.Command{
		Use:   "join NAME --member-context CONTEXT",
		Short: "Make a cluster a member: apply config/spoke there, get a bound token, check its access, register it on the hub.",
		Long: "Make a cluster a member named NAME: apply config/spoke there, open --namespaces to the fleet, get a token " +
			"bound to an object in the member, check its access, and register the member on the hub.\n\n" +
			"Run it again before the token expires, or to change labels or open more namespaces.",
		Example: "  kubectl urutau join eu-1 --context hub --member-context eu-1 --labels region=eu --namespaces shop\n" +
			"  kubectl urutau join eu-1 --member-context eu-1 --namespaces shop --dry-run",
		Args: exactArgs(1, "join takes the member's name: join NAME --member-context CONTEXT"),
		// The name is a new member's, or one to renew.
		ValidArgsFunction: hub.completeMembers,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !m.set() {
				return usageError{errors.New("--member-context or --member-kubeconfig is required: which cluster joins")}
			}
			o.Name, o.HubNamespace = args[0], hub.hubNamespace
			servers, err := credentials.ParseAllowlist(allowlist)
			if err != nil {
				return usageError{fmt.Errorf("--member-server-allowlist: %w", err)}
			}
			o.Policy.Servers = servers
			c, err := hub.installedClient()
			if err != nil {
				return err
			}
			member, err := m.config(hub)
			if err != nil {
				return err
			}
			return join.Join(cmd.Context(), o, join.Clusters{Hub: c, Member: member}, cmd.OutOrStdout())
		},
	}
	hub.addFlags(cmd)
	m.addFlags(cmd, hub)
	fs := cmd.Flags()
	fs.StringToStringVar(&o.Labels, "labels", nil, "Member labels (what spec.placement.clusterSelector matches), k=v,k2=v2.")
	fs.StringToStringVar(&o.Annotations, "annotations", nil, "Member annotations (per-member settings such as urutau.io/keda-prometheus-address), k=v.")
	fs.StringVar(&o.MemberServer, "member-server", "", "The member's API server as the hub's pods reach it (default: the server in the member's kubeconfig).")
	fs.StringVar(&o.MemberCAFile, "member-ca-file", "", "The member's certificate authority (default: the one in the member's kubeconfig).")
	fs.StringSliceVar(&o.Namespaces, "namespaces", nil, "The member's namespaces that run pipelines, which must exist: each is opened to the fleet (the hub's RoleBinding and the label urutau.io/fleet-managed=true) and the hub's access checked there. System namespaces are refused.")
	fs.StringSliceVar(&allowlist, "member-server-allowlist", nil, "The hub's --member-server-allowlist, when it has one: join refuses a member server the hub would refuse.")
	fs.DurationVar(&o.TokenTTL, "token-ttl", 30*24*time.Hour, "How long the hub's token for the member is valid; run join again before it expires (annotation urutau.io/credentials-expire-at, metric urutau_fleet_member_credentials_expiry_timestamp_seconds, alert UrutauFleetMemberCredentialsExpiring 7 days before).")
	fs.BoolVar(&o.DryRun, "dry-run", false, "Print what join would do; write nothing.")
	fs.BoolVar(&o.Force, "force", false, "Take over an entry of that name that records another cluster, or join a cluster already joined under another name.")
	_ = cmd.MarkFlagFilename("member-ca-file")
	return cmd
}

func leaveCommand() *cobra.Command {
	hub := newHubFlags(false)
	var o join.LeaveOptions
	var m memberFlags
	cmd := &cobra.Command{
		Use:   "leave NAME [--member-context CONTEXT]",
		Short: "Remove a member: refused while pipelines are placed there (or --drain), then its entry, its token and config/spoke.",
		Long: "Remove the member NAME: refused while pipelines are placed there (unless --drain moves them off first), " +
			"then its entry on the hub; with --member-context, its token's binding and config/spoke in the member.",
		Example:           "  kubectl urutau leave eu-1 --member-context eu-1\n  kubectl urutau leave eu-1 --member-context eu-1 --drain --drain-timeout 15m",
		Args:              exactArgs(1, "leave takes the member's name: leave NAME"),
		ValidArgsFunction: hub.completeMembers,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name, o.HubNamespace = args[0], hub.hubNamespace
			c, err := hub.installedClient()
			if err != nil {
				return err
			}
			var member *rest.Config
			if m.set() {
				if member, err = m.config(hub); err != nil {
					return err
				}
			}
			return join.Leave(cmd.Context(), o, c, member, cmd.OutOrStdout())
		},
	}
	hub.addFlags(cmd)
	m.addFlags(cmd, hub)
	fs := cmd.Flags()
	fs.BoolVar(&o.Drain, "drain", false, "Move the pipelines off first: drop the entry's labels and the member from spec.placement.clusters, and wait for the hub to empty it.")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", 10*time.Minute, "How long --drain waits.")
	fs.BoolVar(&o.KeepSpoke, "keep-spoke", false, "Leave config/spoke, and the namespaces it opened, as they are in the member (the token is revoked all the same).")
	fs.BoolVar(&o.Force, "force", false, "Remove the entry even with tombstones pending for the member.")
	fs.BoolVar(&o.DryRun, "dry-run", false, "Print what leave would do; write nothing.")
	return cmd
}
