package monitoring

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The subset of kube-state-metrics' CustomResourceStateMetrics this project uses; decoding is
// strict, so a misspelt field fails.
type ksmConfig struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Resources []struct {
			GroupVersionKind struct {
				Group, Version, Kind string
			} `yaml:"groupVersionKind"`
			MetricNamePrefix string              `yaml:"metricNamePrefix"`
			LabelsFromPath   map[string][]string `yaml:"labelsFromPath"`
			Metrics          []struct {
				Name string `yaml:"name"`
				Help string `yaml:"help"`
				Each struct {
					Type  string    `yaml:"type"`
					Gauge *ksmValue `yaml:"gauge"`
					Info  *ksmValue `yaml:"info"`
				} `yaml:"each"`
			} `yaml:"metrics"`
		} `yaml:"resources"`
	} `yaml:"spec"`
}

type ksmValue struct {
	Path           []string            `yaml:"path"`
	LabelsFromPath map[string][]string `yaml:"labelsFromPath"`
	ValueFrom      []string            `yaml:"valueFrom"`
	NilIsZero      bool                `yaml:"nilIsZero"`
}

// TestKubeStateMetricsConfig checks every path of the kube-state-metrics configuration against
// the CDCPipeline CRD's schema, and that the series the alerts and docs name are the ones it
// makes.
func TestKubeStateMetricsConfig(t *testing.T) {
	var c ksmConfig
	readYAML(t, monitoringDir+"/kube-state-metrics/custom-resource-state.yaml", &c)
	if c.Kind != "CustomResourceStateMetrics" || len(c.Spec.Resources) != 1 {
		t.Fatalf("kind %q, %d resources", c.Kind, len(c.Spec.Resources))
	}
	r := c.Spec.Resources[0]
	if r.GroupVersionKind.Group != "urutau.io" || r.GroupVersionKind.Version != "v1alpha1" || r.GroupVersionKind.Kind != "CDCPipeline" {
		t.Errorf("groupVersionKind %+v", r.GroupVersionKind)
	}
	schema := crdSchema(t)
	for label, path := range r.LabelsFromPath {
		checkPath(t, schema, "labelsFromPath "+label, path)
	}
	documented := documentedMetrics(t)
	made := map[string]bool{}
	for _, m := range r.Metrics {
		name := r.MetricNamePrefix + "_" + m.Name
		made[name] = true
		if !documented(name) {
			t.Errorf("%s is not in docs/operations.md", name)
		}
		v := m.Each.Gauge
		if m.Each.Type == "Info" {
			v = m.Each.Info
		}
		if v == nil {
			t.Errorf("%s: type %s without its settings", name, m.Each.Type)
			continue
		}
		base := checkPath(t, schema, name+" path", v.Path)
		for label, p := range v.LabelsFromPath {
			checkPath(t, items(base), name+" label "+label, p)
		}
		if len(v.ValueFrom) > 0 {
			checkPath(t, items(base), name+" valueFrom", v.ValueFrom)
		}
	}
	for _, g := range parseRules(t).Groups {
		for _, rule := range g.Rules {
			for _, m := range metricsOf(t, rule.Expr) {
				if strings.HasPrefix(m, r.MetricNamePrefix+"_") && !made[m] {
					t.Errorf("%s reads %s, which the kube-state-metrics configuration does not make", rule.Alert, m)
				}
			}
		}
	}
}

type schemaNode = map[string]any

// crdSchema is the openAPIV3Schema of the CDCPipeline CRD.
func crdSchema(t *testing.T) schemaNode {
	t.Helper()
	raw, err := os.ReadFile("../../config/hub/crd/bases/urutau.io_cdcpipelines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema schemaNode `yaml:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// checkPath walks path through the schema and returns the node it names; metadata's fields are
// the API server's, not in the CRD.
func checkPath(t *testing.T, node schemaNode, what string, path []string) schemaNode {
	t.Helper()
	for i, p := range path {
		if i == 0 && p == "metadata" && len(path) == 2 && strings.Contains(" name namespace generation uid ", " "+path[1]+" ") {
			return schemaNode{"type": "string"}
		}
		props, _ := node["properties"].(schemaNode)
		next, ok := props[p].(schemaNode)
		if !ok {
			t.Errorf("%s: %s is not in the CDCPipeline schema", what, strings.Join(path[:i+1], "."))
			return schemaNode{}
		}
		node = next
	}
	return node
}

// items is an array's item schema, or the node itself.
func items(node schemaNode) schemaNode {
	if it, ok := node["items"].(schemaNode); ok {
		return it
	}
	return node
}
