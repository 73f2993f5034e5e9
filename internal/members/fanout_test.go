package members

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fanOutRecorder records fanOut's callbacks.
type fanOutRecorder struct {
	mu   sync.Mutex
	slow []string
	ends map[string]bool // member -> late
	endc chan string
}

func newFanOutRecorder() *fanOutRecorder {
	return &fanOutRecorder{ends: map[string]bool{}, endc: make(chan string, 10)}
}

func (f *fanOutRecorder) options(patience time.Duration) FanOutOptions {
	return FanOutOptions{
		Timeout: time.Minute, Patience: patience,
		Slow: func(m string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.slow = append(f.slow, m)
		},
		End: func(m string, late bool) {
			f.mu.Lock()
			f.ends[m] = late
			f.mu.Unlock()
			f.endc <- m
		},
	}
}

// failed is fanOut's panic result in these tests.
func failed(m string, err error) string { return "failed " + m + ": " + err.Error() }

// work answers at once for every member but those in hang, which wait for release (or their
// context).
func work(hang map[string]bool, release <-chan struct{}) func(context.Context, string) string {
	return func(ctx context.Context, m string) string {
		if hang[m] {
			select {
			case <-release:
			case <-ctx.Done():
				return "timed out"
			}
		}
		return "answered " + m
	}
}

func TestFanOutWaitsForMembersThatAnswer(t *testing.T) {
	rec := newFanOutRecorder()
	done, late := FanOut(context.Background(), rec.options(time.Minute), []string{"a", "b", "c"}, work(nil, nil), failed)
	if len(late) != 0 || len(done) != 3 || done["b"] != "answered b" {
		t.Fatalf("done = %v, late = %v; want all three done", done, late)
	}
	if len(rec.slow) != 0 || len(rec.ends) != 3 || rec.ends["a"] || rec.ends["b"] || rec.ends["c"] {
		t.Fatalf("slow = %v, ends = %v; want none slow and three ends in time", rec.slow, rec.ends)
	}
}

func TestFanOutGoesOnWithoutAHungMember(t *testing.T) {
	rec := newFanOutRecorder()
	release := make(chan struct{})
	begun := time.Now()
	// Patience of a minute: only giveUp (the member stays silent) can end the wait.
	o := rec.options(time.Minute)
	o.GiveUp = func(m string, since time.Time) bool { return m == "hung" && time.Since(since) > 50*time.Millisecond }
	done, late := FanOut(context.Background(), o, []string{"a", "hung", "b"}, work(map[string]bool{"hung": true}, release), failed)
	if took := time.Since(begun); took > 20*time.Second {
		t.Fatalf("fanOut waited %s for the hung member", took)
	}
	if !slices.Equal(late, []string{"hung"}) || len(done) != 2 || done["a"] == "" || done["b"] == "" {
		t.Fatalf("done = %v, late = %v; want a and b done, hung late", done, late)
	}
	rec.mu.Lock()
	slow := slices.Clone(rec.slow)
	_, ended := rec.ends["hung"]
	rec.mu.Unlock()
	if !slices.Equal(slow, []string{"hung"}) || ended {
		t.Fatalf("slow = %v, hung ended = %v; want hung slow and its work still running", slow, ended)
	}
	// a and b ended before fanOut returned; then the late work ends, and says it is late.
	close(release)
	for m := range rec.endc {
		if m == "hung" {
			break
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.ends["hung"] || rec.ends["a"] || rec.ends["b"] {
		t.Fatalf("ends = %v; want hung late, a and b in time", rec.ends)
	}
}

func TestFanOutPatienceBoundsALoneMember(t *testing.T) {
	rec := newFanOutRecorder()
	release := make(chan struct{})
	defer close(release)
	done, late := FanOut(context.Background(), rec.options(100*time.Millisecond), []string{"hung"},
		work(map[string]bool{"hung": true}, release), failed)
	if len(done) != 0 || !slices.Equal(late, []string{"hung"}) {
		t.Fatalf("done = %v, late = %v; want hung late after the patience", done, late)
	}
}

func TestFanOutDoesNotStartWhereWorkRuns(t *testing.T) {
	rec := newFanOutRecorder()
	o := rec.options(time.Minute)
	var ran []string
	var mu sync.Mutex
	o.Start = func(m string) bool { return m != "busy" }
	done, late := FanOut(context.Background(), o, []string{"a", "busy"}, func(_ context.Context, m string) string {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, m)
		return m
	}, failed)
	if !slices.Equal(ran, []string{"a"}) || len(done) != 1 || !slices.Equal(late, []string{"busy"}) {
		t.Fatalf("ran = %v, done = %v, late = %v; want only a run, busy late", ran, done, late)
	}
	if len(rec.slow) != 0 {
		t.Fatalf("slow = %v: a member whose work was not started is not slow", rec.slow)
	}
}

// A panic in one member's work is that member's failure, not the hub's end.
func TestFanOutRecoversAPanic(t *testing.T) {
	rec := newFanOutRecorder()
	done, late := FanOut(context.Background(), rec.options(time.Minute), []string{"a", "boom"}, func(_ context.Context, m string) string {
		if m == "boom" {
			panic("nil map")
		}
		return "answered " + m
	}, failed)
	if len(late) != 0 || done["a"] != "answered a" || !strings.Contains(done["boom"], `failed boom: internal error while working on cluster "boom": nil map`) {
		t.Fatalf("done = %v, late = %v; want a answered, boom failed with the panic", done, late)
	}
	if rec.ends["boom"] {
		t.Fatal("the panicking member's work was not reported ended in time")
	}
}
