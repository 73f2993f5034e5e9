package localfleet

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Port reservations. Left to itself, kwokctl takes the first free ports counting down from 32767,
// so a port is "free" again the moment a fault test kills the API server behind it: a fleet
// created meanwhile, by another test package running in parallel, takes it, and the killed server
// cannot come back. Every cluster therefore gets its ports from a machine-wide registry (one file
// per port, naming the cluster's work dir) that keeps them out of other hands for as long as the
// cluster exists, running or stopped.

// clusterPorts are the ports kwokctl's binary runtime opens for one cluster.
type clusterPorts struct {
	EtcdPeer, Etcd, APIServer, KwokController, ControllerManager, Scheduler int
}

const (
	// portsHigh and portsLow bound the reserved range: below the kernel's ephemeral range
	// (32768 and up), so no outgoing connection holds one of them as its source port.
	portsHigh = 32700
	portsLow  = 20000
)

func portRegistry() string { return filepath.Join(os.TempDir(), "urutau-localfleet-ports") }

// reservePorts reserves the ports of the cluster whose kwokctl work dir is owner. The caller
// holds the machine-wide creation lock, so two reservations never race. Ports the same owner
// held before (a cluster made again) are given back first.
func reservePorts(owner string) (clusterPorts, error) {
	dir := portRegistry()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return clusterPorts{}, fmt.Errorf("port registry: %w", err)
	}
	if err := releasePorts(owner); err != nil {
		return clusterPorts{}, err
	}
	var got []int
	for port := portsHigh; port > portsLow && len(got) < 6; port-- {
		if reservedElsewhere(dir, port) || !portUnused(port) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(port)), []byte(owner), 0o644); err != nil {
			return clusterPorts{}, fmt.Errorf("port registry: %w", err)
		}
		got = append(got, port)
	}
	if len(got) < 6 {
		return clusterPorts{}, fmt.Errorf("port registry %s: fewer than 6 free ports between %d and %d", dir, portsLow, portsHigh)
	}
	return clusterPorts{EtcdPeer: got[0], Etcd: got[1], APIServer: got[2], KwokController: got[3],
		ControllerManager: got[4], Scheduler: got[5]}, nil
}

// reservedElsewhere tells whether port is held by a cluster that still exists. A reservation
// whose cluster's work dir is gone (a test process killed before it cleaned up) is stale.
func reservedElsewhere(dir string, port int) bool {
	owner, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_, err = os.Stat(strings.TrimSpace(string(owner)))
	return err == nil
}

// releasePorts drops every reservation of owner.
func releasePorts(owner string) error {
	entries, err := os.ReadDir(portRegistry())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("port registry: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(portRegistry(), e.Name())
		if raw, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(raw)) == owner {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("port registry: %w", err)
			}
		}
	}
	return nil
}

// portUnused tells whether nothing listens on port, on the loopback address or on all of them
// (kwokctl's own test).
func portUnused(port int) bool {
	for _, host := range []string{"127.0.0.1", ""} {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}

// kwokctlConfig is the KwokctlConfiguration that hands kwokctl the reserved ports.
func (p clusterPorts) kwokctlConfig() string {
	return fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  etcdPeerPort: %d
  etcdPort: %d
  kubeApiserverPort: %d
  kwokControllerPort: %d
  kubeControllerManagerPort: %d
  kubeSchedulerPort: %d
`, p.EtcdPeer, p.Etcd, p.APIServer, p.KwokController, p.ControllerManager, p.Scheduler)
}
