package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urutau-io/fleet/internal/fleetview"
)

func commands() []command {
	return []command{
		{name: "members", usage: "members [flags]", summary: "List the members: identity, reachable, engaged, last answer, pipelines placed and ready, tombstones pending.", run: runMembers},
		{name: "status", usage: "status [PIPELINE] [flags]", summary: "Show each pipeline on each member: phase, generation, ready replicas, message.", run: runStatus},
		joinCommand(),
		leaveCommand(),
	}
}

// now is the clock of AGE columns; tests fix it.
var now = time.Now

func runMembers(ctx context.Context, g *globals, args []string, s Streams) error {
	if len(args) > 0 {
		return fmt.Errorf("members takes no arguments, got %q", args)
	}
	c, _, err := g.newClient(g)
	if err != nil {
		return err
	}
	// Every namespace's pipelines: a member's counts are fleet-wide.
	f, err := fleetview.Gather(ctx, c, fleetview.GatherOptions{HubNamespace: g.hubNamespace})
	if err != nil {
		return err
	}
	warn(s.Err, f.Warnings)
	members := fleetview.Members(f)
	if err := printMembers(s, g, members); err != nil {
		return err
	}
	if !fleetview.MembersHealthy(members) {
		return errUnhealthy
	}
	return nil
}

func printMembers(s Streams, g *globals, members []fleetview.Member) error {
	if g.output == outputJSON || g.output == outputYAML {
		return printStructured(s.Out, g.output, "MemberList", members)
	}
	if len(members) == 0 {
		fmt.Fprintf(s.Err, "No members found in %s.\n", g.hubNamespace)
		return nil
	}
	t := table{headers: []string{"Name", "Identity", "Reachable", "Engaged", "Last Answer", "Placed", "Ready", "Tombstones", "Credentials", "Source", "Labels", "Message"}, wideFrom: 8}
	for _, m := range members {
		t.rows = append(t.rows, []string{m.Name, none(m.Identity), m.Reachable, m.Engaged, lastAnswer(m, now()),
			strconv.Itoa(m.Placed), strconv.Itoa(m.Ready), strconv.Itoa(m.Tombstones), expiry(m.CredentialsExpireAt, now()), m.Source,
			labels(m.Labels), none(truncate(m.Message, 80))})
	}
	return t.print(s.Out, g.output == outputWide, g.noHeaders)
}

// labels prints labels as kubectl --show-labels does, without the provider's own.
func labels(l map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if k != fleetview.KubeconfigSecretLabel {
			kv = append(kv, k+"="+l[k])
		}
	}
	return none(strings.Join(kv, ","))
}

func runStatus(ctx context.Context, g *globals, args []string, s Streams) error {
	if len(args) > 1 {
		return fmt.Errorf("status takes at most one pipeline name, got %q", args)
	}
	c, contextNS, err := g.newClient(g)
	if err != nil {
		return err
	}
	o := fleetview.GatherOptions{Namespace: g.pipelineNamespace(contextNS), HubNamespace: g.hubNamespace}
	if len(args) == 1 {
		if g.allNamespaces {
			return fmt.Errorf("a pipeline name cannot be combined with -A: name its namespace with -n")
		}
		o.Pipeline = args[0]
	}
	f, err := fleetview.Gather(ctx, c, o)
	if err != nil {
		return err
	}
	rows := fleetview.PlacementRows(f)
	if err := printStatus(s, g, o.Namespace, rows); err != nil {
		return err
	}
	if !fleetview.PipelinesHealthy(f.Pipelines) {
		return errUnhealthy
	}
	return nil
}

func printStatus(s Streams, g *globals, ns string, rows []fleetview.PlacementRow) error {
	if g.output == outputJSON || g.output == outputYAML {
		return printStructured(s.Out, g.output, "PlacementList", rows)
	}
	if len(rows) == 0 {
		noResources(s.Err, ns)
		return nil
	}
	headers := []string{"Pipeline", "Member", "Phase", "Generation", "Ready", "Age", "Message"}
	if g.allNamespaces {
		headers = append([]string{"Namespace"}, headers...)
	}
	t := table{headers: headers, wideFrom: len(headers)}
	for _, r := range rows {
		msg := truncate(r.Message, 60)
		if g.output == outputWide {
			msg = strings.Join(strings.Fields(r.Message), " ")
		}
		row := []string{r.Pipeline, none(r.Member), r.Phase, fmt.Sprintf("%d/%d", r.ObservedGeneration, r.Generation),
			strconv.FormatInt(r.ReadyReplicas, 10), age(r.Since, now()), none(msg)}
		if g.allNamespaces {
			row = append([]string{r.Namespace}, row...)
		}
		t.rows = append(t.rows, row)
	}
	return t.print(s.Out, false, g.noHeaders)
}
