package monitoring

import (
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

const (
	monitoringDir   = "../../config/monitoring"
	rulesFile       = monitoringDir + "/urutau-fleet.rules.yaml"
	operationsDoc   = "../../docs/operations.md"
	troubleshootDoc = "../../docs/troubleshooting.md"
)

// TestRulesParse loads the rule file with Prometheus' rule parser (what `promtool check rules`
// runs) and checks that it holds exactly the PrometheusRule's groups, and that every alert has
// a severity, a summary and a runbook that exists.
func TestRulesParse(t *testing.T) {
	groups := parseRules(t)
	var cr struct {
		Spec rulefmt.RuleGroups `yaml:"spec"`
	}
	raw, err := os.ReadFile(monitoringDir + "/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &cr); err != nil {
		t.Fatal(err)
	}
	if len(cr.Spec.Groups) != len(groups.Groups) || len(cr.Spec.Groups[0].Rules) != len(groups.Groups[0].Rules) {
		t.Errorf("%s does not hold the PrometheusRule's groups: run make manifests", rulesFile)
	}
	anchors := markdownAnchors(t, troubleshootDoc)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a summary and a description", r.Alert)
			}
			_, anchor, _ := strings.Cut(r.Annotations["runbook_url"], "troubleshooting.md")
			if !strings.HasPrefix(r.Annotations["runbook_url"], "https://github.com/urutau-io/fleet/blob/main/docs/troubleshooting.md") {
				t.Errorf("%s: runbook_url %q is not a section of docs/troubleshooting.md", r.Alert, r.Annotations["runbook_url"])
			} else if anchor != "" && !anchors[strings.TrimPrefix(anchor, "#")] {
				t.Errorf("%s: docs/troubleshooting.md has no section %s", r.Alert, anchor)
			}
		}
	}
}

// TestRulesUseDocumentedMetrics: every metric a rule reads is in docs/operations.md.
func TestRulesUseDocumentedMetrics(t *testing.T) {
	documented := documentedMetrics(t)
	for _, g := range parseRules(t).Groups {
		for _, r := range g.Rules {
			for _, m := range metricsOf(t, r.Expr) {
				if !documented(m) {
					t.Errorf("%s reads %s, which docs/operations.md does not document", r.Alert+r.Record, m)
				}
			}
		}
	}
}

func parseRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", rulesFile, errs)
	}
	return groups
}

func alertNames(t *testing.T) []string {
	var names []string
	for _, g := range parseRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	return names
}

// metricsOf lists the metric names a PromQL expression selects.
func metricsOf(t *testing.T, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

var backticked = regexp.MustCompile("`([a-z_]+)`")

// documentedMetrics reads the names in docs/operations.md's Metrics section: a histogram's series
// (_bucket, _sum, _count) count as documented with it.
func documentedMetrics(t *testing.T) func(string) bool {
	t.Helper()
	raw, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), "\n## Metrics\n")
	section, _, _ = strings.Cut(section, "\n## ")
	names := map[string]bool{}
	for _, m := range backticked.FindAllStringSubmatch(section, -1) {
		names[m[1]] = true
	}
	if !names["urutau_fleet_member_up"] {
		t.Fatal("docs/operations.md's Metrics section lists no metric")
	}
	return func(name string) bool {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && names[base] {
				return true
			}
		}
		return false
	}
}

// markdownAnchors lists the GitHub anchors of a Markdown file's headings.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimLeft(h, "# ")
			anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return anchors
}
