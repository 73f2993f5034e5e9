package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// The small universe histories draw from: few names, so that operations collide.
var (
	// Members of the chaos fleet.
	Members = []string{"member-a", "member-b", "member-c"}
	// PipelineNames are the CDCPipeline names a history uses.
	PipelineNames = []string{"p0", "p1", "p2", "p3"}
	// Identities are abstract source identities; each history maps them to identities of its own
	// (sourceOf) so histories never share one: "s<k>" a MySQL serverId, "q<k>" a Postgres slot.
	Identities = []string{"s0", "s1", "q0"}
)

const (
	// sourceSecret is the source Secret every member namespace holds.
	sourceSecret = "chaos-source"
	// image is the coordinator image (kwok runs anything).
	image = "ghcr.io/urutau-io/urutau:chaos"
	// holdFinalizer is the foreign finalizer Hold puts on member objects.
	holdFinalizer = "chaos.urutau.io/hold"
	// bypassLabel on a CDCPipeline makes the fleet's webhook configuration skip it (objectSelector).
	bypassLabel = "chaos.urutau.io/bypass-webhook"
	// hammerAnnotation is what Hammer writes.
	hammerAnnotation = "chaos.urutau.io/hammer"
	// fieldOwner is the field manager of the suite's own writes.
	fieldOwner = "urutau-chaos"
	// SelectorLabel is the inventory label selector placements (Create/Place Selector) match,
	// set and removed by Label: key=value.
	SelectorLabel = selectorKey + "=" + selectorValue
	selectorKey   = "chaos.urutau.io/selected"
	selectorValue = "true"
)

// sourceURI is the source Secret's uri in member when it reads db ("" its own database,
// SharedDB the one every member pointed at it shares): host, port and database are what the hub
// compares (internal/sourcedb); the host is a global name, so one name is one database
// whichever member reads it.
func sourceURI(member, db string) string {
	if db == "" {
		db = member
	}
	return "mysql://chaos@db." + db + ".example:3306/shop"
}

// serverID is the MySQL serverId of abstract identity id in the history numbered n: unique
// across histories of one run, so a history that leaves something behind cannot collide with
// the next.
func serverID(n int, id string) string {
	k := 0
	for i, s := range Identities {
		if s == id {
			k = i
		}
	}
	return strconv.Itoa(100000 + n*10 + k)
}

// sourceOf is how abstract identity id of the history numbered n is written in a definition:
// its kind, and its serverId (MySQL) or slotName (Postgres). padded writes a serverId with
// leading zeros: the same server id to MySQL, another string to anything that compares text.
func sourceOf(n int, id string, padded bool) (kind, value string) {
	if !isMySQL(id) {
		return "postgres", fmt.Sprintf("chaos_%d_%s", n, id)
	}
	v := serverID(n, id)
	if padded {
		v = "00" + v
	}
	return "mysql", v
}

// isMySQL tells whether abstract identity id is a MySQL serverId (one that can be padded).
func isMySQL(id string) bool { return strings.HasPrefix(id, "s") }

// inlineDefinition is THE pipeline template of the suite: a MySQL source whose identity is its
// serverId, written as a string as urutau writes it, or a Postgres source whose identity is its
// slotName, with fields both the fleet's parser and urutau's own dialect accept. Change it here
// only.
func inlineDefinition(name, kind, identity string) []byte {
	source := map[string]any{"kind": kind, "uri": "mysql://chaos@db.example:3306/shop", "serverId": identity}
	table := map[string]any{"source": "shop.orders", "target": "raw.orders", "primaryKey": []any{"id"}}
	if kind == "postgres" {
		source = map[string]any{"kind": kind, "uri": "postgres://chaos@db.example:5432/shop", "slotName": identity}
		table["source"] = "public.orders"
	}
	doc := map[string]any{
		"pipeline": name,
		"source":   source,
		"sink": map[string]any{
			"uri":       "http://iceberg-rest.example:8181",
			"namespace": "raw",
			"warehouse": "s3://lake/chaos",
		},
		"tables": []any{table},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return raw
}

// newPipeline is the CDCPipeline a Create op submits.
func newPipeline(ns, name, kind, identity string, placement []string, selector, bypass bool) *urutauv1alpha1.CDCPipeline {
	p := &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: inlineDefinition(name, kind, identity)}},
				Secrets:    urutauv1alpha1.Secrets{Source: sourceSecret},
			},
			Placement: urutauv1alpha1.Placement{Clusters: sortedCopy(placement)},
		},
	}
	if selector {
		p.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{selectorKey: selectorValue}}
	}
	if bypass {
		p.Labels = map[string]string{bypassLabel: "true"}
	}
	return p
}

// withFence makes p's placement fenced, or a failover placement, as o asks.
func withFence(p *urutauv1alpha1.CDCPipeline, o Create) {
	p.Spec.Placement.Fenced = o.Fenced
	if o.Failover == nil {
		return
	}
	fo := &urutauv1alpha1.FailoverPlacement{Candidates: slices.Clone(o.Failover.Candidates),
		Threshold: &metav1.Duration{Duration: ms(o.Failover.ThresholdMillis)}}
	if o.Failover.CandidateSelector {
		fo.CandidateSelector = &metav1.LabelSelector{MatchLabels: map[string]string{selectorKey: selectorValue}}
	}
	p.Spec.Placement = urutauv1alpha1.Placement{Fenced: true, Failover: fo}
}

// identityOf is the source identity of a pipeline's inline definition as the checker compares
// it: "<kind>:<value>" (mysql:<serverId>, postgres:<slotName>); empty when it has none or is not
// well formed. It reads the definition on its own, not through the fleet's parser, so that the
// checker does not share a mistake of the hub's: a serverId is the number MySQL takes ("0042" is
// 42), and unset it is 1101, the coordinator's --server-id default (urutau spec/load.go).
func identityOf(inline []byte) string {
	var doc struct {
		Source struct {
			Kind     string `json:"kind"`
			ServerID string `json:"serverId"`
			SlotName string `json:"slotName"`
		} `json:"source"`
	}
	if json.Unmarshal(inline, &doc) != nil {
		return ""
	}
	switch s := doc.Source; s.Kind {
	case "mysql":
		id := s.ServerID
		if id == "" {
			id = "1101"
		}
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return ""
		}
		return "mysql:" + strconv.FormatUint(n, 10)
	case "postgres":
		if s.SlotName == "" {
			return ""
		}
		return "postgres:" + s.SlotName
	}
	return ""
}

// historyNamespaces are the namespaces of the history numbered n (on the hub and in every member):
// p0 and p1 live in the first, p2 and p3 in the second, so that one identity is read from two
// namespaces (racing creates, renames across them) and the reader lease must hold across them.
func historyNamespaces(n int) []string {
	return []string{fmt.Sprintf("chaos-%d", n), fmt.Sprintf("chaos-%d-b", n)}
}

// namespaceOf is the namespace, of a history's nss, of pipeline name.
func namespaceOf(nss []string, name string) string {
	if i := slices.Index(PipelineNames, name); i >= 0 {
		return nss[i*len(nss)/len(PipelineNames)]
	}
	return nss[0]
}
