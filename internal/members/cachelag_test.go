package members

import (
	"testing"
	"time"
)

// A member's cache is suspect for memberCacheRecovery after the member last left a request
// unanswered, and only then.
func TestLivenessCacheMayLag(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	l := &Liveness{}
	l.sent("a", t0)
	l.returned("a", true, t0)
	if l.CacheMayLag("a", t0) {
		t.Error("a member that always answered: cache suspect")
	}
	l.sent("a", t0)
	l.returned("a", false, t0.Add(time.Second))
	l.sent("a", t0)
	l.returned("a", true, t0.Add(2*time.Second))
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{
		{2 * time.Second, true},
		{time.Second + memberCacheRecovery - time.Millisecond, true},
		{time.Second + memberCacheRecovery, false},
	} {
		if got := l.CacheMayLag("a", t0.Add(tc.at)); got != tc.want {
			t.Errorf("at %s after an unanswered request at 1s: cacheMayLag = %v, want %v", tc.at, got, tc.want)
		}
	}
	if l.CacheMayLag("b", t0) || (*Liveness)(nil).CacheMayLag("a", t0) {
		t.Error("an unknown member or no Liveness: cache suspect")
	}
}
