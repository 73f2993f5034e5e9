package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// What krew installs: the plugin urutau, whose binary kubectl runs for `kubectl urutau`.
const (
	PluginName   = "urutau"
	PluginBinary = "kubectl-urutau"
	// KrewManifestFile is the krew manifest among the release files (krew names a plugin's
	// manifest after the plugin).
	KrewManifestFile = PluginName + ".yaml"
	// ChecksumsFile lists the sha256 of every release file, as sha256sum prints them.
	ChecksumsFile = "checksums.txt"
	// DefaultDownloadURL is where the files of release vX.Y.Z are published: krew downloads the
	// archives from DefaultDownloadURL/vX.Y.Z/.
	DefaultDownloadURL = "https://github.com/urutau-io/fleet/releases/download"
)

// Platform is an OS and architecture the plugin is released for, as GOOS/GOARCH name them (and
// krew's platform selectors too).
type Platform struct{ OS, Arch string }

// ParsePlatform reads os/arch.
func ParsePlatform(s string) (Platform, error) {
	goos, goarch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || goarch == "" || strings.Contains(goarch, "/") {
		return Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/amd64", s)
	}
	return Platform{OS: goos, Arch: goarch}, nil
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

func (p Platform) exe() string {
	if p.OS == "windows" {
		return ".exe"
	}
	return ""
}

// Binary is the plugin's file name on p: what krew links onto the PATH.
func (p Platform) Binary() string { return PluginBinary + p.exe() }

// BuiltBinary is the plugin built for p in dist/ (`make release-plugin`).
func (p Platform) BuiltBinary() string { return PluginBinary + "-" + p.OS + "-" + p.Arch + p.exe() }

// Archive is the release file of the plugin for p: kubectl-urutau_vX.Y.Z_os_arch.tar.gz, a .zip
// on Windows.
func (p Platform) Archive(version string) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_v%s_%s_%s%s", PluginBinary, version, p.OS, p.Arch, ext)
}

// ArchiveFile is one file of a plugin archive, at its root.
type ArchiveFile struct {
	Name string
	Mode int64
	Data []byte
}

// WritePluginArchive writes files as p's archive: tar.gz, or zip on Windows. Every entry has
// modTime and no owner, so the archive depends on its files only.
func WritePluginArchive(w io.Writer, p Platform, files []ArchiveFile, modTime time.Time) error {
	if p.OS == "windows" {
		return writeZip(w, files, modTime)
	}
	return writeTarGz(w, files, modTime)
}

func writeTarGz(w io.Writer, files []ArchiveFile, modTime time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: modTime, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, files []ArchiveFile, modTime time.Time) error {
	zw := zip.NewWriter(w)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.Name, Method: zip.Deflate, Modified: modTime}
		h.SetMode(os.FileMode(f.Mode))
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.Data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// PluginArchive is one platform's archive as the krew manifest names it.
type PluginArchive struct {
	Platform Platform
	// File is its name among the release files; SHA256 its hex digest.
	File, SHA256 string
	// Files are the names in it besides the binary (LICENSE).
	Files []string
}

// krewPlugin is krew's manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin), its
// fields in the order krew-index manifests are written.
type krewPlugin struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   krewMetadata `yaml:"metadata"`
	Spec       krewSpec     `yaml:"spec"`
}

type krewMetadata struct {
	Name string `yaml:"name"`
}

type krewSpec struct {
	Version          string         `yaml:"version"`
	Homepage         string         `yaml:"homepage"`
	ShortDescription string         `yaml:"shortDescription"`
	Description      string         `yaml:"description"`
	Caveats          string         `yaml:"caveats"`
	Platforms        []krewPlatform `yaml:"platforms"`
}

type krewPlatform struct {
	Selector krewSelector `yaml:"selector"`
	URI      string       `yaml:"uri"`
	SHA256   string       `yaml:"sha256"`
	Files    []krewFile   `yaml:"files"`
	Bin      string       `yaml:"bin"`
}

type krewSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type krewFile struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`
}

const krewDescription = `kubectl urutau shows an urutau fleet from its hub cluster and joins or removes
member clusters:
  kubectl urutau members          every member: reachable, engaged, pipelines placed and ready
  kubectl urutau status -A        every CDCPipeline on every member
  kubectl urutau join NAME ...    make a cluster a member
  kubectl urutau leave NAME ...   remove one
  kubectl urutau version          the plugin's release and the hub's
It takes kubectl's flags (--context, -n, -o json|yaml|name|jsonpath|custom-columns, ...).
`

const krewCaveats = `kubectl urutau talks to the hub cluster of urutau fleet: install the hub of the
same release first (https://github.com/urutau-io/fleet#install-on-your-cluster).
For completion of "kubectl urutau <TAB>", link the plugin as kubectl_complete-urutau:
  ln -s kubectl-urutau "$(dirname "$(command -v kubectl-urutau)")/kubectl_complete-urutau"
`

// KrewManifest is the krew manifest of release version (x.y.z) for archives, which krew
// downloads from downloadURL/vx.y.z/.
func KrewManifest(version, downloadURL string, archives []PluginArchive) ([]byte, error) {
	if !semverRE.MatchString(version) {
		return nil, fmt.Errorf("version %q: must be a semantic version x.y.z without a leading v", version)
	}
	m := krewPlugin{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin", Metadata: krewMetadata{Name: PluginName},
		Spec: krewSpec{Version: "v" + version, Homepage: "https://github.com/urutau-io/fleet",
			ShortDescription: "See and manage an urutau fleet from its hub", Description: krewDescription, Caveats: krewCaveats}}
	for _, a := range archives {
		if len(a.SHA256) != sha256.Size*2 {
			return nil, fmt.Errorf("archive %s: sha256 %q is not a hex SHA-256", a.File, a.SHA256)
		}
		files := []krewFile{{From: a.Platform.Binary(), To: "."}}
		for _, f := range a.Files {
			files = append(files, krewFile{From: f, To: "."})
		}
		m.Spec.Platforms = append(m.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": a.Platform.OS, "arch": a.Platform.Arch}},
			URI:      strings.TrimSuffix(downloadURL, "/") + "/v" + version + "/" + a.File, SHA256: a.SHA256,
			Files: files, Bin: a.Platform.Binary()})
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// SHA256File is the hex SHA-256 of the file at path.
func SHA256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Checksums is the checksums file of the files named in dir, in the order given, as `sha256sum`
// prints them (so `sha256sum -c checksums.txt` checks them).
func Checksums(dir string, names []string) ([]byte, error) {
	var b bytes.Buffer
	for _, n := range names {
		sum, err := SHA256File(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return b.Bytes(), nil
}
