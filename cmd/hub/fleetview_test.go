package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFleetCommandsInTheHub: kubectl urutau's commands answer from the hub binary too.
func TestFleetCommandsInTheHub(t *testing.T) {
	for _, cmd := range fleetCommands {
		var out bytes.Buffer
		if err := run([]string{cmd, "--help"}, &out); err != nil {
			t.Fatalf("hub %s --help: %v", cmd, err)
		}
		if !strings.Contains(out.String(), "Usage:\n  hub "+cmd) {
			t.Errorf("hub %s --help printed:\n%s", cmd, out.String())
		}
	}
}
