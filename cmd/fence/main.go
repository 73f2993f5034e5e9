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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urutau-io/fleet/internal/fence"
	"github.com/urutau-io/fleet/internal/version"
)

// exitUsage is the status of a command line that cannot run.
const exitUsage = 2

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// options is the parsed command line.
type options struct {
	namespace, name string
	cfg             fence.Config
	poll            time.Duration
	requestTimeout  time.Duration
	holder          string
	kubeconfig      string
	command         []string
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
	o, err := parse(args, stderr)
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

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fence", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lease := fs.String("lease", "", "the fence Lease, NAMESPACE/NAME (coordination.k8s.io/v1)")
	fs.DurationVar(&o.cfg.TTL, "ttl", 0, "how long after a renewal the command may run")
	fs.DurationVar(&o.cfg.Grace, "grace", 10*time.Second, "how long the command has between SIGTERM and SIGKILL")
	fs.DurationVar(&o.poll, "poll", 0, "how often the Lease is read; default ttl/10, within [200ms, 5s]")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 0, "how long one read may take; default ttl/4, within [1s, 10s]")
	fs.StringVar(&o.holder, "holder", "", "count only renewals whose spec.holderIdentity is this (empty: any)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "a kubeconfig file; empty: the pod's in-cluster credentials")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fence --lease NAMESPACE/NAME --ttl DURATION [--grace DURATION] [flags] -- COMMAND [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.command = fs.Args()
	var errs []error
	ns, name, ok := strings.Cut(*lease, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		errs = append(errs, fmt.Errorf("--lease %q: want NAMESPACE/NAME", *lease))
	}
	o.namespace, o.name = ns, name
	if err := o.cfg.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--ttl/--grace: %w", err))
	}
	if len(o.command) == 0 {
		errs = append(errs, errors.New("no command: put it after --"))
	}
	if o.poll == 0 {
		o.poll = clamp(o.cfg.TTL/10, 200*time.Millisecond, 5*time.Second)
	}
	if o.requestTimeout == 0 {
		o.requestTimeout = clamp(o.cfg.TTL/4, time.Second, 10*time.Second)
	}
	if o.poll <= 0 || o.requestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--poll %v, --request-timeout %v: must be positive", o.poll, o.requestTimeout))
	}
	// A renewal is dated from the poll before the one that shows it: polls slower than the ttl
	// would make every renewal look expired.
	if o.cfg.TTL > 0 && o.poll+o.requestTimeout >= o.cfg.TTL {
		errs = append(errs, fmt.Errorf("--poll %v plus --request-timeout %v must be shorter than --ttl %v", o.poll, o.requestTimeout, o.cfg.TTL))
	}
	return o, errors.Join(errs...)
}

func clamp(d, lo, hi time.Duration) time.Duration {
	return max(lo, min(hi, d))
}
