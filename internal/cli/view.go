package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/urutau-io/fleet/internal/fleetview"
)

// now is the clock of AGE columns; tests fix it.
var now = time.Now

func membersCommand() *cobra.Command {
	hub, out := newHubFlags(false), newPrintFlags()
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the members: identity, reachable, engaged, last answer, pipelines placed and ready, tombstones pending.",
		Long: "List the members of the fleet as the hub sees them, over every namespace's pipelines.\n\n" +
			"Exits 2 when a member is unreachable, or named by pipelines but not engaged.",
		Example: "  kubectl urutau members\n  kubectl urutau members -o wide\n" +
			"  kubectl urutau members -o jsonpath='{.items[?(@.status.reachable!=\"True\")].metadata.name}'\n" +
			"  kubectl urutau members -o custom-columns=NAME:.metadata.name,UP:.status.reachable",
		Args:              maxArgs(0, "members takes no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			printer, err := out.toPrinter()
			if err != nil {
				return err
			}
			c, err := hub.installedClient()
			if err != nil {
				return err
			}
			f, err := fleetview.Gather(cmd.Context(), c, fleetview.GatherOptions{HubNamespace: hub.hubNamespace})
			if err != nil {
				return err
			}
			warn(cmd.ErrOrStderr(), f.Warnings)
			members := fleetview.Members(f)
			if len(members) == 0 && out.table() {
				fmt.Fprintf(cmd.ErrOrStderr(), "No members found in %s.\n", hub.hubNamespace)
			} else if err := printObjects(cmd.OutOrStdout(), printer, out.table(), membersTable(members, now()), membersList(members)); err != nil {
				return err
			}
			if !fleetview.MembersHealthy(members) {
				return errUnhealthy
			}
			return nil
		},
	}
	hub.addFlags(cmd)
	out.addFlags(cmd)
	return cmd
}

var memberColumns = []column{{name: "Name"}, {name: "Identity"}, {name: "Reachable"}, {name: "Engaged"}, {name: "Last Answer"},
	{name: "Placed"}, {name: "Ready"}, {name: "Tombstones"},
	{name: "Credentials", wide: true}, {name: "Source", wide: true}, {name: "Labels", wide: true}, {name: "Message", wide: true}}

func membersTable(members []fleetview.Member, at time.Time) *tableRows {
	t := &tableRows{columns: memberColumns}
	for _, m := range members {
		t.rows = append(t.rows, []any{m.Name, none(m.Identity), m.Reachable, m.Engaged, lastAnswer(m, at),
			m.Placed, m.Ready, m.Tombstones, expiry(m.CredentialsExpireAt, at), m.Source,
			labels(m.Labels), none(truncate(m.Message, 80))})
	}
	return t
}

func membersList(members []fleetview.Member) *unstructured.UnstructuredList {
	items := make([]map[string]any, 0, len(members))
	for _, m := range members {
		items = append(items, memberObject(m))
	}
	return list(items)
}

// labels prints labels as kubectl --show-labels does, without the provider's own.
func labels(l map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(memberLabels(l))) {
		kv = append(kv, k+"="+l[k])
	}
	return none(strings.Join(kv, ","))
}

func statusCommand() *cobra.Command {
	hub, out := newHubFlags(true), newPrintFlags()
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "status [PIPELINE]",
		Short: "Show each pipeline on each member: phase, generation, ready replicas, message.",
		Long: "Show each pipeline on each member, from the CDCPipelines' status.clusters[] on the hub.\n\n" +
			"Exits 2 when a pipeline shown is not Ready, or is terminated.",
		Example: "  kubectl urutau status -n shop\n  kubectl urutau status orders -n shop -o yaml\n  kubectl urutau status -A\n" +
			"  kubectl urutau status -A -o custom-columns=NAMESPACE:.metadata.namespace,PIPELINE:.spec.pipeline,MEMBER:.spec.member,PHASE:.status.phase",
		Args:              maxArgs(1, "status takes at most one pipeline name"),
		ValidArgsFunction: hub.completePipelines,
		RunE: func(cmd *cobra.Command, args []string) error {
			printer, err := out.toPrinter()
			if err != nil {
				return err
			}
			if len(args) == 1 && allNamespaces {
				return usageError{fmt.Errorf("a pipeline name cannot be combined with -A: name its namespace with -n")}
			}
			c, err := hub.installedClient()
			if err != nil {
				return err
			}
			o := fleetview.GatherOptions{HubNamespace: hub.hubNamespace}
			if !allNamespaces {
				if o.Namespace, err = hub.namespace(); err != nil {
					return err
				}
			}
			if len(args) == 1 {
				o.Pipeline = args[0]
			}
			f, err := fleetview.Gather(cmd.Context(), c, o)
			if err != nil {
				return err
			}
			rows := fleetview.PlacementRows(f)
			if len(rows) == 0 && out.table() {
				noResources(cmd.ErrOrStderr(), o.Namespace)
			} else if err := printObjects(cmd.OutOrStdout(), printer, out.table(), statusTable(rows, allNamespaces, out.wide(), now()), statusList(rows)); err != nil {
				return err
			}
			if !fleetview.PipelinesHealthy(f.Pipelines) {
				return errUnhealthy
			}
			return nil
		},
	}
	hub.addFlags(cmd)
	out.addFlags(cmd)
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "Pipelines of every namespace (adds a NAMESPACE column).")
	return cmd
}

// statusTable is one row per pipeline and member; -o wide prints messages whole.
func statusTable(rows []fleetview.PlacementRow, allNamespaces, wide bool, at time.Time) *tableRows {
	columns := []column{{name: "Pipeline"}, {name: "Member"}, {name: "Phase"}, {name: "Generation"}, {name: "Ready"}, {name: "Age"}, {name: "Message"}}
	if allNamespaces {
		columns = append([]column{{name: "Namespace"}}, columns...)
	}
	t := &tableRows{columns: columns}
	for _, r := range rows {
		full := r.Message
		if r.Failover != "" {
			full = strings.TrimSuffix(strings.TrimSpace("failover: "+r.Failover+"; "+r.Message), ";")
		}
		msg := truncate(full, 60)
		if wide {
			msg = strings.Join(strings.Fields(full), " ")
		}
		row := []any{r.Pipeline, none(r.Member), r.Phase, fmt.Sprintf("%d/%d", r.ObservedGeneration, r.Generation),
			r.ReadyReplicas, age(r.Since, at), none(msg)}
		if allNamespaces {
			row = append([]any{r.Namespace}, row...)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

func statusList(rows []fleetview.PlacementRow) *unstructured.UnstructuredList {
	items := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		items = append(items, placementObject(r))
	}
	return list(items)
}

// noResources is kubectl's message for an empty list, on stderr.
func noResources(w io.Writer, ns string) {
	if ns == "" {
		fmt.Fprintln(w, "No resources found")
		return
	}
	fmt.Fprintf(w, "No resources found in %s namespace.\n", ns)
}

func warn(w io.Writer, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintln(w, "Warning:", strings.TrimSpace(m))
	}
}
