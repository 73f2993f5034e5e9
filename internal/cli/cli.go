package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fleetview"
	"github.com/urutau-io/fleet/internal/version"
)

// Exit codes, for scripts (docs/kubectl-urutau.md).
const (
	// ExitOK: the command did what was asked and, for members and status, everything shown is
	// healthy.
	ExitOK = 0
	// ExitError: the command failed: bad flags, the hub cannot be reached or read, the pipeline
	// does not exist, a join or leave was refused.
	ExitError = 1
	// ExitUnhealthy: members or status answered, and something is not healthy: a member is
	// unreachable or not engaged, a pipeline is not Ready or is terminated.
	ExitUnhealthy = 2
)

// errUnhealthy is returned by a command that answered with something unhealthy.
var errUnhealthy = errors.New("not healthy")

// Streams are where a command writes.
type Streams struct {
	Out, Err io.Writer
}

// command is one subcommand.
type command struct {
	name, usage, summary string
	// flags adds the command's own flags; run does the work once they are parsed.
	flags func(fs *pflag.FlagSet)
	run   func(ctx context.Context, g *globals, args []string, s Streams) error
}

// globals are the flags every command takes.
type globals struct {
	kubeconfig, context, namespace, hubNamespace, output string
	allNamespaces, noHeaders                             bool
	// newClient builds the hub client; tests may replace it.
	newClient func(g *globals) (client.Client, string, error)
}

func (g *globals) bind(fs *pflag.FlagSet) {
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "Kubeconfig of the hub cluster (default: $KUBECONFIG, then ~/.kube/config).")
	fs.StringVar(&g.context, "context", "", "Kubeconfig context of the hub (default: the current context).")
	fs.StringVarP(&g.namespace, "namespace", "n", "", "Namespace of the pipelines (default: the context's namespace).")
	fs.BoolVarP(&g.allNamespaces, "all-namespaces", "A", false, "Pipelines of every namespace.")
	fs.StringVar(&g.hubNamespace, "hub-namespace", fleetview.DefaultHubNamespace, "The hub's --cluster-provider-namespace: where member entries and tombstones live.")
	fs.StringVarP(&g.output, "output", "o", "", "Output format: wide, yaml or json (default: a table).")
	fs.BoolVar(&g.noHeaders, "no-headers", false, "Print tables without their header line.")
}

// Run runs kubectl urutau with args (without the program name) and returns the exit code. prog
// is how the program is called in messages ("kubectl urutau" or "hub").
func Run(ctx context.Context, prog string, args []string, s Streams) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(s.Out, prog, cmds)
		return ExitOK
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(s.Out, "kubectl-urutau", version.Get())
		return ExitOK
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return runCommand(ctx, prog, c, args[1:], s)
		}
	}
	fmt.Fprintf(s.Err, "error: unknown command %q\nRun '%s help' for usage.\n", args[0], prog)
	return ExitError
}

func runCommand(ctx context.Context, prog string, c command, args []string, s Streams) int {
	g := &globals{newClient: hubClient}
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.bind(fs)
	if c.flags != nil {
		c.flags(fs)
	}
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintf(s.Out, "%s\n\nUsage:\n  %s %s\n\nFlags:\n%s", c.summary, prog, c.usage, fs.FlagUsagesWrapped(100))
		return ExitOK
	}
	if err == nil {
		err = validOutput(g.output)
	}
	if err != nil {
		fmt.Fprintf(s.Err, "error: %v\nRun '%s %s --help' for usage.\n", err, prog, c.name)
		return ExitError
	}
	err = c.run(ctx, g, fs.Args(), s)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errUnhealthy):
		return ExitUnhealthy
	default:
		fmt.Fprintf(s.Err, "error: %v\n", err)
		return ExitError
	}
}

func printHelp(w io.Writer, prog string, cmds []command) {
	fmt.Fprintf(w, "%s shows the urutau fleet from its hub, and joins or removes members.\n\nCommands:\n", prog)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-8s %s\n\nRun '%s COMMAND --help' for a command's flags.\n"+
		"Exit codes: 0 done and healthy, 1 failed, 2 answered but something is not healthy.\n", "version", "Print the version.", prog)
}

// hubClient builds a client of the hub from the kubeconfig flags, and the namespace to use.
func hubClient(g *globals) (client.Client, string, error) {
	cfg, ns, err := restConfig(g.kubeconfig, g.context)
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to the hub: %w", err)
	}
	return c, ns, nil
}

// restConfig loads a kubeconfig as kubectl does, and the context's namespace.
func restConfig(path, context string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", err
	}
	return cfg, ns, nil
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = urutauv1alpha1.AddToScheme(s)
	return s
}

// pipelineNamespace is the namespace to read pipelines from: "" with -A.
func (g *globals) pipelineNamespace(contextNamespace string) string {
	switch {
	case g.allNamespaces:
		return ""
	case g.namespace != "":
		return g.namespace
	case contextNamespace != "":
		return contextNamespace
	}
	return "default"
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
