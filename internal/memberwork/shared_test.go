package memberwork

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/urutau-io/fleet/internal/members"
)

// engaged is a member's cluster object, as the provider engages it: compared by identity.
type engaged struct{ cluster.Cluster }

func TestSharedReadOnePerWindow(t *testing.T) {
	// members.Set hands each job its own copy of the member's Conn: copies share reads.
	conn := members.Conn{Name: "a", Cluster: &engaged{}}
	copy1, copy2 := conn, conn
	reengaged := members.Conn{Name: "a", Cluster: &engaged{}}
	var reads atomic.Int32
	read := func(context.Context) (string, error) { reads.Add(1); return "v", nil }
	var s sharedRead[string]
	for _, k := range []sharedKey{keyOf(&copy1, "cdc"), keyOf(&copy2, "cdc"), keyOf(&copy1, "other"), keyOf(&reengaged, "cdc"), keyOf(&copy2, "cdc")} {
		if v, err := s.get(t.Context(), time.Hour, k, read); v != "v" || err != nil {
			t.Fatalf("got %q, %v", v, err)
		}
	}
	if got := reads.Load(); got != 3 {
		t.Errorf("%d reads, want 3: one per namespace of one cluster object (a member engaged again reads afresh)", got)
	}

	reads.Store(0)
	var fresh sharedRead[string]
	for range 3 {
		_, _ = fresh.get(t.Context(), time.Nanosecond, keyOf(&copy1, "cdc"), read)
	}
	if got := reads.Load(); got != 3 {
		t.Errorf("%d reads past the window, want 3", got)
	}
	if n := len(fresh.reads); n != 1 {
		t.Errorf("%d reads kept, want 1: the old ones are forgotten", n)
	}
}

func TestSharedReadWaitsForTheReadInFlight(t *testing.T) {
	conn := &members.Conn{Name: "a", Cluster: &engaged{}}
	release := make(chan struct{})
	var reads atomic.Int32
	read := func(context.Context) (int, error) { reads.Add(1); <-release; return 7, nil }
	var s sharedRead[int]
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = s.get(t.Context(), time.Hour, keyOf(conn, "cdc"), read) })
	}
	time.Sleep(50 * time.Millisecond) // let them queue behind the first
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads for 8 jobs at once, want 1", n)
	}
	for i, v := range got {
		if v != 7 {
			t.Errorf("job %d got %d, want the shared answer 7", i, v)
		}
	}
}

func TestSharedReadKeepsNoFailure(t *testing.T) {
	conn := &members.Conn{Name: "a"}
	var s sharedRead[int]
	boom := errors.New("boom")
	if _, err := s.get(t.Context(), time.Hour, keyOf(conn, "cdc"), func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the read's error", err)
	}
	v, err := s.get(t.Context(), time.Hour, keyOf(conn, "cdc"), func(context.Context) (int, error) { return 3, nil })
	if v != 3 || err != nil {
		t.Errorf("after a failed read: got %d, %v; want a new read", v, err)
	}

	// A job called off while it reads does not fail the jobs that waited for it.
	var calledOff sharedRead[int]
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := calledOff.get(ctx, time.Hour, keyOf(conn, "cdc"), func(ctx context.Context) (int, error) {
			close(started)
			<-ctx.Done()
			return 0, ctx.Err()
		})
		done <- err
	}()
	<-started
	waiter := make(chan int)
	go func() {
		v, _ := calledOff.get(t.Context(), time.Hour, keyOf(conn, "cdc"), func(context.Context) (int, error) { return 5, nil })
		waiter <- v
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the called-off job got %v", err)
	}
	if v := <-waiter; v != 5 {
		t.Errorf("the waiting job got %d, want its own read's 5", v)
	}
}

// A read that panics fails the jobs that waited for it, and is not kept: the next job reads.
func TestSharedReadPanics(t *testing.T) {
	conn := &members.Conn{Name: "a", Cluster: &engaged{}}
	var s sharedRead[int]
	if _, err := s.get(t.Context(), time.Hour, keyOf(conn, "cdc"), func(context.Context) (int, error) { panic("boom") }); err == nil {
		t.Fatal("a read that panicked answered no error")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if v, err := s.get(ctx, time.Hour, keyOf(conn, "cdc"), func(context.Context) (int, error) { return 2, nil }); v != 2 || err != nil {
		t.Fatalf("after a panic: got %d, %v; want a new read", v, err)
	}
}

// A job that waited for a read whose own deadline passed reads again under its own.
func TestSharedReadOthersDeadline(t *testing.T) {
	conn := &members.Conn{Name: "a", Cluster: &engaged{}}
	var s sharedRead[int]
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	started := make(chan struct{})
	go func() {
		_, _ = s.get(short, time.Hour, keyOf(conn, "cdc"), func(ctx context.Context) (int, error) {
			close(started)
			<-ctx.Done()
			return 0, ctx.Err()
		})
	}()
	<-started
	v, err := s.get(t.Context(), time.Hour, keyOf(conn, "cdc"), func(context.Context) (int, error) { return 9, nil })
	if v != 9 || err != nil {
		t.Fatalf("got %d, %v; want this job's own read", v, err)
	}
}

// TestSharedScaleTargets: the member's ScaledObjects are listed once per window, and a
// ScaledObject made after the shared read is seen once the window has passed.
func TestSharedScaleTargets(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kedav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	member := newCountingMember(scheme, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cdc"}})
	conn := &members.Conn{Name: "a", Cluster: &engaged{}, Live: member}
	shared := &SharedReads{Window: time.Hour}
	for range 5 {
		if ts, err := shared.scaleTargets(t.Context(), conn, "cdc"); err != nil || len(ts) != 0 {
			t.Fatalf("got %v, %v", ts, err)
		}
		if _, err := shared.namespace(t.Context(), conn, "cdc"); err != nil {
			t.Fatal(err)
		}
	}
	if member.lists != 1 || member.gets != 1 {
		t.Errorf("%d LISTs and %d GETs for five jobs, want 1 and 1", member.lists, member.gets)
	}

	so := &kedav1alpha1.ScaledObject{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "by-hand"},
		Spec: kedav1alpha1.ScaledObjectSpec{ScaleTargetRef: &kedav1alpha1.ScaleTarget{Name: "shop-coordinator"}}}
	if err := member.Create(t.Context(), so); err != nil {
		t.Fatal(err)
	}
	shared.Window = time.Nanosecond
	ts, err := shared.scaleTargets(t.Context(), conn, "cdc")
	if err != nil || len(ts) != 1 || ts[0] != (scaleTarget{name: "by-hand", target: "shop-coordinator"}) {
		t.Errorf("past the window: got %v, %v; want the new ScaledObject", ts, err)
	}
}
