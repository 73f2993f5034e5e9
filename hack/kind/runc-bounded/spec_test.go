package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSpecFile(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPath string
		wantKind specKind
	}{
		{"containerd create", []string{"--root", "/run/runc", "--log", "/x/log.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/b/pid", "id"}, "/b", specBundle},
		{"bundle with =", []string{"create", "--bundle=/b", "id"}, "/b", specBundle},
		{"short bundle flag", []string{"run", "-b", "/b", "id"}, "/b", specBundle},
		{"create in the working directory", []string{"--systemd-cgroup", "create", "id"}, ".", specBundle},
		{"exec with a process file", []string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, "/tmp/p.json", specProcess},
		{"exec with a command line", []string{"exec", "id", "ls"}, "", specNone},
		{"other command", []string{"--root", "/r", "delete", "--force", "id"}, "", specNone},
		{"version", []string{"--version"}, "", specNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, kind := specFile(tt.args)
			if path != tt.wantPath || kind != tt.wantKind {
				t.Errorf("specFile(%q) = %q, %v; want %q, %v", tt.args, path, kind, tt.wantPath, tt.wantKind)
			}
		})
	}
}

func TestBoundingSet(t *testing.T) {
	got, err := boundingSet("Name:\tx\nCapEff:\t000001ffffffffff\nCapBnd:\t000001fffeffffff\n")
	if err != nil || got != 0x1fffeffffff {
		t.Errorf("boundingSet = %x, %v; want 1fffeffffff", got, err)
	}
	if _, err := boundingSet("Name:\tx\n"); err == nil {
		t.Error("boundingSet without CapBnd: no error")
	}
}

func TestBoundSpec(t *testing.T) {
	noSysResource := limits{bounding: 0x1fffeffffff, oomScoreAdj: 0}
	full := limits{bounding: 0x1ffffffffff, oomScoreAdj: -1000}
	tests := []struct {
		name        string
		in          string
		kind        specKind
		l           limits
		want        string // "" when unchanged
		wantChanged bool
	}{
		{
			name:        "privileged bundle loses CAP_SYS_RESOURCE in every set, other fields kept",
			in:          `{"ociVersion":"1.2.0","process":{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE","CAP_SYS_ADMIN"]}},"root":{"path":"rootfs"}}`,
			kind:        specBundle,
			l:           noSysResource,
			want:        `{"ociVersion":"1.2.0","process":{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN"],"effective":["CAP_SYS_ADMIN"]}},"root":{"path":"rootfs"}}`,
			wantChanged: true,
		},
		{
			name:        "oomScoreAdj below ours is raised to ours",
			in:          `{"process":{"args":["sh"],"oomScoreAdj":-997}}`,
			kind:        specBundle,
			l:           noSysResource,
			want:        `{"process":{"args":["sh"],"oomScoreAdj":0}}`,
			wantChanged: true,
		},
		{
			name: "oomScoreAdj above ours is kept",
			in:   `{"process":{"args":["sh"],"oomScoreAdj":1000}}`,
			kind: specBundle,
			l:    noSysResource,
		},
		{
			name: "a full bounding set changes nothing",
			in:   `{"process":{"capabilities":{"bounding":["CAP_SYS_RESOURCE"]},"oomScoreAdj":-999}}`,
			kind: specBundle,
			l:    full,
		},
		{
			name:        "exec process file",
			in:          `{"args":["ls"],"capabilities":{"permitted":["CAP_SYS_RESOURCE","CAP_NET_ADMIN"]}}`,
			kind:        specProcess,
			l:           noSysResource,
			want:        `{"args":["ls"],"capabilities":{"permitted":["CAP_NET_ADMIN"]}}`,
			wantChanged: true,
		},
		{
			name: "a capability name it does not know is left to runc",
			in:   `{"process":{"capabilities":{"bounding":["CAP_FUTURE"]}}}`,
			kind: specBundle,
			l:    noSysResource,
		},
		{
			name: "no process",
			in:   `{"root":{"path":"rootfs"}}`,
			kind: specBundle,
			l:    noSysResource,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := boundSpec([]byte(tt.in), tt.kind, tt.l)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Fatalf("changed = %v, want %v (out %s)", changed, tt.wantChanged, out)
			}
			want := tt.want
			if !changed {
				want = tt.in
			}
			var got, wantDoc any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(want), &wantDoc); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(wantDoc, got); d != "" {
				t.Errorf("spec (-want +got):\n%s", d)
			}
		})
	}
	if _, _, err := boundSpec([]byte(`[1]`), specBundle, noSysResource); err == nil {
		t.Error("a spec that is not an object: no error")
	}
}
