package kind

import (
	"testing"
	"time"
)

func TestScaleTimeout(t *testing.T) {
	for _, tc := range []struct {
		d, wait, want time.Duration
	}{
		{3 * time.Minute, 90 * time.Second, 3 * time.Minute},
		{3 * time.Minute, 5 * time.Minute, 10 * time.Minute},
		{30 * time.Minute, 10 * time.Minute, 200 * time.Minute},
		{2 * time.Minute, 45 * time.Second, time.Minute},
	} {
		if got := scaleTimeout(tc.d, tc.wait); got != tc.want {
			t.Errorf("scaleTimeout(%s, %s) = %s, want %s", tc.d, tc.wait, got, tc.want)
		}
	}
}
