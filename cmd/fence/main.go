// Command fence runs a reader only while the hub keeps renewing its fence Lease:
//
//	fence --lease NAMESPACE/NAME --ttl 20s --grace 10s -- urutau-coordinator run ...
//
// It polls the coordination.k8s.io Lease with the pod's in-cluster credentials, one request at a
// time, starts the command once it has seen a renewal, forwards signals to it, and stops it
// (SIGTERM to its process group, SIGKILL grace later) as soon as no renewal was seen within the
// ttl: when the hub stops renewing, and equally when the API server cannot be reached from the
// pod. It starts the command again only on a new renewal. The rule is internal/fence's; why it
// needs no clock shared with the hub is in that package's comment and in docs/failover.md.
//
// `fence install DESTINATION` copies the binary itself (the init container of a fenced pod).
//
// It is meant to be the container's entry (PID 1): it reaps every child, and its exit takes the
// whole container with it. It exits with the command's status when the command exits by itself,
// or when the pod is being stopped (SIGTERM, SIGINT) and the command has exited.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urutau-io/fleet/internal/fence"
	"github.com/urutau-io/fleet/internal/version"
)

// exitUsage is the status of a command line that cannot run.
const exitUsage = 2

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		fmt.Fprintln(stderr, "fence", version.Get())
		return 0
	}
	if len(args) > 0 && args[0] == "install" {
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: fence install DESTINATION")
			return exitUsage
		}
		if err := install(args[1]); err != nil {
			fmt.Fprintln(stderr, "fence:", err)
			return 1
		}
		return 0
	}
	o, err := fence.ParseCommandLine(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "fence:", err)
		return exitUsage
	}
	leases, err := newLeaseReader(o)
	if err != nil {
		fmt.Fprintln(stderr, "fence:", err)
		return exitUsage
	}
	return newSupervisor(o, leases, boottime, stderr).run()
}
