package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urutau-io/fleet/internal/release"
)

// pluginOptions say which archives `hack/release plugin` makes.
type pluginOptions struct {
	version, out, downloadURL, license string
	platforms                          []release.Platform
}

// runPlugin packages the plugin binaries that `make release-plugin` built into dist/ as krew
// archives, and writes the krew manifest urutau.yaml.
func runPlugin(args []string) error {
	var o pluginOptions
	var platforms string
	fs := flag.NewFlagSet("plugin", flag.ContinueOnError)
	fs.StringVar(&o.version, "version", "", "the release, x.y.z (required)")
	fs.StringVar(&o.out, "out", "dist", "where the binaries are and the archives go")
	fs.StringVar(&platforms, "platforms", "", "os/arch of each binary, separated by spaces or commas (required)")
	fs.StringVar(&o.downloadURL, "download-url", release.DefaultDownloadURL, "where the release's files are published: krew downloads DOWNLOAD_URL/vx.y.z/ARCHIVE")
	fs.StringVar(&o.license, "license", "LICENSE", "a license file to put in every archive, when it exists")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range strings.FieldsFunc(platforms, func(r rune) bool { return r == ' ' || r == ',' }) {
		p, err := release.ParsePlatform(s)
		if err != nil {
			return err
		}
		o.platforms = append(o.platforms, p)
	}
	if len(o.platforms) == 0 {
		return errors.New("--platforms: name at least one os/arch")
	}
	return packagePlugin(o)
}

func packagePlugin(o pluginOptions) error {
	var extra []release.ArchiveFile
	if data, err := os.ReadFile(o.license); err == nil {
		extra = append(extra, release.ArchiveFile{Name: filepath.Base(o.license), Mode: 0o644, Data: data})
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var archives []release.PluginArchive
	for _, p := range o.platforms {
		a, err := pluginArchive(o, p, extra)
		if err != nil {
			return err
		}
		archives = append(archives, a)
	}
	manifest, err := release.KrewManifest(o.version, o.downloadURL, archives)
	if err != nil {
		return err
	}
	path := filepath.Join(o.out, release.KrewManifestFile)
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}

// pluginArchive writes p's archive from dist/kubectl-urutau-os-arch, with the extra files.
func pluginArchive(o pluginOptions, p release.Platform, extra []release.ArchiveFile) (release.PluginArchive, error) {
	a := release.PluginArchive{Platform: p, File: p.Archive(o.version)}
	bin := filepath.Join(o.out, p.BuiltBinary())
	data, err := os.ReadFile(bin)
	if err != nil {
		return a, fmt.Errorf("the plugin for %s: %w (make release-plugin builds it)", p, err)
	}
	info, err := os.Stat(bin)
	if err != nil {
		return a, err
	}
	files := append([]release.ArchiveFile{{Name: p.Binary(), Mode: 0o755, Data: data}}, extra...)
	for _, f := range extra {
		a.Files = append(a.Files, f.Name)
	}
	var b bytes.Buffer
	if err := release.WritePluginArchive(&b, p, files, info.ModTime().UTC().Truncate(time.Second)); err != nil {
		return a, err
	}
	path := filepath.Join(o.out, a.File)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return a, err
	}
	if a.SHA256, err = release.SHA256File(path); err != nil {
		return a, err
	}
	fmt.Println("wrote", path)
	return a, nil
}

// runChecksums writes dist/checksums.txt: the sha256 of every file of release x.y.z in dist/.
func runChecksums(args []string) error {
	fs := flag.NewFlagSet("checksums", flag.ContinueOnError)
	version := fs.String("version", "", "the release, x.y.z (required)")
	out := fs.String("out", "dist", "where the release files are")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names, err := releaseFiles(*out, *version)
	if err != nil {
		return err
	}
	sums, err := release.Checksums(*out, names)
	if err != nil {
		return err
	}
	path := filepath.Join(*out, release.ChecksumsFile)
	if err := os.WriteFile(path, sums, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}

// releaseFiles are the files of release version in dir: those `make release` and `make
// release-plugin` write (each required), the hub binaries and the plugin archives; not the
// plugin's bare binaries (the archives carry them), nor another release's files.
func releaseFiles(dir, version string) ([]string, error) {
	required := []string{fmt.Sprintf("urutau-fleet-%s.tgz", version), release.KrewManifestFile}
	for _, v := range release.Variants {
		required = append(required, v.File)
	}
	for _, n := range required {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return nil, fmt.Errorf("release file %s: %w (make release and make release-plugin write the release files)", n, err)
		}
	}
	var names []string
	for _, pattern := range []string{"hub-*-*", release.PluginBinary + "_v" + version + "_*"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		for _, p := range m {
			if n := filepath.Base(p); !strings.HasPrefix(n, "hub-image.") {
				names = append(names, n)
			}
		}
	}
	names = append(names, required...)
	slices.Sort(names)
	return names, nil
}
