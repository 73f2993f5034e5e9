// Command runc-bounded is an OCI runtime for Docker and containerd that runs runc with only the
// capabilities this machine's bounding set holds.
//
// Docker's --privileged (and a privileged pod in containerd 1.6) asks runc for every capability
// Linux knows. Where a capability is missing from the bounding set (a sandbox without
// CAP_SYS_RESOURCE, say), runc cannot grant it and the container fails with "unable to apply caps:
// operation not permitted". kind starts every node container --privileged, so kind cannot start
// there at all. This wrapper removes from the OCI spec (config.json of create/run, the --process
// file of exec) each capability that is not in its own bounding set, and raises an oom_score_adj
// below its own (which needs CAP_SYS_RESOURCE) to its own, then execs runc with the same arguments.
// On a machine whose bounding set is full it changes nothing.
//
// Install it as Docker's default runtime ("runtimes" and "default-runtime" in daemon.json) and as
// containerd's runc BinaryName in the kind node. The real runc is the first of NOSYSRES_RUNC,
// /usr/sbin/runc, /usr/bin/runc, /usr/local/sbin/runc that exists.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

func main() {
	runc, err := realRunc()
	if err == nil {
		err = bound(os.Args[1:])
	}
	if err == nil {
		err = syscall.Exec(runc, append([]string{"runc"}, os.Args[1:]...), os.Environ())
	}
	fmt.Fprintf(os.Stderr, "runc-bounded: %v\n", err)
	os.Exit(1)
}

func realRunc() (string, error) {
	candidates := []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"}
	if p := os.Getenv("NOSYSRES_RUNC"); p != "" {
		candidates = []string{p}
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("no runc among %v", candidates)
}

// bound rewrites the spec file the runc command line names, if it names one.
func bound(args []string) error {
	path, kind := specFile(args)
	if path == "" {
		return nil
	}
	if kind == specBundle {
		path = filepath.Join(path, "config.json")
	}
	limits, err := ownLimits()
	if err != nil {
		return err
	}
	in, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the OCI spec: %w", err)
	}
	out, changed, err := boundSpec(in, kind, limits)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return nil
	}
	return os.WriteFile(path, out, 0o600)
}
