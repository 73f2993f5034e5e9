package testenv

import (
	"bytes"
	"context"
	"fmt"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// writeVerbs are the apiserver_request_total verbs that change state (the metric names most verbs
// by HTTP method; server-side apply is APPLY).
var writeVerbs = map[string]bool{
	"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true,
}

// WriteRequests reads the API server's own apiserver_request_total and returns the number of
// write requests served so far, by verb (dry runs excluded). Take it twice and subtract to count
// the writes of a period.
func (c *Cluster) WriteRequests(ctx context.Context) (map[string]int, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics of %q: %w", c.Name, err)
	}
	return countWrites(raw)
}

// WriteRequestsByResource is WriteRequests keyed by "VERB resource[/subresource]".
func (c *Cluster) WriteRequestsByResource(ctx context.Context) (map[string]int, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics of %q: %w", c.Name, err)
	}
	return countWritesBy(raw, func(verb string, labels map[string]string) string {
		k := verb + " " + labels["resource"]
		if s := labels["subresource"]; s != "" {
			k += "/" + s
		}
		return k
	})
}

func countWrites(raw []byte) (map[string]int, error) {
	return countWritesBy(raw, func(verb string, _ map[string]string) string { return verb })
}

func countWritesBy(raw []byte, key func(verb string, labels map[string]string) string) (map[string]int, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing API server metrics: %w", err)
	}
	out := map[string]int{}
	fam, ok := families["apiserver_request_total"]
	if !ok {
		return out, nil
	}
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !writeVerbs[labels["verb"]] || labels["dry_run"] != "" {
			continue
		}
		out[key(labels["verb"], labels)] += int(m.GetCounter().GetValue())
	}
	return out, nil
}

// Total adds up the counts of a WriteRequests result.
func Total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// Delta is after - before, per key, keeping only keys that moved.
func Delta(before, after map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range after {
		if v-before[k] != 0 {
			d[k] = v - before[k]
		}
	}
	return d
}
