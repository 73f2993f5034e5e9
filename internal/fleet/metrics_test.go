package fleet

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

var variableLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)

// labelsOf are the variable labels of every metric c describes.
func labelsOf(c prometheus.Collector) [][]string {
	ch := make(chan *prometheus.Desc, 8)
	c.Describe(ch)
	close(ch)
	var out [][]string
	for d := range ch {
		m := variableLabels.FindStringSubmatch(d.String())
		out = append(out, strings.Split(m[1], ","))
	}
	return out
}

// Every per-member metric names the member in the label "member", never "cluster" (the external
// label Thanos, Mimir and many Prometheus setups add): with both, one overwrites the other.
func TestMemberLabel(t *testing.T) {
	for _, v := range memberMetrics {
		for _, labels := range labelsOf(v.(prometheus.Collector)) {
			if !slices.Contains(labels, "member") || slices.Contains(labels, "cluster") {
				t.Errorf("a per-member metric has the labels %v: want member, and no cluster", labels)
			}
		}
	}
}
