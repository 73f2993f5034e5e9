package fence

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// CommandLine is the fence's command line, parsed: cmd/fence runs by it, and the chaos checker
// reads a fenced pod's with it to simulate that pod's own fence.
type CommandLine struct {
	// Namespace and Name are the fence Lease's (--lease NAMESPACE/NAME).
	Namespace, Name string
	// Config is --ttl and --grace.
	Config         Config
	Poll           time.Duration
	RequestTimeout time.Duration
	// Holder: only renewals whose spec.holderIdentity is this count; "" counts any.
	Holder     string
	Kubeconfig string
	// Command is what runs under the fence (after --).
	Command []string
}

// Counts tells whether a renewal written with holderIdentity counts for this fence ("" when
// the Lease has none).
func (c CommandLine) Counts(holderIdentity string) bool {
	return c.Holder == "" || holderIdentity == c.Holder
}

// ParseCommandLine parses the fence's arguments (the program name left out) and names every
// reason the fence would refuse them; flag errors and usage go to out.
func ParseCommandLine(args []string, out io.Writer) (CommandLine, error) {
	var c CommandLine
	fs := flag.NewFlagSet("fence", flag.ContinueOnError)
	fs.SetOutput(out)
	lease := fs.String("lease", "", "the fence Lease, NAMESPACE/NAME (coordination.k8s.io/v1)")
	fs.DurationVar(&c.Config.TTL, "ttl", 0, "how long after a renewal the command may run")
	fs.DurationVar(&c.Config.Grace, "grace", 10*time.Second, "how long the command has between SIGTERM and SIGKILL")
	fs.DurationVar(&c.Poll, "poll", 0, "how often the Lease is read; default ttl/10, within [200ms, 5s]")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 0, "how long one read may take; default ttl/4, within [1s, 10s]")
	fs.StringVar(&c.Holder, "holder", "", "count only renewals whose spec.holderIdentity is this (empty: any)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "a kubeconfig file; empty: the pod's in-cluster credentials")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: fence --lease NAMESPACE/NAME --ttl DURATION [--grace DURATION] [flags] -- COMMAND [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.Command = fs.Args()
	ns, name, ok := strings.Cut(*lease, "/")
	c.Namespace, c.Name = ns, name
	var errs []error
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		errs = append(errs, fmt.Errorf("--lease %q: want NAMESPACE/NAME", *lease))
	}
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--ttl/--grace: %w", err))
	}
	if len(c.Command) == 0 {
		errs = append(errs, errors.New("no command: put it after --"))
	}
	return c, errors.Join(append(errs, c.pacing()...)...)
}

// pacing defaults --poll and --request-timeout from the ttl and checks them.
func (c *CommandLine) pacing() []error {
	if c.Poll == 0 {
		c.Poll = clamp(c.Config.TTL/10, 200*time.Millisecond, 5*time.Second)
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = clamp(c.Config.TTL/4, time.Second, 10*time.Second)
	}
	var errs []error
	if c.Poll <= 0 || c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--poll %v, --request-timeout %v: must be positive", c.Poll, c.RequestTimeout))
	}
	// A renewal is dated from the poll before the one that shows it: polls slower than the ttl
	// would make every renewal look expired.
	if c.Config.TTL > 0 && c.Poll+c.RequestTimeout >= c.Config.TTL {
		errs = append(errs, fmt.Errorf("--poll %v plus --request-timeout %v must be shorter than --ttl %v", c.Poll, c.RequestTimeout, c.Config.TTL))
	}
	return errs
}

func clamp(d, lo, hi time.Duration) time.Duration {
	return max(lo, min(hi, d))
}
