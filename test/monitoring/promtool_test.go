package monitoring

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"go.yaml.in/yaml/v3"
)

// The format of promtool's rule unit tests (`promtool test rules`), the fields this project uses.
type unitTestFile struct {
	RuleFiles          []string       `yaml:"rule_files"`
	EvaluationInterval model.Duration `yaml:"evaluation_interval"`
	Tests              []testGroup    `yaml:"tests"`
}

type testGroup struct {
	Name           string          `yaml:"name"`
	Interval       model.Duration  `yaml:"interval"`
	InputSeries    []inputSeries   `yaml:"input_series"`
	AlertRuleTests []alertTestCase `yaml:"alert_rule_test"`
}

type inputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type alertTestCase struct {
	EvalTime  model.Duration `yaml:"eval_time"`
	Alertname string         `yaml:"alertname"`
	ExpAlerts []expAlert     `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

// TestAlertRules runs every file of config/monitoring/tests as promtool would: the input series
// loaded into Prometheus' test storage, the rule groups evaluated by Prometheus' rule manager at
// each evaluation interval, and the firing alerts compared, labels and annotations, at each
// eval_time.
func TestAlertRules(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(monitoringDir, "tests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule tests in %s/tests: %v", monitoringDir, err)
	}
	tested := map[string]bool{}
	for _, f := range files {
		var u unitTestFile
		readYAML(t, f, &u)
		if u.EvaluationInterval == 0 {
			u.EvaluationInterval = model.Duration(time.Minute)
		}
		var ruleFiles []string
		for _, r := range u.RuleFiles {
			ruleFiles = append(ruleFiles, filepath.Join(filepath.Dir(f), r))
		}
		for _, tg := range u.Tests {
			t.Run(filepath.Base(f)+"/"+tg.Name, func(t *testing.T) {
				runGroup(t, tg, time.Duration(u.EvaluationInterval), ruleFiles)
			})
			for _, a := range tg.AlertRuleTests {
				if len(a.ExpAlerts) > 0 {
					tested[a.Alertname] = true
				}
			}
		}
	}
	for _, name := range alertNames(t) {
		if !tested[name] {
			t.Errorf("alert %s has no test in which it fires", name)
		}
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	d := yaml.NewDecoder(f)
	d.KnownFields(true)
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// runGroup is promtool's testGroup.test, for alerts.
func runGroup(t *testing.T, tg testGroup, evalInterval time.Duration, ruleFiles []string) {
	if tg.Interval == 0 {
		tg.Interval = model.Duration(evalInterval)
	}
	var load strings.Builder
	fmt.Fprintf(&load, "load %s\n", time.Duration(tg.Interval))
	for _, s := range tg.InputSeries {
		fmt.Fprintf(&load, "  %s %s\n", s.Series, s.Values)
	}
	ll, err := promqltest.NewLazyLoader(load.String(), promqltest.LazyLoaderOpts{EnableAtModifier: true, EnableNegativeOffset: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ll.Close() })
	m := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(ll.QueryEngine(), ll.Storage()),
		AppendableV2: ll.Storage(),
		Context:      context.Background(),
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       slog.New(slog.DiscardHandler),
	})
	groups, errs := m.LoadGroups(evalInterval, labels.EmptyLabels(), "", nil, false, ruleFiles...)
	if len(errs) > 0 {
		t.Fatalf("loading %v: %v", ruleFiles, errs)
	}
	cases := slices.Clone(tg.AlertRuleTests)
	slices.SortStableFunc(cases, func(a, b alertTestCase) int { return int(a.EvalTime - b.EvalTime) })
	start := time.Unix(0, 0).UTC()
	for ts := start; len(cases) > 0; ts = ts.Add(evalInterval) {
		ll.WithSamplesTill(ts, func(err error) {
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				g.Eval(ll.Context(), ts)
				for _, r := range g.Rules() {
					if r.LastError() != nil {
						t.Fatalf("rule %s at %s: %v", r.Name(), ts.Sub(start), r.LastError())
					}
				}
			}
		})
		// Cases whose eval_time falls in [ts, ts+evalInterval) are checked against this evaluation.
		for len(cases) > 0 && time.Duration(cases[0].EvalTime) < ts.Add(evalInterval).Sub(start) {
			checkAlerts(t, groups, cases[0])
			cases = cases[1:]
		}
	}
}

// checkAlerts compares the firing alerts of c's rule with the expected ones.
func checkAlerts(t *testing.T, groups map[string]*rules.Group, c alertTestCase) {
	t.Helper()
	var got []string
	found := false
	for _, g := range groups {
		for _, r := range g.Rules() {
			ar, ok := r.(*rules.AlertingRule)
			if !ok || ar.Name() != c.Alertname {
				continue
			}
			found = true
			for _, a := range ar.ActiveAlerts() {
				if a.State == rules.StateFiring {
					got = append(got, a.Labels.String()+" "+a.Annotations.String())
				}
			}
		}
	}
	if !found {
		t.Fatalf("no alerting rule %s", c.Alertname)
	}
	var want []string
	for _, e := range c.ExpAlerts {
		l := map[string]string{labels.AlertName: c.Alertname}
		for k, v := range e.ExpLabels {
			l[k] = v
		}
		want = append(want, labels.FromMap(l).String()+" "+labels.FromMap(e.ExpAnnotations).String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s at %s:\n  want %q\n  got  %q", c.Alertname, time.Duration(c.EvalTime), want, got)
	}
}
