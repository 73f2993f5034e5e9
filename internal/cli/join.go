package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/join"
)

// memberFlags say how to reach the member with the credentials of the person running the command.
type memberFlags struct {
	kubeconfig, context string
}

func (m *memberFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&m.kubeconfig, "member-kubeconfig", "", "Kubeconfig of the member (default: the hub's kubeconfig).")
	fs.StringVar(&m.context, "member-context", "", "Kubeconfig context of the member.")
}

func (m *memberFlags) set() bool { return m.kubeconfig != "" || m.context != "" }

func (m *memberFlags) config(g *globals) (*rest.Config, error) {
	path := m.kubeconfig
	if path == "" {
		path = g.kubeconfig
	}
	cfg, _, err := restConfig(path, m.context)
	if err != nil {
		return nil, fmt.Errorf("the member: %w", err)
	}
	return cfg, nil
}

func joinCommand() command {
	var o join.Options
	var m memberFlags
	var allowlist []string
	return command{
		name: "join", usage: "join NAME --member-context CONTEXT [flags]",
		summary: "Make a cluster a member: apply config/spoke there, get a bound token, check its access, register it on the hub.",
		flags: func(fs *pflag.FlagSet) {
			m.bind(fs)
			fs.StringToStringVar(&o.Labels, "labels", nil, "Member labels (what spec.placement.clusterSelector matches), k=v,k2=v2.")
			fs.StringToStringVar(&o.Annotations, "annotations", nil, "Member annotations (per-member settings such as urutau.io/keda-prometheus-address), k=v.")
			fs.StringVar(&o.MemberServer, "member-server", "", "The member's API server as the hub's pods reach it (default: the server in the member's kubeconfig).")
			fs.StringVar(&o.MemberCAFile, "member-ca-file", "", "The member's certificate authority (default: the one in the member's kubeconfig).")
			fs.StringSliceVar(&o.Namespaces, "namespaces", nil, "The member's namespaces that run pipelines, which must exist: each is opened to the fleet (the hub's RoleBinding and the label urutau.io/fleet-managed=true) and the hub's access checked there. System namespaces are refused.")
			fs.StringSliceVar(&allowlist, "member-server-allowlist", nil, "The hub's --member-server-allowlist, when it has one: join refuses a member server the hub would refuse.")
			fs.DurationVar(&o.TokenTTL, "token-ttl", 30*24*time.Hour, "How long the hub's token for the member is valid; run join again before it expires (annotation urutau.io/credentials-expire-at, metric urutau_fleet_member_credentials_expiry_timestamp_seconds, alert UrutauFleetMemberCredentialsExpiring 7 days before).")
			fs.BoolVar(&o.DryRun, "dry-run", false, "Print what join would do; write nothing.")
			fs.BoolVar(&o.Force, "force", false, "Take over an entry of that name that records another cluster, or join a cluster already joined under another name.")
		},
		run: func(ctx context.Context, g *globals, args []string, s Streams) error {
			if len(args) != 1 {
				return errors.New("join takes the member's name: join NAME --member-context CONTEXT")
			}
			if !m.set() {
				return errors.New("--member-context or --member-kubeconfig is required: which cluster joins")
			}
			o.Name, o.HubNamespace = args[0], g.hubNamespace
			servers, err := credentials.ParseAllowlist(allowlist)
			if err != nil {
				return fmt.Errorf("--member-server-allowlist: %w", err)
			}
			o.Policy.Servers = servers
			hub, _, err := g.newClient(g)
			if err != nil {
				return err
			}
			member, err := m.config(g)
			if err != nil {
				return err
			}
			return join.Join(ctx, o, join.Clusters{Hub: hub, Member: member}, s.Out)
		},
	}
}

func leaveCommand() command {
	var o join.LeaveOptions
	var m memberFlags
	return command{
		name: "leave", usage: "leave NAME [--member-context CONTEXT] [flags]",
		summary: "Remove a member: refused while pipelines are placed there (or --drain), then its entry, its token and config/spoke.",
		flags: func(fs *pflag.FlagSet) {
			m.bind(fs)
			fs.BoolVar(&o.Drain, "drain", false, "Move the pipelines off first: drop the entry's labels and the member from spec.placement.clusters, and wait for the hub to empty it.")
			fs.DurationVar(&o.DrainTimeout, "drain-timeout", 10*time.Minute, "How long --drain waits.")
			fs.BoolVar(&o.KeepSpoke, "keep-spoke", false, "Leave config/spoke, and the namespaces it opened, as they are in the member (the token is revoked all the same).")
			fs.BoolVar(&o.Force, "force", false, "Remove the entry even with tombstones pending for the member.")
			fs.BoolVar(&o.DryRun, "dry-run", false, "Print what leave would do; write nothing.")
		},
		run: func(ctx context.Context, g *globals, args []string, s Streams) error {
			if len(args) != 1 {
				return errors.New("leave takes the member's name: leave NAME")
			}
			o.Name, o.HubNamespace = args[0], g.hubNamespace
			hub, _, err := g.newClient(g)
			if err != nil {
				return err
			}
			var member *rest.Config
			if m.set() {
				if member, err = m.config(g); err != nil {
					return err
				}
			}
			return join.Leave(ctx, o, hub, member, s.Out)
		},
	}
}
