package members

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/urutau-io/fleet/internal/inventory"
)

// listing is an inventory whose members a test sets.
type listing struct {
	mu      sync.Mutex
	members []inventory.Member
}

func (l *listing) EntryType() client.Object     { return &corev1.Secret{} }
func (l *listing) IsEntry(o client.Object) bool { return true }

func (l *listing) Members(context.Context) ([]inventory.Member, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.members), nil
}

func (l *listing) set(names ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.members = nil
	for _, n := range names {
		l.members = append(l.members, inventory.Member{Name: n})
	}
}

// A member that leaves the inventory is reported to Left once, however it left, and only once
// no check of it runs: a check that ends after it left must not write what then stays.
func TestMonitorReportsMembersThatLeft(t *testing.T) {
	inv := &listing{}
	var left []string
	h := &Monitor{Inventory: inv, Interval: time.Hour, Left: func(m string) { left = append(left, m) }}
	h.next = map[string]time.Time{"a": time.Now(), "b": time.Now(), "c": time.Now()}
	h.running = map[string]bool{"b": true}
	inv.set("c")

	if got := h.prune(mustList(t, inv)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("left %v, want [a]: b's check still runs", got)
	}
	h.done("b", time.Now())
	if got := h.prune(mustList(t, inv)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("left %v, want [b] once its check ended", got)
	}
	if got := h.prune(mustList(t, inv)); len(got) != 0 {
		t.Fatalf("left %v again", got)
	}

	// A member whose entry changed (checked soon) and that then leaves before the next round
	// is still reported.
	h.next["d"] = time.Now().Add(time.Hour)
	h.CheckSoon("d")
	if got := h.prune(mustList(t, inv)); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("left %v, want [d] after CheckSoon", got)
	}

	// Through a round: the hook is called.
	inv.set()
	h.round(context.Background())
	if !slices.Equal(left, []string{"c"}) {
		t.Fatalf("Left called for %v, want [c]", left)
	}
}

func mustList(t *testing.T, inv *listing) []inventory.Member {
	t.Helper()
	ms, err := inv.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
