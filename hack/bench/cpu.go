package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urutau-io/fleet/internal/testenv"
)

// clockTicks is USER_HZ, the unit of /proc CPU times (100 on every Linux the bench runs on).
const clockTicks = 100

// cpuUse is CPU time in seconds by group of processes, plus the machine's busy and total time
// (all CPUs, all processes, from /proc/stat), so a run can say whether it was CPU-bound.
type cpuUse struct {
	hub, hubAPI, members, bench float64
	busy, total                 float64
}

func (c cpuUse) sub(o cpuUse) cpuUse {
	return cpuUse{
		hub: c.hub - o.hub, hubAPI: c.hubAPI - o.hubAPI, members: c.members - o.members, bench: c.bench - o.bench,
		busy: c.busy - o.busy, total: c.total - o.total,
	}
}

func (c cpuUse) add(o cpuUse) cpuUse {
	return cpuUse{
		hub: c.hub + o.hub, hubAPI: c.hubAPI + o.hubAPI, members: c.members + o.members, bench: c.bench + o.bench,
		busy: c.busy + o.busy, total: c.total + o.total,
	}
}

func (c cpuUse) scale(f float64) cpuUse {
	return cpuUse{
		hub: c.hub * f, hubAPI: c.hubAPI * f, members: c.members * f, bench: c.bench * f,
		busy: c.busy * f, total: c.total * f,
	}
}

// ours is the CPU time of the processes the bench accounts for.
func (c cpuUse) ours() float64 { return c.hub + c.hubAPI + c.members + c.bench }

// utilisation is the share of the machine's CPU time that was busy.
func (c cpuUse) utilisation() float64 {
	if c.total <= 0 {
		return 0
	}
	return c.busy / c.total
}

// othersShare is the share of the machine's CPU time that processes other than the bench's
// used: the load the bench does not control. (/proc/stat and /proc/<pid>/stat are sampled a few
// milliseconds apart, so a share near 0 may come out slightly negative: it is clamped.)
func (c cpuUse) othersShare() float64 {
	if c.total <= 0 {
		return 0
	}
	return max(0, (c.busy-c.ours())/c.total)
}

// cpuNow reads the CPU time used so far by the hub process (nil: none), the hub API server and
// etcd, the members' API servers and etcds, and the bench itself (its clients and observers).
func cpuNow(hub *hubProcess, hubCluster *testenv.Cluster, members []*testenv.Cluster) (cpuUse, error) {
	var u cpuUse
	var err error
	if hub != nil {
		if u.hub, err = procCPU(hub.cmd.Process.Pid); err != nil {
			return u, err
		}
	}
	if u.hubAPI, err = clusterCPU(hubCluster); err != nil {
		return u, err
	}
	for _, m := range members {
		s, err := clusterCPU(m)
		if err != nil {
			return u, err
		}
		u.members += s
	}
	if u.bench, err = procCPU(os.Getpid()); err != nil {
		return u, err
	}
	u.busy, u.total, err = machineCPU()
	return u, err
}

func clusterCPU(c *testenv.Cluster) (float64, error) {
	pids, err := c.ProcessIDs()
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, pid := range pids {
		s, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += s
	}
	return sum, nil
}

// procCPU is utime+stime of a process (all its threads), in seconds.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields are counted after its closing parenthesis.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return float64(utime+stime) / clockTicks, nil
}

// machineCPU is the machine's busy and total CPU time so far, all CPUs, in seconds.
func machineCPU() (busy, total float64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected format")
	}
	var idle float64
	for i, v := range f[1:] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		// user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
		if i >= 8 {
			break
		}
		total += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return (total - idle) / clockTicks, total / clockTicks, nil
}
