package localfleet

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Reservations keep a cluster's ports from every other cluster while it exists, stopped or not;
// they lapse when the cluster's work dir is gone, and a cluster made again gets its own back.
func TestReservePorts(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	work := t.TempDir()
	a, b := filepath.Join(work, "a"), filepath.Join(work, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pa := mustReserve(t, a)
	// Something else listens on a port the registry would hand out next: it is skipped.
	next := pa.Scheduler - 1
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(next))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	pb := mustReserve(t, b)
	seen := map[int]string{}
	for owner, ports := range map[string]clusterPorts{a: pa, b: pb} {
		for _, p := range ports.list() {
			if other, dup := seen[p]; dup {
				t.Fatalf("port %d reserved for %s and %s", p, other, owner)
			}
			if p == next {
				t.Fatalf("port %d handed out while another process listens on it", p)
			}
			seen[p] = owner
		}
	}
	// a's ports are taken though nothing listens on them (its API server is down): not reused.
	if again := mustReserve(t, a); again != pa {
		t.Fatalf("cluster a made again got %+v, want its own %+v", again, pa)
	}
	// a's work dir is gone (its test process was killed): its reservations are stale.
	if err := os.RemoveAll(a); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(work, "c")
	if err := os.Mkdir(c, 0o755); err != nil {
		t.Fatal(err)
	}
	if pc := mustReserve(t, c); pc != pa {
		t.Fatalf("after a's work dir went, c got %+v, want a's stale ports %+v", pc, pa)
	}
	if err := releasePorts(b); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(portRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 6 {
		t.Fatalf("after releasing b the registry holds %d reservations, want c's 6", len(entries))
	}
}

func mustReserve(t *testing.T, owner string) clusterPorts {
	t.Helper()
	p, err := reservePorts(owner)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (p clusterPorts) list() []int {
	return []int{p.EtcdPeer, p.Etcd, p.APIServer, p.KwokController, p.ControllerManager, p.Scheduler}
}
