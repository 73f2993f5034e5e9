package ssa

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A member that leaves takes its series along, and only its own.
func TestForgetMemberSeries(t *testing.T) {
	// The registry is global: a second run (-count) would find the series of stays already there.
	t.Cleanup(func() { ForgetMemberSeries("stays") })
	series := func() int { return testutil.CollectAndCount(applies) + testutil.CollectAndCount(noopApplies) }
	before := series() // other tests of the package leave theirs
	applies.WithLabelValues("gone", "Service").Inc()
	noopApplies.WithLabelValues("gone", "Service").Inc()
	applies.WithLabelValues("stays", "Service").Inc()
	ForgetMemberSeries("gone")
	if n := series() - before; n != 1 {
		t.Fatalf("%d new series left, want the one of member stays", n)
	}
}
