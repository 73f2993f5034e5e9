package orphans

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A member that leaves takes its series of the scan's metrics along; another member's stay.
func TestForgetMemberSeries(t *testing.T) {
	t.Cleanup(func() { ForgetMemberSeries("stays") })
	for _, m := range []string{"gone", "stays"} {
		orphansFound.WithLabelValues(m).Set(1)
		strayPodsDeleted.WithLabelValues(m).Inc()
	}
	ForgetMemberSeries("gone")
	if n := testutil.CollectAndCount(orphansFound) + testutil.CollectAndCount(strayPodsDeleted); n != 2 {
		t.Errorf("%d series left, want the 2 of the member that stays", n)
	}
}
