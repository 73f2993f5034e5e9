package chaos

import (
	"os"
	"path/filepath"
	"testing"
)

// A failing history keeps what the hub logs gained while it ran, and only that.
func TestSaveHubLines(t *testing.T) {
	dir := t.TempDir()
	hub0, hub1 := filepath.Join(dir, "hub-hub-0.log"), filepath.Join(dir, "hub-hub-1.log")
	if err := os.WriteFile(hub0, []byte("an earlier history\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	from := logSizes([]string{hub0, hub1}) // hub-1 has not started yet
	if err := os.WriteFile(hub0, []byte("an earlier history\nthis history\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hub1, []byte("hub-1 started during it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "seed.hub.log")
	if err := saveHubLines(out, []string{hub0, hub1, filepath.Join(dir, "never-started.log")}, from); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := "==> hub-hub-0.log, from byte 19 <==\nthis history\n==> hub-hub-1.log, from byte 0 <==\nhub-1 started during it\n"
	if string(got) != want {
		t.Fatalf("saved\n%q\nwant\n%q", got, want)
	}
}
