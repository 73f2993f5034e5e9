package memberwork

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var variableLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)

// The member jobs' metrics name the member in the label "member", never "cluster" (the external
// label Thanos, Mimir and many Prometheus setups add), and every series of a member that left is
// deleted, the others kept.
func TestMemberSeries(t *testing.T) {
	for _, c := range []prometheus.Collector{memberDuration, memberErrors} {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		labels := strings.Split(variableLabels.FindStringSubmatch((<-ch).String())[1], ",")
		if !slices.Contains(labels, "member") || slices.Contains(labels, "cluster") {
			t.Errorf("a member job's metric has the labels %v: want member, and no cluster", labels)
		}
	}
	memberDuration.WithLabelValues("gone").Observe(1)
	memberErrors.WithLabelValues("gone", "unreachable").Inc()
	memberErrors.WithLabelValues("stays", "error").Inc()
	ForgetMemberSeries("gone")
	if n := testutil.CollectAndCount(memberDuration); n != 0 {
		t.Errorf("%d duration series left after the member left, want 0", n)
	}
	if n := testutil.CollectAndCount(memberErrors); n != 1 {
		t.Errorf("%d error series left after one of two members left, want 1 (the other member's)", n)
	}
}
