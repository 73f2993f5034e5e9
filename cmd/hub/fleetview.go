package main

import (
	"context"
	"io"
	"os"
	"slices"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/urutau-io/fleet/internal/cli"
)

// fleetCommands are kubectl urutau's commands, reachable as `hub COMMAND` too, so that the hub
// image and binary carry them.
var fleetCommands = []string{"members", "status", "join", "leave"}

// isFleetCommand is true when args start with one of fleetCommands.
func isFleetCommand(args []string) bool {
	return len(args) > 0 && slices.Contains(fleetCommands, args[0])
}

// runFleetCommand runs it; a non-zero exit code ends the process with it (2 means "answered, not
// healthy" to scripts, not a failure to report).
func runFleetCommand(ctx context.Context, args []string, stdout io.Writer) error {
	ctrllog.SetLogger(logr.Discard()) // the command reports its own errors
	if code := cli.Run(ctx, "hub", args, cli.Streams{Out: stdout, Err: os.Stderr}); code != cli.ExitOK {
		os.Exit(code)
	}
	return nil
}
