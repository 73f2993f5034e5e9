package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// listReader is a client.Reader that serves a fixed list of CDCPipelines, or fails.
type listReader struct {
	items []urutauv1alpha1.CDCPipeline
	err   error
	// lists counts List calls; opts records the options of the last one.
	lists int
	opts  []client.ListOption
}

func (r *listReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("listReader: Get is not used by the webhook")
}

func (r *listReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists++
	r.opts = opts
	if r.err != nil {
		return r.err
	}
	l, ok := list.(*urutauv1alpha1.CDCPipelineList)
	if !ok {
		return fmt.Errorf("listReader: unexpected list %T", list)
	}
	l.Items = nil
	for i := range r.items {
		l.Items = append(l.Items, *r.items[i].DeepCopy())
	}
	return nil
}

// doc is an inline definition under construction.
type doc = map[string]any

// mysqlInline is a valid MySQL definition, in urutau's dialect (internal/spec).
func mysqlInline() doc {
	return doc{
		"pipeline": "shop",
		"source":   doc{"kind": "mysql", "serverId": "42"},
		"sink":     doc{"type": "iceberg+rest", "namespace": "raw", "warehouse": "s3://lake/wh"},
		"tables": []any{
			doc{"source": "shop.orders", "target": "raw.orders", "primaryKey": []any{"id"},
				"workers": doc{"number": 2, "max": 4, "cpu": "500m", "memory": "1Gi"}},
			doc{"source": "shop.customers", "target": "raw.customers", "primaryKey": []any{"id"}},
		},
	}
}

// postgresInline is a valid Postgres definition: a slotName, connected through the source Secret.
func postgresInline() doc {
	return doc{
		"pipeline": "pg",
		"source":   doc{"kind": "postgres", "slotName": "urutau_pg"},
		"sink":     doc{"type": "clickhouse", "namespace": "analytics"},
		"tables":   []any{doc{"source": "public.orders", "target": "public.orders", "primaryKey": []any{"id"}}},
	}
}

// pgBlock connects the Postgres source through the structured source.postgres block (with an SSH
// tunnel) instead of the source Secret, which must then go: the Secret's uri would fill
// source.uri, which urutau refuses next to the block.
func pgBlock(p *urutauv1alpha1.CDCPipeline) {
	p.Spec.Secrets.Source = ""
	edit(func(d doc) {
		source(d)["postgres"] = doc{"host": "pg.internal", "database": "shop",
			"ssh": doc{"host": "bastion", "username": "tunnel", "privateKey": "/etc/urutau/ssh/privateKey"}}
	})(p)
}

// kafkaInline is a valid Kafka definition without a consumer group: no identity the hub sees.
func kafkaInline() doc {
	return doc{
		"pipeline": "k",
		"source":   doc{"kind": "kafka"},
		"sink":     doc{"namespace": "raw"},
		"tables":   []any{doc{"source": "clicks", "target": "raw.clicks", "writeMode": "append", "onDelete": "skip"}},
	}
}

func raw(d any) *runtime.RawExtension {
	b, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return &runtime.RawExtension{Raw: b}
}

// mut changes a pipeline under construction.
type mut func(*urutauv1alpha1.CDCPipeline)

// pipeline is a valid MySQL pipeline shop/orders placed on one member, changed by muts.
func pipeline(muts ...mut) *urutauv1alpha1.CDCPipeline {
	p := &urutauv1alpha1.CDCPipeline{
		TypeMeta:   metav1.TypeMeta{APIVersion: urutauv1alpha1.GroupVersion.String(), Kind: "CDCPipeline"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition:  urutauv1alpha1.Definition{Inline: raw(mysqlInline())},
				Secrets:     urutauv1alpha1.Secrets{Source: "shop-db", Catalog: "shop-lake"},
				Coordinator: urutauv1alpha1.CoordinatorSpec{CPU: "500m", Memory: "1Gi"},
				Worker:      urutauv1alpha1.WorkerSpec{CPU: "250m", Memory: "512Mi", CPUOverhead: "100m", MemoryOverhead: "256Mi"},
			},
			Placement: urutauv1alpha1.Placement{Clusters: []string{"east"}},
		},
	}
	for _, m := range muts {
		m(p)
	}
	return p
}

// named renames the pipeline.
func named(ns, name string) mut {
	return func(p *urutauv1alpha1.CDCPipeline) { p.Namespace, p.Name = ns, name }
}

// inline replaces the inline definition.
func inline(d any) mut {
	return func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Definition.Inline = raw(d) }
}

// inlineRaw replaces the inline definition with raw bytes.
func inlineRaw(s string) mut {
	return func(p *urutauv1alpha1.CDCPipeline) {
		p.Spec.Definition.Inline = &runtime.RawExtension{Raw: []byte(s)}
	}
}

// edit changes the current inline definition.
func edit(f func(d doc)) mut {
	return func(p *urutauv1alpha1.CDCPipeline) {
		var d doc
		if err := json.Unmarshal(p.Spec.Definition.Inline.Raw, &d); err != nil {
			panic(err)
		}
		f(d)
		p.Spec.Definition.Inline = raw(d)
	}
}

func source(d doc) doc { return d["source"].(doc) }
func sink(d doc) doc   { return d["sink"].(doc) }
func pg(d doc) doc     { return source(d)["postgres"].(doc) }
func table(d doc, i int) doc {
	return d["tables"].([]any)[i].(doc)
}
func workers(d doc, i int) doc { return table(d, i)["workers"].(doc) }

func clusters(names ...string) mut {
	return func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.Clusters = names }
}

func selector(s *metav1.LabelSelector) mut {
	return func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Placement.ClusterSelector = s }
}

func override(o urutauv1alpha1.ClusterOverride) mut {
	return func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Overrides = append(p.Spec.Overrides, o) }
}

func deleting(p *urutauv1alpha1.CDCPipeline) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	p.Finalizers = []string{urutauv1alpha1.Finalizer}
}

// want is one expected cause: its type and exact field path, and optionally words its message
// must contain.
type want struct {
	typ      field.ErrorType
	path     string
	contains []string
}

func e(typ field.ErrorType, path string, contains ...string) want {
	return want{typ: typ, path: path, contains: contains}
}

const (
	inl = "spec.definition.inline"
	src = inl + ".source"
)

type testCase struct {
	name string
	// old, when set, makes the case an UPDATE from old to obj; otherwise a CREATE of obj.
	old *urutauv1alpha1.CDCPipeline
	obj *urutauv1alpha1.CDCPipeline
	// others are the other CDCPipelines of the hub.
	others []urutauv1alpha1.CDCPipeline
	// errs are the exact causes expected (none: admitted).
	errs []want
	// warns are words each warning must contain, one entry per warning, in order.
	warns []string
}

func others(ps ...*urutauv1alpha1.CDCPipeline) []urutauv1alpha1.CDCPipeline {
	out := make([]urutauv1alpha1.CDCPipeline, 0, len(ps))
	for _, p := range ps {
		out = append(out, *p)
	}
	return out
}

const multiWarn = "can select more than one member cluster"

// badCases are inputs that must be rejected, each with the exact field paths and reasons.
func badCases() []testCase {
	bad := []testCase{
		// --- metadata and definition sources ---
		{name: "name longer than 40", obj: pipeline(named("shop", strings.Repeat("a", 41))),
			errs: []want{e(field.ErrorTypeTooLong, "metadata.name", "40", "controller-revision-hash")}},
		{name: "no definition source", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Definition = urutauv1alpha1.Definition{} }),
			errs: []want{e(field.ErrorTypeRequired, "spec.definition", "exactly one", "inline")}},
		{name: "inline null counts as absent", obj: pipeline(inlineRaw("null")),
			errs: []want{e(field.ErrorTypeRequired, "spec.definition")}},
		{name: "image definition not implemented", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Definition = urutauv1alpha1.Definition{Image: "registry/planner:1"}
		}), errs: []want{e(field.ErrorTypeForbidden, "spec.definition.image", "not implemented", "spec.definition.inline")}},
		{name: "s3 definition not implemented", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Definition = urutauv1alpha1.Definition{S3: "s3://bucket/def.yaml"}
		}), errs: []want{e(field.ErrorTypeForbidden, "spec.definition.s3", "not implemented", "spec.definition.inline")}},
		{name: "image and inline", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Definition.Image = "planner:1" }),
			errs: []want{
				e(field.ErrorTypeInvalid, "spec.definition", "mutually exclusive"),
				e(field.ErrorTypeForbidden, "spec.definition.image", "not implemented"),
			}},
		{name: "image, s3 and inline", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Definition.Image, p.Spec.Definition.S3 = "planner:1", "s3://b/d"
		}), errs: []want{
			e(field.ErrorTypeInvalid, "spec.definition", "image, s3, inline"),
			e(field.ErrorTypeForbidden, "spec.definition.image"),
			e(field.ErrorTypeForbidden, "spec.definition.s3"),
		}},

		// --- the inline definition: urutau's dialect (spec.Parse) and what it leaves to us ---
		{name: "inline empty object", obj: pipeline(inline(doc{})), errs: []want{
			e(field.ErrorTypeRequired, inl+".pipeline"),
			e(field.ErrorTypeRequired, src+".kind"),
			e(field.ErrorTypeRequired, inl+".sink.namespace"),
			e(field.ErrorTypeRequired, inl+".tables"),
		}},
		{name: "inline is a list", obj: pipeline(inlineRaw(`[1,2]`)),
			errs: []want{e(field.ErrorTypeTypeInvalid, inl, "must be an object")}},
		{name: "unknown field refused as the coordinator refuses it", obj: pipeline(edit(func(d doc) { d["owner"] = "team-a" })),
			errs: []want{e(field.ErrorTypeForbidden, inl+".owner", "unknown field")}},
		{name: "unknown table field (a typo)", obj: pipeline(edit(func(d doc) { table(d, 1)["wirteMode"] = "append" })),
			errs: []want{e(field.ErrorTypeForbidden, inl+".tables[1].wirteMode")}},
		{name: "pipeline missing", obj: pipeline(edit(func(d doc) { delete(d, "pipeline") })),
			errs: []want{e(field.ErrorTypeRequired, inl+".pipeline")}},
		{name: "pipeline not a string", obj: pipeline(edit(func(d doc) { d["pipeline"] = 7 })),
			errs: []want{e(field.ErrorTypeTypeInvalid, inl+".pipeline")}},
		{name: "source missing", obj: pipeline(edit(func(d doc) { delete(d, "source") })),
			errs: []want{e(field.ErrorTypeRequired, src+".kind")}},
		{name: "source kind missing", obj: pipeline(edit(func(d doc) { delete(source(d), "kind") })),
			errs: []want{e(field.ErrorTypeRequired, src+".kind")}},
		{name: "source kind unknown lists the kinds", obj: pipeline(edit(func(d doc) { source(d)["kind"] = "oracle" })),
			errs: []want{e(field.ErrorTypeNotSupported, src+".kind", `"kafka"`, `"mysql"`, `"postgres"`)}},
		{name: "sink missing", obj: pipeline(edit(func(d doc) { delete(d, "sink") })),
			errs: []want{e(field.ErrorTypeRequired, inl+".sink.namespace")}},
		{name: "sink type unknown lists the registered sinks", obj: pipeline(edit(func(d doc) { sink(d)["type"] = "bigquery" })),
			errs: []want{e(field.ErrorTypeNotSupported, inl+".sink.type", `"clickhouse"`, `"couchbase"`, `"iceberg+rest"`)}},
		{name: "sink type iceberg is spelled iceberg+rest", obj: pipeline(edit(func(d doc) { sink(d)["type"] = "iceberg" })),
			errs: []want{e(field.ErrorTypeNotSupported, inl+".sink.type", `"iceberg+rest"`)}},
		{name: "upsert table without primaryKey", obj: pipeline(edit(func(d doc) { delete(table(d, 1), "primaryKey") })),
			errs: []want{e(field.ErrorTypeRequired, inl+".tables[1].primaryKey", "upsert")}},
		{name: "workers.max below workers.number", obj: pipeline(edit(func(d doc) { workers(d, 0)["max"] = 1 })),
			errs: []want{e(field.ErrorTypeInvalid, inl+".tables[0].workers.max", "below workers.number (2)")}},
		{name: "mysql serverId not a number", obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "primary" })),
			errs: []want{e(field.ErrorTypeInvalid, src+".serverId", "uint32")}},
		{name: "mysql serverId zero", obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "0" })),
			errs: []want{e(field.ErrorTypeInvalid, src+".serverId", "server_id 0")}},
		{name: "mysql serverId above uint32", obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "4294967296" })),
			errs: []want{e(field.ErrorTypeInvalid, src+".serverId")}},
		{name: "serverId as a YAML number", obj: pipeline(edit(func(d doc) { source(d)["serverId"] = 42 })),
			errs: []want{e(field.ErrorTypeTypeInvalid, src+".serverId", `serverId: "1101"`)}},
		{name: "serverId neither number nor string", obj: pipeline(edit(func(d doc) { source(d)["serverId"] = []any{1} })),
			errs: []want{e(field.ErrorTypeTypeInvalid, src+".serverId")}},
		{name: "postgres slotName required", obj: pipeline(inline(postgresInline()), edit(func(d doc) { delete(source(d), "slotName") })),
			errs: []want{e(field.ErrorTypeRequired, src+".slotName")}},
		{name: "postgres slot in the fleet's old place", obj: pipeline(inline(postgresInline()), pgBlock, edit(func(d doc) { pg(d)["slot"] = "urutau_pg" })),
			errs: []want{e(field.ErrorTypeForbidden, src+".postgres.slot", "source.slotName")}},
		{name: "postgres slotName not a slot name", obj: pipeline(inline(postgresInline()), edit(func(d doc) { source(d)["slotName"] = "Urutau-PG" })),
			errs: []want{e(field.ErrorTypeInvalid, src+".slotName", "lower-case")}},
		{name: "postgres slotName longer than 63", obj: pipeline(inline(postgresInline()), edit(func(d doc) { source(d)["slotName"] = strings.Repeat("s", 64) })),
			errs: []want{e(field.ErrorTypeInvalid, src+".slotName")}},
		{name: "postgres block not an object", obj: pipeline(inline(postgresInline()), edit(func(d doc) { source(d)["postgres"] = "yes" })),
			errs: []want{e(field.ErrorTypeTypeInvalid, src+".postgres")}},
		{name: "postgres discovery with tables", obj: pipeline(inline(postgresInline()), pgBlock, edit(func(d doc) { pg(d)["discover"] = true })),
			errs: []want{e(field.ErrorTypeForbidden, src+".postgres.discover")}},
		{name: "tables not a list", obj: pipeline(edit(func(d doc) { d["tables"] = "raw.orders" })),
			errs: []want{e(field.ErrorTypeTypeInvalid, inl+".tables")}},
		{name: "duplicate table target", obj: pipeline(edit(func(d doc) { table(d, 1)["target"] = "raw.orders" })),
			errs: []want{e(field.ErrorTypeDuplicate, inl+".tables[1].target")}},
		{name: "table workers number negative", obj: pipeline(edit(func(d doc) { workers(d, 0)["number"] = -1 })),
			errs: []want{e(field.ErrorTypeInvalid, inl+".tables[0].workers.number")}},
		{name: "table workers cpu 2GB", obj: pipeline(edit(func(d doc) { workers(d, 0)["cpu"] = "2GB" })),
			errs: []want{e(field.ErrorTypeInvalid, inl+".tables[0].workers.cpu", "not a valid resource quantity")}},
		{name: "table workers memory 1 Gi", obj: pipeline(edit(func(d doc) { workers(d, 0)["memory"] = "1 Gi" })),
			errs: []want{e(field.ErrorTypeInvalid, inl+".tables[0].workers.memory", "no spaces")}},

		// --- where source.uri and sink.uri come from (the coordinator's credential rules) ---
		{name: "no source Secret and no source.uri", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Secrets.Source = "" }),
			errs: []want{e(field.ErrorTypeRequired, "spec.secrets.source", src+".uri")}},
		{name: "source Secret next to the postgres block", obj: pipeline(inline(postgresInline()), pgBlock,
			func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Secrets.Source = "pg-creds" }),
			errs: []want{e(field.ErrorTypeForbidden, "spec.secrets.source", "source.uri together with", src+".postgres")}},
		{name: "no catalog Secret and no sink.uri", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Secrets.Catalog = "" }),
			errs: []want{e(field.ErrorTypeRequired, "spec.secrets.catalog", inl+".sink.uri")}},

		// --- coordinator and worker ---
		{name: "coordinator cpu 2GB", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Coordinator.CPU = "2GB" }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.coordinator.cpu", "not a valid resource quantity")}},
		{name: "coordinator memory 1 Gi", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Coordinator.Memory = "1 Gi" }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.coordinator.memory")}},
		{name: "worker cpu negative", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.CPU = "-1" }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.worker.cpu", "negative")}},
		{name: "worker cpuOverhead garbage", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.CPUOverhead = "lots" }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.worker.cpuOverhead")}},
		{name: "worker memory 2GB", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.Memory = "2GB" }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.worker.memory")}},
		{name: "worker memoryOverhead 1 Gi", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.MemoryOverhead = "1 Gi" }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.worker.memoryOverhead")}},
		{name: "quantity exponent too large to parse cheaply", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Coordinator.CPU = "1e-999999999" }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.coordinator.cpu", "exponent must be between -64 and 64")}},
		{name: "table quantity exponent too large", obj: pipeline(edit(func(d doc) { workers(d, 0)["cpu"] = "1E+65" })),
			errs: []want{e(field.ErrorTypeInvalid, inl+".tables[0].workers.cpu", "exponent")}},
		{name: "quantity longer than 64", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.Memory = "1" + strings.Repeat("0", 64) }),
			errs: []want{e(field.ErrorTypeTooLong, "spec.worker.memory", "64")}},
		{name: "snapshot chunkSize negative", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Coordinator.Snapshot.ChunkSize = -1 }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.coordinator.snapshot.chunkSize", "0 or more")}},
		{name: "snapshot maxParallelChunks negative", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Coordinator.Snapshot.MaxParallelChunks = -5 }),
			errs: []want{e(field.ErrorTypeInvalid, "spec.coordinator.snapshot.maxParallelChunks")}},
		{name: "several errors at once", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Coordinator.CPU, p.Spec.Worker.Memory, p.Spec.Coordinator.Snapshot.ChunkSize = "2GB", "1 Gi", -1
		}), errs: []want{
			e(field.ErrorTypeInvalid, "spec.coordinator.snapshot.chunkSize"),
			e(field.ErrorTypeInvalid, "spec.coordinator.cpu"),
			e(field.ErrorTypeInvalid, "spec.worker.memory"),
		}},

		// --- placement ---
		{name: "placement cluster not DNS-1123", obj: pipeline(clusters("east", "West_1")),
			errs: []want{e(field.ErrorTypeInvalid, "spec.placement.clusters[1]", "DNS-1123")}, warns: []string{multiWarn}},
		{name: "placement cluster empty name", obj: pipeline(clusters("")),
			errs: []want{e(field.ErrorTypeInvalid, "spec.placement.clusters[0]")}},
		{name: "placement selector empty selects everything", obj: pipeline(selector(&metav1.LabelSelector{})),
			errs: []want{e(field.ErrorTypeInvalid, "spec.placement.clusterSelector", "every member cluster")}, warns: []string{multiWarn}},
		{name: "placement selector unknown operator", obj: pipeline(selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "region", Operator: "Like", Values: []string{"eu"}},
		}})), errs: []want{e(field.ErrorTypeInvalid, "spec.placement.clusterSelector.matchExpressions[0].operator")}, warns: []string{multiWarn}},
		{name: "placement selector In without values", obj: pipeline(selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "region", Operator: metav1.LabelSelectorOpIn},
		}})), errs: []want{e(field.ErrorTypeRequired, "spec.placement.clusterSelector.matchExpressions[0].values")}, warns: []string{multiWarn}},
		{name: "placement selector bad label key", obj: pipeline(selector(&metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}})),
			errs: []want{e(field.ErrorTypeInvalid, "spec.placement.clusterSelector.matchLabels")}, warns: []string{multiWarn}},
		{name: "placement selector bad label value", obj: pipeline(selector(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu west"}})),
			errs: []want{e(field.ErrorTypeInvalid, "spec.placement.clusterSelector.matchLabels")}, warns: []string{multiWarn}},

		{name: "failover candidate not a DNS name", obj: pipeline(clusters(), func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Placement.Fenced = true
			p.Spec.Placement.Failover = &urutauv1alpha1.FailoverPlacement{Candidates: []string{"east", "West_1"}}
		}), errs: []want{e(field.ErrorTypeInvalid, "spec.placement.failover.candidates[1]", "DNS-1123")}},

		// --- overrides ---
		{name: "override names a cluster outside the placement", obj: pipeline(override(urutauv1alpha1.ClusterOverride{Clusters: []string{"east", "west"}, Image: "x:2"})),
			errs: []want{e(field.ErrorTypeNotFound, "spec.overrides[0].clusters[1]", "spec.placement.clusters")}},
		{name: "override names an invalid cluster", obj: pipeline(override(urutauv1alpha1.ClusterOverride{Clusters: []string{"EAST"}})),
			errs: []want{e(field.ErrorTypeInvalid, "spec.overrides[0].clusters[0]", "DNS-1123")}},
		{name: "override coordinator cpu 2GB", obj: pipeline(override(urutauv1alpha1.ClusterOverride{Clusters: []string{"east"},
			Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "2GB"}})),
			errs: []want{e(field.ErrorTypeInvalid, "spec.overrides[0].coordinator.cpu")}},
		{name: "override worker memory 1 Gi", obj: pipeline(clusters("east", "west"),
			override(urutauv1alpha1.ClusterOverride{Clusters: []string{"east"}}),
			override(urutauv1alpha1.ClusterOverride{Clusters: []string{"west"}, Worker: &urutauv1alpha1.ResourceOverride{Memory: "1 Gi"}})),
			errs: []want{e(field.ErrorTypeInvalid, "spec.overrides[1].worker.memory")}, warns: []string{multiWarn}},

		// --- reader identity unique across the hub ---
		{name: "serverId used in another namespace", obj: pipeline(),
			others: others(pipeline(named("billing", "invoices"))),
			errs:   []want{e(field.ErrorTypeDuplicate, src+".serverId", "another namespace of the hub", "set a source.serverId")}},
		{name: "serverId used with leading zeros", obj: pipeline(),
			others: others(pipeline(named("billing", "invoices"), edit(func(d doc) { source(d)["serverId"] = "042" }))),
			errs:   []want{e(field.ErrorTypeDuplicate, src+".serverId", "another namespace of the hub")}},
		{name: "serverId used by two others in other namespaces", obj: pipeline(),
			others: others(pipeline(named("b", "two")), pipeline(named("a", "one"))),
			errs:   []want{e(field.ErrorTypeDuplicate, src+".serverId", "another namespace of the hub")}},
		{name: "two mysql pipelines on the default serverId", obj: pipeline(edit(func(d doc) { delete(source(d), "serverId") })),
			others: others(pipeline(named("billing", "invoices"), edit(func(d doc) { delete(source(d), "serverId") }))),
			errs:   []want{e(field.ErrorTypeDuplicate, src+".serverId", `"1101"`, "another namespace of the hub", "default 1101")},
			warns:  []string{"serverId is not set"}},
		{name: "an explicit 1101 meets the default", obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "1101" })),
			others: others(pipeline(named("billing", "invoices"), edit(func(d doc) { delete(source(d), "serverId") }))),
			errs:   []want{e(field.ErrorTypeDuplicate, src+".serverId", "another namespace of the hub")}},
		{name: "postgres slotName used in another namespace", obj: pipeline(inline(postgresInline())),
			others: others(pipeline(named("analytics", "pg-copy"), inline(postgresInline()), edit(func(d doc) { d["pipeline"] = "copy" }))),
			errs:   []want{e(field.ErrorTypeDuplicate, src+".slotName", "another namespace of the hub", "pick a source.slotName")}},
		// urutau removed source.groupId (spec/spec.go @0b3b110): the coordinator refuses it at boot.
		{name: "kafka groupId, removed by urutau", obj: pipeline(inline(kafkaInline()), edit(func(d doc) { source(d)["groupId"] = "clicks" })),
			errs: []want{e(field.ErrorTypeForbidden, src+".groupId", "joins no consumer group")}},
		{name: "same name in another namespace is another pipeline", obj: pipeline(),
			others: others(pipeline(named("staging", "orders"))),
			errs:   []want{e(field.ErrorTypeDuplicate, src+".serverId", "another namespace of the hub")}},
	}

	// --- UPDATE: immutable fields ---
	upd := func(name string, change mut, errs ...want) testCase {
		return testCase{name: "update: " + name, old: pipeline(), obj: pipeline(change), errs: errs}
	}
	pgUpd := func(name string, change mut, errs ...want) testCase {
		return testCase{name: "update: " + name, old: pipeline(inline(postgresInline())),
			obj: pipeline(inline(postgresInline()), change), errs: errs}
	}
	bad = append(bad,
		upd("serverId changed", edit(func(d doc) { source(d)["serverId"] = "43" })),
		upd("source kind changed", edit(func(d doc) { source(d)["kind"] = "kafka"; source(d)["partitionedByPrimaryKey"] = true })),
		upd("pipeline renamed", edit(func(d doc) { d["pipeline"] = "shop2" })),
		upd("sink type changed", edit(func(d doc) { sink(d)["type"] = "clickhouse" })),
		upd("sink warehouse changed", edit(func(d doc) { sink(d)["warehouse"] = "s3://lake/other" })),
		upd("serverId removed (back to the default)", edit(func(d doc) { delete(source(d), "serverId") })),
		pgUpd("postgres slotName changed", edit(func(d doc) { source(d)["slotName"] = "urutau_pg2" })),
		pgUpd("postgres slotName removed", edit(func(d doc) { delete(source(d), "slotName") })),
		upd("mysql to postgres", inline(postgresInline())),
		upd("becomes invalid: quantity", func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.CPU = "2GB" }),
		upd("switches to an image definition", func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Definition = urutauv1alpha1.Definition{Image: "planner:1"}
		}),
		upd("override names a cluster outside the placement", override(urutauv1alpha1.ClusterOverride{Clusters: []string{"west"}})),
	)
	setErrs := func(name string, errs ...want) {
		for i := range bad {
			if bad[i].name == "update: "+name {
				bad[i].errs = errs
				return
			}
		}
		panic("no case " + name)
	}
	setErrs("serverId changed", e(field.ErrorTypeInvalid, src+".serverId", `was "42"`, "create a new CDCPipeline"))
	setErrs("source kind changed", e(field.ErrorTypeInvalid, src+".kind", `was "mysql"`, "create a new CDCPipeline"))
	setErrs("pipeline renamed", e(field.ErrorTypeInvalid, inl+".pipeline", "worker StatefulSet", "create a new CDCPipeline"))
	setErrs("sink type changed", e(field.ErrorTypeInvalid, inl+".sink.type", "create a new CDCPipeline"))
	setErrs("sink warehouse changed", e(field.ErrorTypeInvalid, inl+".sink.warehouse", "create a new CDCPipeline"))
	setErrs("serverId removed (back to the default)", e(field.ErrorTypeInvalid, src+".serverId", `was "42"`, "default 1101"))
	setErrs("postgres slotName changed", e(field.ErrorTypeInvalid, src+".slotName", `was "urutau_pg"`, "WAL", "create a new CDCPipeline"))
	setErrs("postgres slotName removed", e(field.ErrorTypeRequired, src+".slotName"))
	for i := range bad {
		switch bad[i].name {
		case "update: serverId removed (back to the default)":
			bad[i].warns = []string{"serverId is not set"}
		}
	}
	setErrs("mysql to postgres",
		e(field.ErrorTypeInvalid, inl+".pipeline"),
		e(field.ErrorTypeInvalid, src+".kind"),
		e(field.ErrorTypeInvalid, inl+".sink.type"),
		e(field.ErrorTypeInvalid, inl+".sink.warehouse"),
	)
	setErrs("becomes invalid: quantity", e(field.ErrorTypeInvalid, "spec.worker.cpu"))
	setErrs("switches to an image definition", e(field.ErrorTypeForbidden, "spec.definition.image"))
	setErrs("override names a cluster outside the placement", e(field.ErrorTypeNotFound, "spec.overrides[0].clusters[0]"))

	// An update whose old definition ran nothing (image) may bring an identity, which must be unique.
	bad = append(bad, testCase{
		name:   "update: image to inline with a serverId another pipeline uses",
		old:    pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Definition = urutauv1alpha1.Definition{Image: "planner:1"} }),
		obj:    pipeline(),
		others: others(pipeline(named("billing", "invoices"))),
		errs:   []want{e(field.ErrorTypeDuplicate, src+".serverId", "another namespace of the hub")},
	})
	return bad
}

// goodCases are inputs that must be admitted, with the warnings they carry.
func goodCases() []testCase {
	return []testCase{
		{name: "mysql on one member", obj: pipeline()},
		{name: "serverId with leading zeros", obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "0042" }))},
		{name: "postgres with slotName", obj: pipeline(inline(postgresInline()))},
		{name: "mysql without serverId warns", obj: pipeline(edit(func(d doc) { delete(source(d), "serverId") })),
			warns: []string{"serverId is not set: the coordinator replicates as its default server id 1101"}},
		// A kafka coordinator joins no consumer group: no identity, no warning, and any number of
		// pipelines may read one topic.
		{name: "kafka: no reader identity", obj: pipeline(inline(kafkaInline())),
			others: others(pipeline(named("web", "clicks"), inline(kafkaInline())))},
		{name: "no sink.type: the default iceberg+rest", obj: pipeline(edit(func(d doc) { delete(sink(d), "type") }))},
		{name: "urutau's advisory warnings", obj: pipeline(edit(func(d doc) {
			table(d, 0)["metadata"] = []any{doc{"from": "op", "as": "_op"}}
		})), warns: []string{"tables[0].metadata[0]: in upsert mode a delete removes the row"}},
		{name: "postgres discovery, no tables", obj: pipeline(inline(postgresInline()), pgBlock, edit(func(d doc) { pg(d)["discover"] = true; delete(d, "tables") }))},
		{name: "source and sink uri inline, no Secrets", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Secrets = urutauv1alpha1.Secrets{} },
			edit(func(d doc) {
				source(d)["uri"] = "mysql://repl@db/shop"
				sink(d)["uri"] = "http://polaris:8181/api/catalog"
			}))},
		{name: "placed nowhere", obj: pipeline(clusters())},
		{name: "name of exactly 40", obj: pipeline(named("shop", strings.Repeat("a", 40)))},
		{name: "quantities in every notation", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Coordinator.CPU, p.Spec.Coordinator.Memory = "1.5", "1e9"
			p.Spec.Worker.CPU, p.Spec.Worker.Memory = "2", "2G"
			p.Spec.Worker.CPUOverhead, p.Spec.Worker.MemoryOverhead = "5E-3", "1e+64"
		})},
		{name: "exa and exbi are suffixes, not exponents", obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Worker.Memory, p.Spec.Worker.MemoryOverhead = "1E", "1Ei"
		})},
		{name: "two members warn about the source Secret", obj: pipeline(clusters("east", "west")),
			warns: []string{multiWarn + ": each member runs its own coordinator with the same source identity (mysql serverId 42), so the source Secret \"shop-db\""}},
		{name: "selector warns, and an override outside the names is a warning", obj: pipeline(
			clusters("east"),
			selector(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}),
			override(urutauv1alpha1.ClusterOverride{Clusters: []string{"east", "eu-2"}, LogLevel: "debug"}),
		), warns: []string{multiWarn, `spec.overrides[0].clusters[1]: cluster "eu-2" is not in spec.placement.clusters`}},
		{name: "failover: an override on a candidate, no multi-member warning (one runs at a time)", obj: pipeline(clusters(), func(p *urutauv1alpha1.CDCPipeline) {
			p.Spec.Placement.Fenced = true
			p.Spec.Placement.Failover = &urutauv1alpha1.FailoverPlacement{Candidates: []string{"east", "west"}}
		}, override(urutauv1alpha1.ClusterOverride{Clusters: []string{"west"}, LogLevel: "debug"}))},
		{name: "override on a placed cluster", obj: pipeline(clusters("east", "west"), override(urutauv1alpha1.ClusterOverride{
			Clusters: []string{"west"}, Image: "urutau:2", Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "1", Memory: "2Gi"},
		})), warns: []string{multiWarn}},
		{name: "other pipeline is this one", obj: pipeline(), others: others(pipeline())},
		{name: "other pipeline with the serverId is being deleted", obj: pipeline(), others: others(pipeline(named("billing", "invoices"), deleting))},
		{name: "other pipeline with another serverId", obj: pipeline(), others: others(pipeline(named("billing", "invoices"), edit(func(d doc) { source(d)["serverId"] = "7" })))},
		{name: "other pipeline does not parse", obj: pipeline(), others: others(pipeline(named("billing", "broken"), inlineRaw(`{"source": 1}`)))},
		{name: "postgres next to a mysql pipeline", obj: pipeline(inline(postgresInline())), others: others(pipeline(named("billing", "invoices")))},
		{name: "a postgres serverId is no MySQL identity", obj: pipeline(inline(postgresInline()), edit(func(d doc) { source(d)["serverId"] = "42" })),
			others: others(pipeline(named("billing", "invoices")))},

		// UPDATE: everything but the identity, the pipeline name and the sink stays mutable.
		{name: "update: placement, overrides, image, logLevel, resources, tables", old: pipeline(), obj: pipeline(
			clusters("west"),
			override(urutauv1alpha1.ClusterOverride{Clusters: []string{"west"}, LogLevel: "debug"}),
			func(p *urutauv1alpha1.CDCPipeline) {
				p.Spec.Image, p.Spec.LogLevel = "urutau:2", "warn"
				p.Spec.Coordinator.CPU, p.Spec.Worker.Memory = "2", "4Gi"
				p.Spec.Secrets.Source = "shop-db-v2"
			},
			edit(func(d doc) {
				d["tables"] = []any{doc{"source": "shop.payments", "target": "raw.payments", "primaryKey": []any{"id"}, "workers": doc{"number": 3, "cpu": "1"}}}
				source(d)["snapshotUri"] = "mysql://reader@replica/shop"
			}),
		)},
		{name: "update: serverId 42 written as 042", old: pipeline(), obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "042" }))},
		{name: "update: an unset serverId written as the default", old: pipeline(edit(func(d doc) { delete(source(d), "serverId") })),
			obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "1101" }))},
		{name: "update: sink.type written as its default", old: pipeline(edit(func(d doc) { delete(sink(d), "type") })), obj: pipeline()},
		{name: "update: postgres ssh and discover", old: pipeline(inline(postgresInline()), pgBlock),
			obj: pipeline(inline(postgresInline()), pgBlock, edit(func(d doc) { delete(pg(d), "ssh"); pg(d)["discover"] = true; delete(d, "tables") }))},
		{name: "update: metadata only on an object the rules now reject", old: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.CPU = "2GB" }),
			obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) {
				p.Spec.Worker.CPU = "2GB"
				p.Finalizers = []string{urutauv1alpha1.Finalizer}
			})},
		{name: "update: anything while being deleted", old: pipeline(deleting),
			obj: pipeline(deleting, edit(func(d doc) { source(d)["serverId"] = "43" }), func(p *urutauv1alpha1.CDCPipeline) { p.Finalizers = nil })},
		{name: "update: spec unchanged although a duplicate exists", old: pipeline(), obj: pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Labels = map[string]string{"a": "b"} }),
			others: others(pipeline(named("billing", "invoices")))},
		{name: "update: mutable change although a duplicate exists (identity unchanged)", old: pipeline(), obj: pipeline(clusters("west")),
			others: others(pipeline(named("billing", "invoices")))},
		{name: "update: old definition did not parse, new one is free to set the identity", old: pipeline(inlineRaw(`{"pipeline": 1}`)),
			obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "99" })), others: others(pipeline(named("billing", "invoices")))},
		{name: "update: the fleet's old dialect can be fixed in place", old: pipeline(edit(func(d doc) { source(d)["serverId"] = 42 })),
			obj: pipeline(edit(func(d doc) { source(d)["serverId"] = "43" }))},
	}
}

func run(t *testing.T, tc testCase) ([]string, error) {
	t.Helper()
	v := &CDCPipelineValidator{Client: &listReader{items: tc.others}}
	if tc.old == nil {
		return v.ValidateCreate(t.Context(), tc.obj)
	}
	return v.ValidateUpdate(t.Context(), tc.old, tc.obj)
}

func checkWarnings(t *testing.T, got []string, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d warnings, want %d:\n  %s", len(got), len(want), strings.Join(got, "\n  "))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
}

func TestBadInputsAreRejectedWithFieldPaths(t *testing.T) {
	cases := badCases()
	creates, updates := 0, 0
	for _, tc := range cases {
		if tc.old == nil {
			creates++
		} else {
			updates++
		}
		t.Run(tc.name, func(t *testing.T) {
			var oldBefore *urutauv1alpha1.CDCPipeline
			if tc.old != nil {
				oldBefore = tc.old.DeepCopy()
			}
			objBefore := tc.obj.DeepCopy()

			warns, err := run(t, tc)

			// The validator never changes what it is given: a rejected update leaves the stored
			// (old) object as it was.
			if !apiequality.Semantic.DeepEqual(objBefore, tc.obj) {
				t.Errorf("the validator changed the new object")
			}
			if tc.old != nil && !apiequality.Semantic.DeepEqual(oldBefore, tc.old) {
				t.Errorf("the validator changed the old object")
			}
			if err == nil {
				t.Fatalf("admitted, want %d errors", len(tc.errs))
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a StatusError", err, err)
			}
			st := se.Status()
			if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("got %d %s, want 422 Invalid: %v", st.Code, st.Reason, err)
			}
			if st.Details == nil || st.Details.Kind != "CDCPipeline" || st.Details.Group != "urutau.io" || st.Details.Name != tc.obj.Name {
				t.Errorf("details %+v do not name the CDCPipeline %q", st.Details, tc.obj.Name)
			}
			got := make([]string, 0, len(st.Details.Causes))
			for _, c := range st.Details.Causes {
				got = append(got, string(c.Type)+" "+c.Field)
			}
			wantKeys := make([]string, 0, len(tc.errs))
			for _, w := range tc.errs {
				wantKeys = append(wantKeys, string(w.typ)+" "+w.path)
			}
			if !slices.Equal(sorted(got), sorted(wantKeys)) {
				t.Fatalf("causes:\n  got  %q\n  want %q\n%v", got, wantKeys, err)
			}
			for _, w := range tc.errs {
				for _, c := range st.Details.Causes {
					if string(c.Type) != string(w.typ) || c.Field != w.path {
						continue
					}
					for _, s := range w.contains {
						if !strings.Contains(c.Message, s) {
							t.Errorf("%s: message %q does not contain %q", w.path, c.Message, s)
						}
					}
				}
			}
			checkWarnings(t, warns, tc.warns)
		})
	}
	if len(cases) < 40 {
		t.Errorf("only %d bad cases, want at least 40", len(cases))
	}
	t.Logf("%d bad cases: %d creates, %d updates", len(cases), creates, updates)
}

func TestGoodInputsAreAdmitted(t *testing.T) {
	for _, tc := range goodCases() {
		t.Run(tc.name, func(t *testing.T) {
			warns, err := run(t, tc)
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			checkWarnings(t, warns, tc.warns)
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestUniquenessListsAllNamespacesLive(t *testing.T) {
	r := &listReader{}
	v := &CDCPipelineValidator{Client: r}
	if _, err := v.ValidateCreate(t.Context(), pipeline()); err != nil {
		t.Fatal(err)
	}
	if r.lists != 1 || len(r.opts) != 0 {
		t.Errorf("List called %d times with %v; want once, without options (all namespaces)", r.lists, r.opts)
	}

	// Nothing to compare: no List.
	r = &listReader{}
	v = &CDCPipelineValidator{Client: r}
	if _, err := v.ValidateCreate(t.Context(), pipeline(inline(kafkaInline()))); err != nil {
		t.Fatal(err)
	}
	if r.lists != 0 {
		t.Errorf("listed %d times for a pipeline without a source identity", r.lists)
	}

	// An update that keeps the identity does not list.
	r = &listReader{}
	v = &CDCPipelineValidator{Client: r}
	if _, err := v.ValidateUpdate(t.Context(), pipeline(), pipeline(clusters("west"))); err != nil {
		t.Fatal(err)
	}
	if r.lists != 0 {
		t.Errorf("listed %d times for an update that keeps the identity", r.lists)
	}
}

func TestListFailureRejects(t *testing.T) {
	r := &listReader{err: apierrors.NewForbidden(urutauv1alpha1.GroupVersion.WithResource("cdcpipelines").GroupResource(), "", errors.New("no RBAC"))}
	v := &CDCPipelineValidator{Client: r}
	_, err := v.ValidateCreate(t.Context(), pipeline())
	if err == nil {
		t.Fatal("admitted although the List failed")
	}
	if !apierrors.IsInternalError(err) {
		t.Errorf("got %v, want an internal error", err)
	}
	for _, s := range []string{"unique across the hub", "listing CDCPipelines in all namespaces", "no RBAC", "list cdcpipelines cluster-wide"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q does not contain %q", err.Error(), s)
		}
	}

	// Without a client the check fails closed too.
	if _, err := (&CDCPipelineValidator{}).ValidateCreate(t.Context(), pipeline()); !apierrors.IsInternalError(err) {
		t.Errorf("without a client: got %v, want an internal error", err)
	}

	// An invalid spec is reported as such, without listing.
	r = &listReader{err: errors.New("down")}
	v = &CDCPipelineValidator{Client: r}
	_, err = v.ValidateCreate(t.Context(), pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.CPU = "2GB" }))
	if !apierrors.IsInvalid(err) || r.lists != 0 {
		t.Errorf("got %v after %d lists, want Invalid without listing", err, r.lists)
	}
}

func TestValidateDeleteAdmits(t *testing.T) {
	w, err := (&CDCPipelineValidator{}).ValidateDelete(t.Context(), pipeline(func(p *urutauv1alpha1.CDCPipeline) { p.Spec.Worker.CPU = "2GB" }))
	if w != nil || err != nil {
		t.Fatalf("got %v, %v", w, err)
	}
}

// TestPureFunctions pins the pure API the admission glue is built from.
func TestPureFunctions(t *testing.T) {
	errs, warns := ValidateSpec(pipeline(clusters("a", "b")))
	if len(errs) != 0 || len(warns) != 1 {
		t.Errorf("ValidateSpec: %v, %v", errs, warns)
	}
	if errs := ValidateUpdate(pipeline(), pipeline(edit(func(d doc) { source(d)["serverId"] = "1" }))); len(errs) != 1 || errs[0].Field != src+".serverId" {
		t.Errorf("ValidateUpdate: %v", errs)
	}
	if errs := validateUniqueness(pipeline(), others(pipeline(named("x", "y")))); len(errs) != 1 || errs[0].Type != field.ErrorTypeDuplicate {
		t.Errorf("validateUniqueness: %v", errs)
	}
}

func TestExponentOutOfRange(t *testing.T) {
	for v, want := range map[string]bool{
		"1": false, "1e64": false, "1e-64": false, "1E+064": false, "1e0000064": false, "1e0": false,
		"1e65": true, "1e-65": true, "1E100": true, "1e-999999999": true, "1e99999999999999999999": true,
		"1E": false, "1Ei": false, "1Ki": false, "1e": false, "1ex": false, "500m": false,
	} {
		if got := exponentOutOfRange(v); got != want {
			t.Errorf("exponentOutOfRange(%q) = %v, want %v", v, got, want)
		}
	}
}
