// Command kubectl-urutau is the kubectl plugin of urutau fleet: put it on your PATH and run
// `kubectl urutau members`, `kubectl urutau status [PIPELINE]`, `kubectl urutau join` or
// `kubectl urutau leave` against the hub. docs/kubectl-urutau.md describes each command and its
// exit codes.
//
// Called as kubectl_complete-urutau (a link to this binary), it answers kubectl's shell
// completion of `kubectl urutau ...`.
package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/urutau-io/fleet/internal/cli"
)

func main() {
	// controller-runtime's client logs through this; the plugin reports errors itself.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, "kubectl urutau", args(os.Args), cli.Streams{Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}

// args are the command's arguments; kubectl runs kubectl_complete-urutau with the words to
// complete, which cobra's hidden __complete command answers.
func args(osArgs []string) []string {
	// Either separator: Windows paths use \, which filepath splits only on Windows.
	name := osArgs[0][strings.LastIndexAny(osArgs[0], `/\`)+1:]
	name = strings.TrimSuffix(name, ".exe")
	if name == "kubectl_complete-urutau" {
		return append([]string{"__complete"}, osArgs[1:]...)
	}
	return osArgs[1:]
}
