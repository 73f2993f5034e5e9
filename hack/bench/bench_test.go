package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/spec"
)

func TestSpreadFormat(t *testing.T) {
	for _, tc := range []struct {
		in   spread
		prec int
		want string
	}{
		{nil, 2, "-"},
		{spread{1.5}, 2, "1.50"},
		{spread{1.95, 1.37, 1.52}, 2, "1.52 (1.37–1.95)"},
		{spread{4, 4, 4.001}, 2, "4.00"},
		{spread{2, 1, 4, 3}, 1, "2.5 (1.0–4.0)"},
	} {
		if got := tc.in.format(tc.prec); got != tc.want {
			t.Errorf("%v.format(%d) = %q, want %q", tc.in, tc.prec, got, tc.want)
		}
	}
}

const scrape = `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="APPLY",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="",resource="configmaps",scope="namespace",subresource="",verb="APPLY",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 50
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="endpoints",scope="namespace",subresource="",verb="GET",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="namespace",subresource="",verb="PUT",version="v1"} 40
# TYPE apiserver_selfrequest_total counter
apiserver_selfrequest_total{group="",resource="namespaces",subresource="",verb="GET"} 5
apiserver_selfrequest_total{group="coordination.k8s.io",resource="leases",subresource="",verb="PUT"} 40
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 3
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="exec",verb="CONNECT",version="v1"} 1
`

// TestParseRequests: dry runs, non-resource requests and the API server's own requests are left
// out; watches count ended plus open.
func TestParseRequests(t *testing.T) {
	got, err := parseRequests([]byte(scrape))
	if err != nil {
		t.Fatal(err)
	}
	want := requests{"APPLY configmaps": 10, "GET namespaces": 2, "WATCH configmaps": 5}
	if !maps.Equal(got.filter(func(string, string) bool { return true }).nonZero(), want) {
		t.Errorf("parseRequests = %v, want %v", got, want)
	}
	if got.reads() != 2 {
		t.Errorf("reads = %d, want 2", got.reads())
	}
}

func (r requests) nonZero() requests {
	out := requests{}
	for k, v := range r {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func TestHubOwnWrites(t *testing.T) {
	d := requests{
		"POST cdcpipelines": 10, "POST namespaces": 4, "PATCH cdcpipelines": 10, "PATCH cdcpipelines/status": 10,
		"POST readerleases": 10, "PATCH readerleases": 3, "PUT leases": 9, "POST events": 1, "GET cdcpipelines": 99,
	}
	want := requests{"PATCH cdcpipelines": 10, "PATCH cdcpipelines/status": 10, "POST readerleases": 10, "PATCH readerleases": 3, "POST events": 1}
	if got := d.hubOwnWrites(true); !maps.Equal(got, want) {
		t.Errorf("hubOwnWrites(true) = %v, want %v", got, want)
	}
	if got := d.hubOwnWrites(false); got["POST cdcpipelines"] != 10 || got["PUT leases"] != 0 {
		t.Errorf("hubOwnWrites(false) = %v: want the bench's creates kept, leases dropped", got)
	}
}

func TestMergeHistory(t *testing.T) {
	old := []string{
		"| 2026-12-02 10:00 | b | `x` | 1x10 |", "| 2026-12-02 10:00 | b | `x` | 3x10 |",
		"| 2026-12-01 10:00 | a | `x` | 1x10 |",
	}
	got := mergeHistory(old, []string{"| 2026-12-03 10:00 | c | `x` | 1x10 |"}, 2)
	want := []string{"| 2026-12-03 10:00 | c | `x` | 1x10 |", "| 2026-12-02 10:00 | b | `x` | 1x10 |", "| 2026-12-02 10:00 | b | `x` | 3x10 |"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("mergeHistory =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSections: a doc without the markers gets them once; writing again replaces the section
// and leaves the rest; the history rows are read back without their header.
func TestSections(t *testing.T) {
	doc := replaceSection("# B\n\ntext\n", historyBeginMarker, historyEndMarker, header("a", "b")+"\n| 1 | 2 |\n", "\n## History\n\n")
	doc = replaceSection(doc, historyBeginMarker, historyEndMarker, header("a", "b")+"\n| 3 | 4 |\n| 1 | 2 |\n", "\n## History\n\n")
	if strings.Count(doc, "## History") != 1 || strings.Count(doc, historyBeginMarker) != 1 || !strings.HasPrefix(doc, "# B\n\ntext\n") {
		t.Fatalf("unexpected doc:\n%s", doc)
	}
	if got := sectionRows(doc, historyBeginMarker, historyEndMarker); strings.Join(got, ",") != "| 3 | 4 |,| 1 | 2 |" {
		t.Errorf("sectionRows = %q", got)
	}
}

// TestBenchPipelines: the bench's pipelines parse in urutau's dialect, render, and each has a
// source identity of its own (the hub runs one pipeline per identity: sharing one, they would
// wait for each other), across calls too.
func TestBenchPipelines(t *testing.T) {
	e := &env{serverIDs: 1000}
	s := size{C: 1, P: 3}
	a, _ := e.makePipelines("a", s, nil, 0, true)
	b, _ := e.makePipelines("b", s, nil, 0, false)
	seen := map[spec.ReaderIdentity]string{}
	for _, p := range append(a, b...) {
		in, errs := spec.Parse(p.Spec.Definition.Inline.Raw)
		if len(errs) > 0 {
			t.Fatalf("%s/%s: %v", p.Namespace, p.Name, errs)
		}
		id, ok := in.Identity()
		if !ok || id.Field != "serverId" {
			t.Fatalf("%s/%s: identity %v, %v", p.Namespace, p.Name, id, ok)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%s/%s shares %s with %s", p.Namespace, p.Name, id, other)
		}
		seen[id] = p.Namespace + "/" + p.Name
	}
	if _, err := coordinator.Render(a[0], coordinator.Settings{DefaultImage: image}); err != nil {
		t.Errorf("Render: %v", err)
	}
}

// TestReportCells: every column of the main table gets a cell, the history finds every column it
// copies, and ratios are the median of the runs' ratios with their range.
func TestReportCells(t *testing.T) {
	run := func(floor, hub, dead float64) pairRun {
		return pairRun{
			floor: time.Duration(floor * float64(time.Second)), hub: time.Duration(hub * float64(time.Second)),
			hubMembers: requests{"APPLY configmaps": 80, "LIST scaledobjects": 10}, floorMembers: requests{"APPLY configmaps": 80},
			hubWrites:  requests{"PATCH cdcpipelines": 10, "POST readerleases": 10, "PATCH cdcpipelines/status": 10},
			reconciles: 10, noop: noopRun{reconciles: 10, members: requests{"GET namespaces": 1}},
			rssEmpty: 30 * 1024, rssEnd: 40 * 1024, hwm: 50 * 1024,
			dead: degradedRun{took: time.Duration(dead * float64(time.Second)), placements: 7},
			hung: degradedRun{err: "not converged"},
		}
	}
	r := result{size: size{C: 2, P: 5}, placements: 10, objects: 80, runs: []pairRun{run(1, 2, 1), run(1, 1.5, 3), run(2, 2, 1)}}
	cells := mainCells(r, 20*1024)
	if len(cells) != len(mainColumns) {
		t.Fatalf("%d cells for %d columns", len(cells), len(mainColumns))
	}
	want := map[string]string{
		"hub/floor": "1.50 (1.00–2.00)", "down/all-up": "0.50 (0.50–2.00)", "hung/all-up": "-",
		"hub writes/pipeline, create": "6.00", "member reads/placement, create": "1.00",
		"member reads/placement, no-op reconcile": "0.10", "empty hub RSS MiB per member, + what each adds": "15.0, +5.0",
		"RSS MiB per 1,000 placements": "1000.0", "member writes/object, create (floor)": "1.00 (APPLY 1.00) (1.00)",
	}
	for i, c := range mainColumns {
		if w, ok := want[c]; ok && cells[i] != w {
			t.Errorf("%s = %q, want %q", c, cells[i], w)
		}
	}
	rep := report{o: options{command: "go run ./hack/bench | tee"}, results: []result{r}, baseRSS: 20 * 1024}
	for _, h := range rep.historyRows() {
		if strings.Contains(h, "| ? |") || !strings.Contains(h, `\| tee`) {
			t.Errorf("history row %q: a column not found, or the command's pipe not escaped", h)
		}
	}
}
