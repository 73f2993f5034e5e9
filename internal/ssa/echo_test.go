package ssa

import (
	"fmt"
	"testing"
)

func TestEchoFilter(t *testing.T) {
	t.Run("an event after the write's answer is an echo; another resourceVersion is not", func(t *testing.T) {
		var f EchoFilter
		f.Begin("k")
		if f.End("k", "10") {
			t.Fatal("end reported a foreign event, none was seen")
		}
		if !f.IsEcho("k", "10") {
			t.Error("the write's own resourceVersion is not an echo")
		}
		if f.IsEcho("k", "11") {
			t.Error("a later change by someone else was taken for an echo")
		}
		if f.IsEcho("other", "10") {
			t.Error("another object's event was taken for an echo")
		}
	})
	t.Run("an event that arrives before the answer is held, and dropped when it is ours", func(t *testing.T) {
		var f EchoFilter
		f.Begin("k")
		if !f.IsEcho("k", "10") {
			t.Fatal("an event during the write was let through")
		}
		if f.End("k", "10") {
			t.Error("our own early echo was reported as foreign")
		}
	})
	t.Run("a change by someone else that crosses the write is reported by end", func(t *testing.T) {
		var f EchoFilter
		f.Begin("k")
		f.IsEcho("k", "9") // someone else's write, just before ours
		f.IsEcho("k", "10")
		if !f.End("k", "10") {
			t.Error("a foreign event held during the write was not reported")
		}
		// Decided once: the next write starts clean.
		f.Begin("k")
		if f.End("k", "12") {
			t.Error("a held event was reported twice")
		}
	})
	t.Run("a failed write reports what it held", func(t *testing.T) {
		var f EchoFilter
		f.Begin("k")
		f.IsEcho("k", "10")
		if !f.End("k", "") {
			t.Error("an event held during a failed write was dropped")
		}
		if f.IsEcho("k", "10") {
			t.Error("a failed write made an echo")
		}
	})
	t.Run("the echoes of the earlier writes of a reconcile are recognised after later ones", func(t *testing.T) {
		var f EchoFilter
		for _, rv := range []string{"10", "11", "12"} { // finalizer, inventory, status
			f.Begin("k")
			f.End("k", rv)
		}
		for _, rv := range []string{"10", "11", "12"} {
			if !f.IsEcho("k", rv) {
				t.Errorf("echo of write %s not recognised", rv)
			}
		}
	})
	t.Run("memory is bounded per object and dropped by forget", func(t *testing.T) {
		var f EchoFilter
		for i := range 10 {
			f.Begin("k")
			f.End("k", fmt.Sprint(i))
		}
		if n := len(f.written["k"]); n != echoesRemembered {
			t.Errorf("%d resourceVersions remembered, want %d", n, echoesRemembered)
		}
		if f.IsEcho("k", "0") || !f.IsEcho("k", "9") {
			t.Error("the oldest write should be forgotten, the newest remembered")
		}
		f.Forget("k")
		if f.IsEcho("k", "9") {
			t.Error("forget kept the object's resourceVersions")
		}
	})
	t.Run("an event without a resourceVersion is never an echo", func(t *testing.T) {
		var f EchoFilter
		f.Begin("k")
		if f.IsEcho("k", "") {
			t.Error("an event without resourceVersion was held")
		}
		f.End("k", "1")
	})
}
