package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// healthTests is the health_test.yaml of an Argo CD resource customization.
type healthTests struct {
	Tests []struct {
		HealthStatus Health `json:"healthStatus"`
		InputPath    string `json:"inputPath"`
	} `json:"tests"`
}

func readHealthTests(t *testing.T) healthTests {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), CustomizationDir, "health_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ht healthTests
	if err := yaml.UnmarshalStrict(raw, &ht); err != nil {
		t.Fatalf("health_test.yaml: %v", err)
	}
	return ht
}

// sampleFiles are the testdata objects of the customization, by base name.
func sampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(RepoRoot(), CustomizationDir, "testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in %s/testdata: %v", CustomizationDir, err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	return names
}

// TestArgoCDHealthScript runs every case of health_test.yaml through health.lua the way Argo CD
// does, and asserts status and message exactly. Each object is given to the script twice: decoded
// from YAML (numbers as float64, as Argo CD's own tests do) and with integers as int64 (as the
// Argo CD controller sees objects from the API server).
func TestArgoCDHealthScript(t *testing.T) {
	ht := readHealthTests(t)
	var covered []string
	for _, tc := range ht.Tests {
		covered = append(covered, strings.TrimPrefix(tc.InputPath, "testdata/"))
		t.Run(strings.TrimSuffix(filepath.Base(tc.InputPath), ".yaml"), func(t *testing.T) {
			path := filepath.Join(RepoRoot(), CustomizationDir, tc.InputPath)
			asInt64, err := ReadObject(path)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			asFloat64 := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(raw, &asFloat64.Object); err != nil {
				t.Fatal(err)
			}
			for name, obj := range map[string]*unstructured.Unstructured{"int64": asInt64, "float64": asFloat64} {
				got, err := ArgoHealth(obj)
				if err != nil {
					t.Fatalf("numbers as %s: %v", name, err)
				}
				if got != tc.HealthStatus {
					t.Errorf("numbers as %s:\n got  %s: %q\n want %s: %q", name, got.Status, got.Message, tc.HealthStatus.Status, tc.HealthStatus.Message)
				}
			}
		})
	}
	// Every sample has exactly one expectation, and every expectation a sample.
	slices.Sort(covered)
	if files := sampleFiles(t); !slices.Equal(covered, files) {
		t.Errorf("health_test.yaml covers %v\nbut testdata holds %v", covered, files)
	}
}

// TestArgoCDHealthSandbox proves RunHealthLua is no laxer than Argo CD for a script from
// argocd-cm: the string, math and os libraries and string methods are missing, an invalid status
// is an error, and a script that never returns is stopped.
func TestArgoCDHealthSandbox(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}
	for name, script := range map[string]string{
		"string library": `return {status = "Healthy", message = string.format("%s", obj.metadata.name)}`,
		"string method":  `return {status = "Healthy", message = obj.metadata.name:upper()}`,
		"math library":   `return {status = "Healthy", message = tostring(math.floor(1.5))}`,
		"os library":     `return {status = "Healthy", message = tostring(os.time())}`,
		"invalid status": `return {status = "Fine"}`,
		"no table":       `return "Healthy"`,
		"endless loop":   `while true do end`,
	} {
		t.Run(name, func(t *testing.T) {
			if h, err := RunHealthLua(script, obj); err == nil {
				t.Fatalf("want an error, got %+v", h)
			}
		})
	}
	h, err := RunHealthLua(`local parts = {} table.insert(parts, obj.metadata.name) return {status = "Healthy", message = table.concat(parts, ",") .. tostring(#parts)}`, obj)
	if err != nil || h != (Health{Status: "Healthy", Message: "x1"}) {
		t.Fatalf("base and table libraries: got %+v, %v", h, err)
	}
}
