package ssa

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A member that leaves takes its series along, and only its own.
func TestForgetMemberSeries(t *testing.T) {
	applies.WithLabelValues("gone", "Service").Inc()
	noopApplies.WithLabelValues("gone", "Service").Inc()
	applies.WithLabelValues("stays", "Service").Inc()
	ForgetMemberSeries("gone")
	if n := testutil.CollectAndCount(applies) + testutil.CollectAndCount(noopApplies); n != 1 {
		t.Fatalf("%d series left, want the one of member stays", n)
	}
}
