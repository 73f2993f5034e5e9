package release

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartv2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ChartDir is the chart, relative to the repository root.
const ChartDir = "charts/urutau-fleet"

// RenderChart renders the chart at path (a directory or a packaged .tgz) as `helm template NAME
// path --namespace NS` does, with Helm's loader and template engine, and returns its objects.
// values are merged over the chart's values.yaml.
func RenderChart(path, releaseName, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", path, err)
	}
	opts := common.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(chrt, values, opts, common.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values of the chart %s: %w", path, err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart %s: %w", path, err)
	}
	return decodeRendered(files)
}

// decodeRendered parses the rendered templates in a stable order, skipping helpers and NOTES.txt
// and the documents that rendered empty (a disabled feature).
func decodeRendered(files map[string]string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			m := map[string]any{}
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(m) == 0 {
				continue
			}
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out, nil
}

// PackageChart writes the chart at dir, with o's version and images, as the archive `helm
// package` makes (urutau-fleet-<version>.tgz) into outDir, and returns its path.
func PackageChart(dir, outDir string, o Options) (string, error) {
	chrt, err := loader.LoadDir(dir)
	if err != nil {
		return "", fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	if err := pinChart(chrt, o); err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	return chartv2util.Save(chrt, filepath.Clean(outDir))
}

// pinChart sets the chart's version and the images its values.yaml defaults to.
func pinChart(chrt *chartv2.Chart, o Options) error {
	chrt.Metadata.Version = o.Version
	chrt.Metadata.AppVersion = "v" + o.Version
	values := chrt.Values
	image, _ := values["image"].(map[string]any)
	if image == nil {
		return fmt.Errorf("chart %s: values.yaml has no image", chrt.Name())
	}
	image["repository"] = o.HubRepository
	image["digest"] = o.HubDigest
	values["coordinatorImage"] = o.CoordinatorImage
	// values.yaml is what `helm show values` prints and what the packaged chart defaults to:
	// write the pinned values back into it, comments and all.
	for _, f := range chrt.Raw {
		if f.Name == "values.yaml" {
			f.Data = pinValuesFile(f.Data, o)
		}
	}
	return nil
}

// pinValuesFile rewrites the top-level image settings of values.yaml line by line, so its comments
// survive.
func pinValuesFile(data []byte, o Options) []byte {
	set := map[string]string{
		"  repository: ":     "  repository: " + o.HubRepository,
		"  digest: ":         fmt.Sprintf("  digest: %q", o.HubDigest),
		"coordinatorImage: ": "coordinatorImage: " + o.CoordinatorImage,
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		for prefix, line := range set {
			if strings.HasPrefix(l, prefix) {
				lines[i] = line
				delete(set, prefix) // the first one only: image.* come first in values.yaml
			}
		}
	}
	return []byte(strings.Join(lines, "\n"))
}
