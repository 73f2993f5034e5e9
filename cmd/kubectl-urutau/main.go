// Command kubectl-urutau is the kubectl plugin of urutau fleet: put it on your PATH and run
// `kubectl urutau members`, `kubectl urutau status [PIPELINE]`, `kubectl urutau join` or
// `kubectl urutau leave` against the hub. docs/kubectl-urutau.md describes each command and its
// exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/urutau-io/fleet/internal/cli"
)

func main() {
	// controller-runtime's client logs through this; the plugin reports errors itself.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, "kubectl urutau", os.Args[1:], cli.Streams{Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
