package monitoring

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
			// Definition is a query variable's query, as Grafana shows it.
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDashboard: the dashboard is valid JSON, each panel has a query, and each query parses and
// reads only documented metrics.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile(monitoringDir + "/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || len(d.Panels) < 10 {
		t.Fatalf("dashboard %q: uid %q, %d panels", d.Title, d.UID, len(d.Panels))
	}
	documented := documentedMetrics(t)
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			for _, m := range metricsOf(t, target.Expr) {
				if !documented(m) {
					t.Errorf("panel %q reads %s, which docs/operations.md does not document", p.Title, m)
				}
			}
		}
	}
}

// TestDashboardPerHub: the dashboard shows one hub at a time, picked by its job and namespace
// (variables filled from urutau_fleet_build_info), and every query selects only that hub's
// series: two hubs scraped by one Prometheus never add up in a panel.
func TestDashboardPerHub(t *testing.T) {
	raw, err := os.ReadFile(monitoringDir + "/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			vars[v.Name] = v.Definition
		}
	}
	for _, name := range []string{"job", "namespace"} {
		if !strings.HasPrefix(vars[name], "label_values(urutau_fleet_build_info") || !strings.HasSuffix(vars[name], ", "+name+")") {
			t.Errorf("variable %s: query %q, want the values of the label %s of urutau_fleet_build_info", name, vars[name], name)
		}
	}
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			for _, sel := range selectorsOf(t, target.Expr) {
				for _, name := range []string{"job", "namespace"} {
					if !slices.ContainsFunc(sel.LabelMatchers, func(m *labels.Matcher) bool {
						return m.Name == name && m.Type == labels.MatchEqual && m.Value == "$"+name
					}) {
						t.Errorf("panel %q: %s does not select %s=\"$%s\"", p.Title, sel, name, name)
					}
				}
			}
		}
	}
}

// selectorsOf are the series selectors of a PromQL expression.
func selectorsOf(t *testing.T, expr string) []*parser.VectorSelector {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}
