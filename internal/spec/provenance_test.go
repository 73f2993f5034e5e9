package spec

import (
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// provenance is testdata/urutau/provenance.yaml: what the dialect follows in urutau's source.
type provenance struct {
	Repository string `json:"repository"`
	Compared   string `json:"compared"`
	Follows    []struct {
		File     string `json:"file"`
		Revision string `json:"revision"`
		For      string `json:"for"`
	} `json:"follows"`
	Tests []struct {
		File     string `json:"file"`
		Revision string `json:"revision"`
		Rows     string `json:"rows"`
	} `json:"tests"`
	Testdata []struct {
		Path     string `json:"path"`
		From     string `json:"from"`
		Revision string `json:"revision"`
		Kept     string `json:"kept"`
	} `json:"testdata"`
}

const provenanceFile = "testdata/urutau/provenance.yaml"

var revisionRe = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

func readProvenance(t *testing.T) provenance {
	t.Helper()
	b, err := os.ReadFile(provenanceFile)
	if err != nil {
		t.Fatal(err)
	}
	var p provenance
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("%s: %v", provenanceFile, err)
	}
	return p
}

// TestDialectProvenance is what `make dialect-check` runs: it lists, from provenance.yaml, which
// revision of each urutau file the dialect was last compared with, and checks that the list is
// whole and that the documentation names the same revisions. Run with -v to see the list.
func TestDialectProvenance(t *testing.T) {
	p := readProvenance(t)
	if p.Repository != "maltzsama/urutau" || p.Compared == "" || len(p.Follows) == 0 {
		t.Fatalf("%s: repository %q, compared %q, %d files followed", provenanceFile, p.Repository, p.Compared, len(p.Follows))
	}
	docs := map[string]string{}
	for _, f := range []string{"doc.go", filepath.Join("..", "..", "docs", "upgrading.md")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = string(b)
	}
	t.Logf("%s, last compared %s:", p.Repository, p.Compared)
	for _, f := range p.Follows {
		checkRevision(t, f.File, f.Revision)
		t.Logf("  follows %-34s @%s  %s", f.File, f.Revision, f.For)
		// Each followed file and its revision are named where a reader looks for them.
		for name, text := range docs {
			if !strings.Contains(text, f.File+"` @"+f.Revision) && !strings.Contains(text, f.File+" @"+f.Revision) {
				t.Errorf("%s does not name %s @%s", name, f.File, f.Revision)
			}
		}
	}
	for _, tc := range p.Tests {
		checkRevision(t, tc.File, tc.Revision)
		t.Logf("  ports   %-34s @%s  %s", tc.File, tc.Revision, tc.Rows)
	}
	listed := map[string]bool{}
	for _, d := range p.Testdata {
		checkRevision(t, d.From, d.Revision)
		listed[d.Path] = true
		if _, err := os.Stat(filepath.Join("testdata", "urutau", d.Path)); err != nil {
			t.Errorf("%s lists %s: %v", provenanceFile, d.Path, err)
		}
		t.Logf("  keeps   %-34s from %s @%s (%s)", d.Path, d.From, d.Revision, d.Kept)
	}
	for _, f := range urutauTestdataFiles(t) {
		if !listed[f] {
			t.Errorf("testdata/urutau/%s has no provenance: add it to %s", f, provenanceFile)
		}
	}
}

func checkRevision(t *testing.T, file, rev string) {
	t.Helper()
	if file == "" || !revisionRe.MatchString(rev) {
		t.Errorf("%s: file %q at revision %q: want a path and a commit (7 to 40 hex digits)", provenanceFile, file, rev)
	}
}

// urutauTestdataFiles lists the YAML files under testdata/urutau but provenance.yaml itself.
func urutauTestdataFiles(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("testdata", "urutau")
	var out []string
	err := filepath.WalkDir(root, func(path string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if rel != "provenance.yaml" {
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
