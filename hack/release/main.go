// Command release writes what `make release VERSION=x.y.z` ships into dist/: install.yaml,
// install-cert-manager.yaml and the Helm chart urutau-fleet-x.y.z.tgz, with the hub image pinned
// by digest when --hub-digest is given, or when --hub-digest-record names the record `make
// release-image` wrote for this version and repository (a record of any other is refused, never
// used), and by the tag vx.y.z otherwise. docs/releasing.md is the whole procedure.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urutau-io/fleet/internal/release"
)

func main() {
	// `hack/release plugin` and `hack/release checksums` (plugin.go) are the later steps.
	if len(os.Args) > 1 && (os.Args[1] == "plugin" || os.Args[1] == "checksums") {
		step := map[string]func([]string) error{"plugin": runPlugin, "checksums": runChecksums}[os.Args[1]]
		if err := step(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "release "+os.Args[1]+":", err)
			os.Exit(1)
		}
		return
	}
	var o release.Options
	root := flag.String("root", ".", "the repository root")
	out := flag.String("out", "dist", "where to write the release files")
	flag.StringVar(&o.Version, "version", "", "the release, x.y.z (required)")
	flag.StringVar(&o.HubRepository, "hub-repository", release.DefaultHubRepository, "the hub image's repository")
	flag.StringVar(&o.HubDigest, "hub-digest", "", "the pushed hub image's digest, sha256:...; empty: the one --hub-digest-record holds, else the tag v<version>")
	record := flag.String("hub-digest-record", "", "the file `make release-image` wrote (repository:v<version>@sha256:...), when it exists; refused when it records another version or repository")
	flag.StringVar(&o.CoordinatorImage, "coordinator-image", "", "the default coordinator image, pinned (required)")
	flag.Parse()
	if err := pinRecordedDigest(&o, *record); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	if err := run(*root, *out, o); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(root, out string, o release.Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, v := range release.Variants {
		manifest, err := release.InstallManifest(root, v, o)
		if err != nil {
			return err
		}
		path := filepath.Join(out, v.File)
		if err := os.WriteFile(path, manifest, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	chart, err := release.PackageChart(filepath.Join(root, release.ChartDir), out, o)
	if err != nil {
		return err
	}
	fmt.Println("wrote", chart)
	fmt.Println("hub image:", o.HubImage(), "; coordinator image:", o.CoordinatorImage)
	return nil
}

// pinRecordedDigest takes the hub's digest from the record, unless one was given or there is no
// record.
func pinRecordedDigest(o *release.Options, record string) error {
	if o.HubDigest != "" || record == "" {
		return nil
	}
	raw, err := os.ReadFile(record)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Printf("no %s: the hub image is pinned by its tag v%s\n", record, o.Version)
		return nil
	}
	if err != nil {
		return err
	}
	o.HubDigest, err = release.DigestFromRecord(string(raw), *o)
	if err != nil {
		return fmt.Errorf("%s: %w", record, err)
	}
	return nil
}
