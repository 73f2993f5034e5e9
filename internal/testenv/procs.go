package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ProcessIDs finds the cluster's running API server and etcd processes (Linux, from /proc), for
// accounting their CPU time. They are told apart from other clusters' by the ports in their
// arguments.
func (c *Cluster) ProcessIDs() ([]int, error) {
	cp := c.env.ControlPlane
	if cp.APIServer == nil || cp.Etcd == nil || cp.Etcd.URL == nil {
		return nil, fmt.Errorf("cluster %q is not started", c.Name)
	}
	marks := [][]byte{
		[]byte("--secure-port=" + cp.APIServer.Port + "\x00"),
		[]byte("--listen-client-urls=" + cp.Etcd.URL.String() + "\x00"),
	}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		args, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		for _, m := range marks {
			if bytes.Contains(args, m) {
				pid, _ := strconv.Atoi(filepath.Base(d))
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}
