package cli

import (
	"testing"
	"time"
)

func TestExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, c := range []struct {
		at   *time.Time
		want string
	}{
		{nil, "<none>"},
		{&time.Time{}, "<none>"},
		{at(30 * 24 * time.Hour), "in 30d"},
		{at(90 * time.Minute), "in 90m"},
		{at(-4 * time.Hour), "expired 4h ago"},
		{at(0), "expired 0s ago"},
	} {
		if got := expiry(c.at, now); got != c.want {
			t.Errorf("expiry(%v) = %q, want %q", c.at, got, c.want)
		}
	}
}
