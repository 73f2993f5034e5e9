package chaos

import (
	"os"
	"path/filepath"
	"testing"
)

// A failing history keeps the hub log lines about it, and only those.
func TestSaveHubLines(t *testing.T) {
	dir := t.TempDir()
	hub0 := filepath.Join(dir, "hub-hub-0.log")
	lines := `{"msg":"applied","namespace":"chaos-71","name":"p1"}
{"msg":"applied","namespace":"chaos-7","name":"p1"}
{"msg":"Reconciler error","CDCPipeline":{"name":"p1","namespace":"chaos-71"}}
{"msg":"reader lease changed","holder":"uid-71"}
{"msg":"event","object":"chaos-71/p1"}
{"msg":"event","object":"chaos-710/p1"}
`
	if err := os.WriteFile(hub0, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &Recording{Namespace: "chaos-71", Events: []Event{
		{Cluster: hubCluster, Kind: kindPipelines, Obj: ObjInfo{UID: "uid-71"}},
		{Cluster: "member-a", Kind: kindPods, Obj: ObjInfo{UID: "pod-uid"}},
	}}
	out := filepath.Join(dir, "seed.hub.log")
	// hub-1 never started: its log does not exist, which is no error.
	if err := saveHubLines(out, []string{hub0, filepath.Join(dir, "hub-hub-1.log")}, historyNeedles(rec)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `==> hub-hub-0.log <==
{"msg":"applied","namespace":"chaos-71","name":"p1"}
{"msg":"Reconciler error","CDCPipeline":{"name":"p1","namespace":"chaos-71"}}
{"msg":"reader lease changed","holder":"uid-71"}
{"msg":"event","object":"chaos-71/p1"}
`
	if string(got) != want {
		t.Fatalf("saved\n%s\nwant\n%s", got, want)
	}
}
