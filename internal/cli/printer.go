package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/fleetview"
)

// Output formats of -o.
const (
	outputTable = ""
	outputWide  = "wide"
	outputYAML  = "yaml"
	outputJSON  = "json"
)

func validOutput(o string) error {
	switch o {
	case outputTable, outputWide, outputYAML, outputJSON:
		return nil
	}
	return fmt.Errorf("-o %q: must be one of wide, yaml, json (or empty for a table)", o)
}

// table is what a command prints: its columns (wide ones only with -o wide) and rows.
type table struct {
	headers []string
	// wideFrom is the index of the first column shown only with -o wide; len(headers) if none.
	wideFrom int
	rows     [][]string
}

// print writes t as kubectl does: upper-case headers, columns padded by three spaces.
func (t table) print(w io.Writer, wide, noHeaders bool) error {
	// kubectl's tab writer settings (k8s.io/cli-runtime/pkg/printers.GetNewTabWriter).
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	n := t.wideFrom
	if wide {
		n = len(t.headers)
	}
	if !noHeaders {
		fmt.Fprintln(tw, strings.ToUpper(strings.Join(t.headers[:n], "\t")))
	}
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r[:n], "\t"))
	}
	return tw.Flush()
}

// list is the -o json|yaml document: a list of items, as kubectl prints a List.
type list[T any] struct {
	Kind  string `json:"kind"`
	Items []T    `json:"items"`
}

func printStructured[T any](w io.Writer, format, kind string, items []T) error {
	if items == nil {
		items = []T{}
	}
	doc := list[T]{Kind: kind, Items: items}
	var raw []byte
	var err error
	if format == outputJSON {
		raw, err = json.MarshalIndent(doc, "", "    ")
		raw = append(raw, '\n')
	} else {
		raw, err = yaml.Marshal(doc)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(raw)
	return err
}

// none is how kubectl prints an empty cell.
func none(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// age is kubectl's AGE: 5m, 3h, 2d; <unknown> for no time.
func age(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(*t))
}

// lastAnswer is the LAST ANSWER cell: a member the hub records as answering answered within its
// check interval ("within 30s"); otherwise the age of its last answer.
func lastAnswer(m fleetview.Member, now time.Time) string {
	if m.Reachable == fleetview.True && m.CheckInterval.Duration > 0 {
		return "within " + duration.HumanDuration(m.CheckInterval.Duration)
	}
	return age(m.LastAnswer, now)
}

// expiry says when credentials expire, relative to now: "in 29d", "expired 2h ago", <none>.
func expiry(t *time.Time, now time.Time) string {
	switch {
	case t == nil || t.IsZero():
		return "<none>"
	case t.After(now):
		return "in " + duration.HumanDuration(t.Sub(now))
	default:
		return "expired " + duration.HumanDuration(now.Sub(*t)) + " ago"
	}
}

// truncate keeps table cells to one readable line; -o yaml|json has the whole text.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
