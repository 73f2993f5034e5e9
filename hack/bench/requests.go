package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	"github.com/urutau-io/fleet/internal/testenv"
)

// requests counts API requests by "VERB resource[/subresource]".
type requests map[string]int

// writeVerbs are the verbs of apiserver_request_total that change state (server-side apply is
// APPLY); readVerbs those of one-shot reads. WATCH is neither: one long request.
var (
	writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}
	readVerbs  = map[string]bool{"GET": true, "LIST": true}
)

// housekeeping are resources only the API servers' own controllers touch here (the hub never
// does): requests to them are left out, since some (the kubernetes Service's endpoints, the API
// server's identity lease) showed up now and then in a member's counts outside
// apiserver_selfrequest_total.
var housekeeping = map[string]bool{"endpoints": true, "endpointslices": true, "leases": true}

// requestsOf reads, in one scrape of c's /metrics, the requests c has served so far that came
// from clients other than itself: apiserver_request_total less apiserver_selfrequest_total (the
// API server's own controllers and leases), plus the watches open now
// (apiserver_longrunning_requests). apiserver_request_total counts a WATCH when it ends, so with
// the open ones added, the difference of two snapshots counts the watches started between them.
// Dry runs, non-resource requests (/metrics, /healthz) and housekeeping are left out.
func requestsOf(ctx context.Context, c *testenv.Cluster) (requests, error) {
	cs, err := kubernetes.NewForConfig(fastConfig(c))
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics of %s: %w", c.Name, err)
	}
	return parseRequests(raw)
}

// parseRequests is requestsOf on a scrape.
func parseRequests(raw []byte) (requests, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing API server metrics: %w", err)
	}
	out := requests{}
	add := func(family string, sign int, keep func(labels map[string]string) bool) {
		for _, m := range families[family].GetMetric() {
			l := labelMap(m)
			if l["resource"] == "" || housekeeping[l["resource"]] || l["dry_run"] != "" || !keep(l) {
				continue
			}
			k := l["verb"] + " " + l["resource"]
			if l["subresource"] != "" {
				k += "/" + l["subresource"]
			}
			out[k] += sign * int(m.GetCounter().GetValue()+m.GetGauge().GetValue())
		}
	}
	all := func(map[string]string) bool { return true }
	add("apiserver_request_total", 1, all)
	add("apiserver_selfrequest_total", -1, all)
	add("apiserver_longrunning_requests", 1, func(l map[string]string) bool { return l["verb"] == "WATCH" })
	return out, nil
}

func labelMap(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// requestsOfAll adds up requestsOf over clusters.
func requestsOfAll(ctx context.Context, clusters []*testenv.Cluster) (requests, error) {
	out := requests{}
	for _, c := range clusters {
		r, err := requestsOf(ctx, c)
		if err != nil {
			return nil, err
		}
		for k, v := range r {
			out[k] += v
		}
	}
	return out, nil
}

// since is r − before, keeping only keys that moved.
func (r requests) since(before requests) requests {
	d := requests{}
	for k, v := range r {
		if v-before[k] != 0 {
			d[k] = v - before[k]
		}
	}
	return d
}

// filter keeps the requests whose verb and resource (without subresource) keep accepts.
func (r requests) filter(keep func(verb, resource string) bool) requests {
	out := requests{}
	for k, v := range r {
		verb, res, _ := strings.Cut(k, " ")
		res, _, _ = strings.Cut(res, "/")
		if keep(verb, res) {
			out[k] = v
		}
	}
	return out
}

// byVerb folds the counts into verbs.
func (r requests) byVerb() map[string]int {
	out := map[string]int{}
	for k, v := range r {
		verb, _, _ := strings.Cut(k, " ")
		out[verb] += v
	}
	return out
}

// total adds up every count.
func (r requests) total() int {
	n := 0
	for _, v := range r {
		n += v
	}
	return n
}

// reads are the GET and LIST requests (watches excluded).
func (r requests) reads() int {
	return r.filter(func(verb, _ string) bool { return readVerbs[verb] }).total()
}

// memberWrites keeps the writes to the resources the hub writes in members (the bench's own
// namespaces and cleanup are outside every window, but are left out anyway).
func (r requests) memberWrites() requests {
	return r.filter(func(verb, res string) bool { return writeVerbs[verb] && memberResources[res] })
}

// hubOwnWrites keeps the hub's writes to its API server: every write but the coordination
// leases of a leader election (none with --leader-elect=false) and, when excludeBench, the
// bench's own creates (pipelines, namespaces). ReaderLeases ("readerleases") are the hub's and
// are counted.
func (r requests) hubOwnWrites(excludeBench bool) requests {
	return r.filter(func(verb, res string) bool {
		switch {
		case !writeVerbs[verb] || res == "leases":
			return false
		case excludeBench && verb == "POST" && (res == "cdcpipelines" || res == "namespaces"):
			return false
		}
		return true
	})
}

// String is "N (VERB resource n, ...)", sorted by key; "0" when empty.
func (r requests) String() string {
	if r.total() == 0 {
		return "0"
	}
	keys := make([]string, 0, len(r))
	for k, v := range r {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, r[k])
	}
	return fmt.Sprintf("%d (%s)", r.total(), strings.Join(parts, ", "))
}
