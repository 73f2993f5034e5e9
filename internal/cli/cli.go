package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

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

// usageError is a mistake on the command line: it is reported with a pointer to --help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Streams are where a command writes.
type Streams struct {
	Out, Err io.Writer
}

// Run runs kubectl urutau with args (without the program name) and returns the exit code. prog
// is how the program is called in messages ("kubectl urutau" or "hub").
func Run(ctx context.Context, prog string, args []string, s Streams) int {
	root := NewCommand(prog, s)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errUnhealthy):
		return ExitUnhealthy
	}
	fmt.Fprintf(s.Err, "error: %v\n", err)
	var usage usageError
	if errors.As(err, &usage) || isCobraUsageError(err) {
		fmt.Fprintf(s.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ExitError
}

// isCobraUsageError recognises the errors cobra itself returns for a bad command line (it has no
// type for them).
func isCobraUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag") || strings.Contains(msg, "flag needs an argument") ||
		strings.HasPrefix(msg, "invalid argument")
}

// NewCommand builds the command tree of kubectl urutau (or of `hub` when prog is "hub").
func NewCommand(prog string, s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   strings.ReplaceAll(prog, " ", "-"),
		Short: "The urutau fleet from its hub: members, pipelines on each member, joining and removing members.",
		Long: prog + " shows the urutau fleet from its hub, and joins or removes members.\n\n" +
			"Exit codes: 0 done and healthy, 1 failed, 2 answered but something is not healthy.",
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: prog},
		Args:              cobra.NoArgs,
		SilenceErrors:     true,
		SilenceUsage:      true,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if v, _ := cmd.Flags().GetBool("version"); v {
				fmt.Fprintln(cmd.OutOrStdout(), "kubectl-urutau", version.Get())
				return nil
			}
			return cmd.Help()
		},
	}
	// --version without cobra's -v shorthand: kubectl users read -v as verbosity.
	root.Flags().Bool("version", false, "Print the plugin's version and exit (the version command also shows the hub's).")
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetUsageFunc(usage)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(membersCommand(), statusCommand(), joinCommand(), leaveCommand(), versionCommand())
	return root
}

// exactArgs is cobra.ExactArgs with a message that says what the argument is.
func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s, got %d arguments %q", msg, len(args), args)}
		}
		return nil
	}
}

// maxArgs is cobra.MaximumNArgs with a message that says what the arguments are.
func maxArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return usageError{fmt.Errorf("%s, got %q", msg, args)}
		}
		return nil
	}
}
