package fencelease

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A member that leaves takes its series of the renewals along; another member's stay.
func TestForgetMemberSeries(t *testing.T) {
	t.Cleanup(func() { ForgetMemberSeries("stays") })
	for _, m := range []string{"gone", "stays"} {
		renewals.WithLabelValues(m, "renewed").Inc()
		renewals.WithLabelValues(m, "refused").Inc()
	}
	ForgetMemberSeries("gone")
	if n := testutil.CollectAndCount(renewals); n != 2 {
		t.Errorf("%d series left, want the 2 of the member that stays", n)
	}
}
