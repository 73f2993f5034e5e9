package webhook

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// TestExamplesAreAdmitted: every CDCPipeline the repository shows users (examples/demo,
// examples/fleet, examples/single-cluster; examples/gitops is built and admitted by test/gitops)
// passes the webhook, so none uses a field or value the urutau coordinator refuses. The pipelines
// of one directory are applied together, so their reader identities must differ too.
func TestExamplesAreAdmitted(t *testing.T) {
	for _, dir := range []string{"demo", "fleet", "single-cluster"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "examples", dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("examples/%s: %v", dir, err)
		}
		var all []urutauv1alpha1.CDCPipeline
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var p urutauv1alpha1.CDCPipeline
			if err := yaml.UnmarshalStrict(bytes.TrimSpace(b), &p); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if errs, _ := ValidateSpec(&p); len(errs) > 0 {
				t.Errorf("%s is refused: %v", f, errs.ToAggregate())
			}
			all = append(all, p)
		}
		for i := range all {
			if errs := validateUniqueness(&all[i], all); len(errs) > 0 {
				t.Errorf("examples/%s/%s: %v", dir, all[i].Name, errs.ToAggregate())
			}
		}
	}
}
