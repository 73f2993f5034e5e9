package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/urutau-io/fleet/internal/fleetview"
)

// Output formats of -o that print a table rather than the objects.
const (
	outputTable = ""
	outputWide  = "wide"
)

// printFlags are kubectl get's output flags: -o (a table, wide, json, yaml, name, jsonpath,
// go-template, custom-columns and their -file forms), --no-headers, --template and
// --allow-missing-template-keys, printed by kubectl's own printers.
type printFlags struct {
	output    string
	noHeaders bool
	jsonYAML  *genericclioptions.JSONYamlPrintFlags
	name      *genericclioptions.NamePrintFlags
	template  *genericclioptions.KubeTemplatePrintFlags
	columns   *get.CustomColumnsPrintFlags
}

func newPrintFlags() *printFlags {
	return &printFlags{
		jsonYAML: genericclioptions.NewJSONYamlPrintFlags(),
		name:     genericclioptions.NewNamePrintFlags(""),
		template: genericclioptions.NewKubeTemplatePrintFlags(),
		columns:  get.NewCustomColumnsPrintFlags(),
	}
}

// allowedFormats are the values -o takes (the template formats take =TEMPLATE).
func (p *printFlags) allowedFormats() []string {
	f := []string{outputWide}
	f = append(f, p.jsonYAML.AllowedFormats()...)
	f = append(f, p.name.AllowedFormats()...)
	f = append(f, p.template.AllowedFormats()...)
	return append(f, p.columns.AllowedFormats()...)
}

func (p *printFlags) addFlags(cmd *cobra.Command) {
	// Not jsonYAML.AddFlags: --show-managed-fields would do nothing, these objects have none.
	p.template.AddFlags(cmd)
	cmd.Flags().StringVarP(&p.output, "output", "o", "", fmt.Sprintf("Output format. One of: (%s). "+
		"Without -o, a table. The objects are described in docs/kubectl-urutau.md; see kubectl's custom columns, "+
		"golang template and jsonpath template.", strings.Join(p.allowedFormats(), ", ")))
	cmd.Flags().BoolVar(&p.noHeaders, "no-headers", false, "When using the default or custom-column output format, don't print headers.")
	_ = cmd.RegisterFlagCompletionFunc("output", func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, f := range p.allowedFormats() {
			if strings.HasPrefix(f, prefix) {
				out = append(out, f)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// table is true when -o asks for the table (with wide columns or not) rather than the objects.
func (p *printFlags) table() bool {
	return p.format() == outputTable || p.format() == outputWide
}

func (p *printFlags) wide() bool { return p.format() == outputWide }

// format is -o, or go-template when only --template is given, as kubectl get does.
func (p *printFlags) format() string {
	if p.output == "" && *p.template.TemplateArgument != "" {
		return "go-template"
	}
	return p.output
}

// toPrinter returns the printer of the objects for -o, or an error naming the allowed formats.
// Call it before reading the hub, so a bad -o fails at once.
func (p *printFlags) toPrinter() (printers.ResourcePrinter, error) {
	if p.table() {
		return printers.NewTablePrinter(printers.PrintOptions{Wide: p.wide(), NoHeaders: p.noHeaders}), nil
	}
	format := p.format()
	p.columns.NoHeaders = p.noHeaders
	p.columns.TemplateArgument = *p.template.TemplateArgument
	for _, try := range []func(string) (printers.ResourcePrinter, error){p.template.ToPrinter, p.jsonYAML.ToPrinter, p.columns.ToPrinter, p.name.ToPrinter} {
		if printer, err := try(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
			if err != nil {
				return nil, usageError{fmt.Errorf("-o %s: %w", format, err)}
			}
			return printer, nil
		}
	}
	return nil, usageError{genericclioptions.NoCompatiblePrinterError{OutputFormat: &format, AllowedFormats: p.allowedFormats()}}
}

// column is one column of a table; wide ones show only with -o wide.
type column struct {
	name string
	wide bool
}

// tableRows is what a command prints without -o: its columns and rows.
type tableRows struct {
	columns []column
	rows    [][]any
}

// metaTable is t as a metav1.Table, which kubectl's table printer prints (wide columns have
// priority 1, as a server marks them).
func (t *tableRows) metaTable() *metav1.Table {
	mt := &metav1.Table{}
	for _, c := range t.columns {
		d := metav1.TableColumnDefinition{Name: c.name, Type: "string"}
		if c.wide {
			d.Priority = 1
		}
		mt.ColumnDefinitions = append(mt.ColumnDefinitions, d)
	}
	for _, r := range t.rows {
		mt.Rows = append(mt.Rows, metav1.TableRow{Cells: r})
	}
	return mt
}

// list is a kubectl List (apiVersion v1, kind List) of objects, as `kubectl get -o json` prints
// more than one object.
func list(items []map[string]any) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}}
	for _, o := range items {
		l.Items = append(l.Items, unstructured.Unstructured{Object: o})
	}
	return l
}

// printObjects writes the table, or the objects as -o asks.
func printObjects(w io.Writer, p printers.ResourcePrinter, table bool, t *tableRows, objects *unstructured.UnstructuredList) error {
	if table {
		return p.PrintObj(t.metaTable(), w)
	}
	return p.PrintObj(objects, w)
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
