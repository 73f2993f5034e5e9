package members

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// The expiry of a member's credentials is exported from its entry's annotation; an entry without
// one, or with one that is not a time, has no series, and a member that leaves loses its series.
func TestRecordCredentialsExpiry(t *testing.T) {
	memberCredentialsExpiry.Reset()
	t.Cleanup(memberCredentialsExpiry.Reset)
	entry := func(name, at string) inventory.Member {
		m := inventory.Member{Name: name, Annotations: map[string]string{}}
		if at != "" {
			m.Annotations[urutauv1alpha1.AnnotationCredentialsExpireAt] = at
		}
		return m
	}
	series := func(want int, after string) {
		t.Helper()
		if got := testutil.CollectAndCount(memberCredentialsExpiry); got != want {
			t.Fatalf("after %s: %d expiry series, want %d", after, got, want)
		}
	}
	recordCredentialsExpiry(entry("a", "2027-01-02T03:04:05Z"))
	recordCredentialsExpiry(entry("b", "2027-01-02T03:04:05+01:00"))
	series(2, "two entries with an expiry")
	if got := testutil.ToFloat64(memberCredentialsExpiry.WithLabelValues("a")); got != 1798859045 {
		t.Fatalf("expiry of a = %v, want 1798859045 (2027-01-02T03:04:05Z)", got)
	}
	if got := testutil.ToFloat64(memberCredentialsExpiry.WithLabelValues("b")); got != 1798859045-3600 {
		t.Fatalf("expiry of b = %v, want %v (an hour earlier: +01:00)", got, 1798859045-3600)
	}
	// b re-joined without a token of its own (no annotation); c's annotation is not a time.
	recordCredentialsExpiry(entry("b", ""))
	recordCredentialsExpiry(entry("c", "next tuesday"))
	series(1, "b lost its annotation and c's is unreadable")
	(&Set{}).Forget("a")
	series(0, "a left the inventory")
}

// Every metric of a member names it in the label "member", never "cluster" (the external label
// Thanos, Mimir and many Prometheus setups add): with both, one overwrites the other.
func TestLabel(t *testing.T) {
	for _, c := range []prometheus.Collector{memberUp, memberEngaged, memberCredentialsExpiry, memberPanics} {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		if d := (<-ch).String(); !strings.Contains(d, "variableLabels: {member}") {
			t.Errorf("%s: want the one variable label member", d)
		}
	}
}
