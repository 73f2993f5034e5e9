package fleet

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
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

// A member that leaves takes along its series of the pipeline controller's metrics and of the
// member jobs' (internal/memberwork), as served from the manager's registry; another member's
// stay.
func TestForgetMemberSeries(t *testing.T) {
	ctx := t.Context()
	// The registry is global: leave no series to the tests after this one.
	t.Cleanup(func() { forgetMemberSeries("stays") })
	for _, member := range []string{"gone", "stays"} {
		memberHeld.WithLabelValues(member).Set(1)
		// A job that fails at once still times itself: a series of the member jobs' histogram.
		(&memberwork.ApplyJob{Pipeline: &urutauv1alpha1.CDCPipeline{}, Conn: &members.Conn{Name: member}}).Run(ctx)
	}
	forgetMemberSeries("gone")
	left := map[string][]string{}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "member" {
					left[f.GetName()] = append(left[f.GetName()], l.GetValue())
				}
			}
		}
	}
	for _, name := range []string{"urutau_fleet_member_reconcile_duration_seconds", "urutau_fleet_member_held"} {
		if slices.Contains(left[name], "gone") || !slices.Contains(left[name], "stays") {
			t.Errorf("%s: series of members %v, want stays and not gone", name, left[name])
		}
	}
}
