// Command release writes what `make release VERSION=x.y.z` ships into dist/: install.yaml,
// install-cert-manager.yaml and the Helm chart urutau-fleet-x.y.z.tgz, with the hub image pinned
// by digest when --hub-digest is given (the digest the registry returned for the pushed image)
// and by the tag vx.y.z otherwise. docs/releasing.md is the whole procedure.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urutau-io/fleet/internal/release"
)

func main() {
	var o release.Options
	root := flag.String("root", ".", "the repository root")
	out := flag.String("out", "dist", "where to write the release files")
	flag.StringVar(&o.Version, "version", "", "the release, x.y.z (required)")
	flag.StringVar(&o.HubRepository, "hub-repository", release.DefaultHubRepository, "the hub image's repository")
	flag.StringVar(&o.HubDigest, "hub-digest", "", "the pushed hub image's digest, sha256:...; empty pins the tag v<version>")
	flag.StringVar(&o.CoordinatorImage, "coordinator-image", "", "the default coordinator image, pinned (required)")
	flag.Parse()
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
