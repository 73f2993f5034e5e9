package monitoring

import (
	"encoding/json"
	"os"
	"testing"
)

type dashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
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
