package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagGroup is the annotation that puts a flag in the help's "Connection flags" section.
const flagGroup = "urutau.io/flag-group"

// markConnectionFlags puts every flag that add adds to cmd in the connection section of the help.
func markConnectionFlags(cmd *cobra.Command, add func(*pflag.FlagSet)) {
	fs := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	add(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[flagGroup] = []string{"connection"}
		cmd.Flags().AddFlag(f)
	})
}

// usage is cobra's usage with the command's own flags apart from kubectl's connection flags,
// which every command that reads the hub repeats.
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	if c.HasExample() {
		b.WriteString("\n\nExamples:\n" + c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own, connection := splitFlags(c.LocalFlags())
	if own.HasAvailableFlags() {
		b.WriteString("\n\nFlags:\n" + strings.TrimRight(own.FlagUsages(), " \n"))
	}
	if connection.HasAvailableFlags() {
		b.WriteString("\n\nConnection flags (kubectl's, to reach the hub):\n" + strings.TrimRight(connection.FlagUsages(), " \n"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(c.OutOrStderr(), b.String())
	return err
}

func splitFlags(fs *pflag.FlagSet) (own, connection *pflag.FlagSet) {
	own, connection = pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("connection", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if len(f.Annotations[flagGroup]) > 0 {
			connection.AddFlag(f)
		} else {
			own.AddFlag(f)
		}
	})
	return own, connection
}
