package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func TestPlatformNames(t *testing.T) {
	for _, tc := range []struct {
		platform                     string
		binary, builtBinary, archive string
	}{
		{"linux/amd64", "kubectl-urutau", "kubectl-urutau-linux-amd64", "kubectl-urutau_v0.1.0_linux_amd64.tar.gz"},
		{"darwin/arm64", "kubectl-urutau", "kubectl-urutau-darwin-arm64", "kubectl-urutau_v0.1.0_darwin_arm64.tar.gz"},
		{"windows/amd64", "kubectl-urutau.exe", "kubectl-urutau-windows-amd64.exe", "kubectl-urutau_v0.1.0_windows_amd64.zip"},
	} {
		p, err := ParsePlatform(tc.platform)
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != tc.platform || p.Binary() != tc.binary || p.BuiltBinary() != tc.builtBinary || p.Archive("0.1.0") != tc.archive {
			t.Errorf("%s: %s, %s, %s, %s", tc.platform, p, p.Binary(), p.BuiltBinary(), p.Archive("0.1.0"))
		}
	}
	for _, bad := range []string{"", "linux", "linux/", "/amd64", "linux/amd64/v2"} {
		if _, err := ParsePlatform(bad); err == nil || !strings.Contains(err.Error(), "want os/arch") {
			t.Errorf("ParsePlatform(%q): %v, want an error", bad, err)
		}
	}
}

// TestWritePluginArchive reads each archive back: the files at its root, the binary executable,
// the same bytes for the same input.
func TestWritePluginArchive(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, platform := range []string{"linux/amd64", "windows/amd64"} {
		p, _ := ParsePlatform(platform)
		files := []ArchiveFile{{Name: p.Binary(), Mode: 0o755, Data: []byte("binary")}, {Name: "LICENSE", Mode: 0o644, Data: []byte("license")}}
		var a, b bytes.Buffer
		if err := WritePluginArchive(&a, p, files, at); err != nil {
			t.Fatal(err)
		}
		if err := WritePluginArchive(&b, p, files, at); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two archives of the same files differ", p)
		}
		got := readArchive(t, p, a.Bytes())
		want := []ArchiveFile{{Name: p.Binary(), Mode: 0o755, Data: []byte("binary")}, {Name: "LICENSE", Mode: 0o644, Data: []byte("license")}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s archive (-want +got):\n%s", p, d)
		}
	}
}

func readArchive(t *testing.T, p Platform, data []byte) []ArchiveFile {
	t.Helper()
	var out []ArchiveFile
	if p.OS == "windows" {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			content, _ := io.ReadAll(r)
			out = append(out, ArchiveFile{Name: f.Name, Mode: int64(f.Mode().Perm()), Data: content})
		}
		return out
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Uname != "" {
			t.Errorf("%s: entry %s has an owner (%d, %q)", p, h.Name, h.Uid, h.Uname)
		}
		content, _ := io.ReadAll(tr)
		out = append(out, ArchiveFile{Name: h.Name, Mode: h.Mode, Data: content})
	}
}

// TestKrewManifest holds urutau.yaml to its golden file, and to what krew's validation requires.
func TestKrewManifest(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	var archives []PluginArchive
	for _, s := range []string{"linux/amd64", "darwin/arm64", "windows/amd64"} {
		p, _ := ParsePlatform(s)
		archives = append(archives, PluginArchive{Platform: p, File: p.Archive("0.1.0"), SHA256: sum, Files: []string{"LICENSE"}})
	}
	got, err := KrewManifest("0.1.0", DefaultDownloadURL+"/", archives)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "urutau.yaml", got)

	// What krew's validation (sigs.k8s.io/krew internal/index/validation) checks.
	var m struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string
		Metadata   struct{ Name string }
		Spec       struct {
			Version          string
			ShortDescription string `yaml:"shortDescription"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				}
				URI, SHA256, Bin string
				Files            []struct{ From, To string }
			}
		}
	}
	if err := yaml.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != PluginName ||
		m.Spec.Version != "v0.1.0" || m.Spec.ShortDescription == "" || strings.ContainsAny(m.Spec.ShortDescription, "\r\n") || len(m.Spec.Platforms) != 3 {
		t.Fatalf("manifest:\n%s", got)
	}
	win := m.Spec.Platforms[2]
	if win.Bin != "kubectl-urutau.exe" || win.Selector.MatchLabels["os"] != "windows" || win.SHA256 != sum ||
		win.URI != "https://github.com/urutau-io/fleet/releases/download/v0.1.0/kubectl-urutau_v0.1.0_windows_amd64.zip" ||
		len(win.Files) != 2 || win.Files[0].From != "kubectl-urutau.exe" || win.Files[1].From != "LICENSE" {
		t.Errorf("the windows platform: %+v", win)
	}

	if _, err := KrewManifest("v0.1.0", DefaultDownloadURL, archives); err == nil {
		t.Error("a version with a leading v: no error")
	}
	archives[0].SHA256 = "abc"
	if _, err := KrewManifest("0.1.0", DefaultDownloadURL, archives); err == nil || !strings.Contains(err.Error(), "kubectl-urutau_v0.1.0_linux_amd64.tar.gz") {
		t.Errorf("a short sha256: %v, want an error naming the archive", err)
	}
}

// TestChecksums: sha256sum itself checks the file.
func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"install.yaml": "a", "kubectl-urutau_v0.1.0_linux_amd64.tar.gz": "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sums, err := Checksums(dir, []string{"install.yaml", "kubectl-urutau_v0.1.0_linux_amd64.tar.gz"})
	if err != nil {
		t.Fatal(err)
	}
	want := "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  install.yaml\n" +
		"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  kubectl-urutau_v0.1.0_linux_amd64.tar.gz\n"
	if string(sums) != want {
		t.Errorf("got\n%s\nwant\n%s", sums, want)
	}
	if err := os.WriteFile(filepath.Join(dir, ChecksumsFile), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sha256sum", "--strict", "-c", ChecksumsFile)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
	if _, err := Checksums(dir, []string{"missing"}); err == nil {
		t.Error("a missing file: no error")
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", path, d)
	}
}
