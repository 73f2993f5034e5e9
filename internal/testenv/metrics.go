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

// readVerbs are the verbs of one-shot reads; WATCH is left out (one long request).
var readVerbs = map[string]bool{"GET": true, "LIST": true}

// WriteRequests reads the API server's own apiserver_request_total and returns the number of
// write requests served so far, by verb (dry runs excluded). Take it twice and subtract to count
// the writes of a period.
func (c *Cluster) WriteRequests(ctx context.Context) (map[string]int, error) {
	raw, err := c.metrics(ctx)
	if err != nil {
		return nil, err
	}
	return countRequestsBy(raw, writeVerbs, func(verb string, _ map[string]string) string { return verb })
}

// WriteRequestsByResource is WriteRequests keyed by "VERB resource[/subresource]".
func (c *Cluster) WriteRequestsByResource(ctx context.Context) (map[string]int, error) {
	raw, err := c.metrics(ctx)
	if err != nil {
		return nil, err
	}
	return countRequestsBy(raw, writeVerbs, resourceKey)
}

// ReadRequestsByResource counts GET and LIST requests the same way, keyed by
// "VERB resource[/subresource]".
func (c *Cluster) ReadRequestsByResource(ctx context.Context) (map[string]int, error) {
	raw, err := c.metrics(ctx)
	if err != nil {
		return nil, err
	}
	return countRequestsBy(raw, readVerbs, resourceKey)
}

func (c *Cluster) metrics(ctx context.Context) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics of %q: %w", c.Name, err)
	}
	return raw, nil
}

func resourceKey(verb string, labels map[string]string) string {
	k := verb + " " + labels["resource"]
	if s := labels["subresource"]; s != "" {
		k += "/" + s
	}
	return k
}

func countWrites(raw []byte) (map[string]int, error) {
	return countRequestsBy(raw, writeVerbs, func(verb string, _ map[string]string) string { return verb })
}

// countRequestsBy adds up apiserver_request_total over the verbs given (dry runs excluded),
// keyed by key.
func countRequestsBy(raw []byte, verbs map[string]bool, key func(verb string, labels map[string]string) string) (map[string]int, error) {
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
		if !verbs[labels["verb"]] || labels["dry_run"] != "" {
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
