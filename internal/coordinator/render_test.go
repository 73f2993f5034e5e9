package coordinator

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current output")

const (
	testNamespace = "cdc"
	testUID       = types.UID("0b7e3a52-6c1f-4d8e-9a21-5f0c3e7d9b14")
	testImage     = "ghcr.io/urutau-io/urutau:v1.8.0"
)

// pipeline builds a CDCPipeline from an inline definition written as YAML, for readability.
func pipeline(t testing.TB, name, inlineYAML string, mutate ...func(*urutauv1alpha1.CDCPipelineSpec)) *urutauv1alpha1.CDCPipeline {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(inlineYAML))
	if err != nil {
		t.Fatalf("inline YAML: %v", err)
	}
	p := &urutauv1alpha1.CDCPipeline{
		TypeMeta:   metav1.TypeMeta{APIVersion: "urutau.io/v1alpha1", Kind: "CDCPipeline"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: testUID, Generation: 3},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: raw}},
			},
			Placement: urutauv1alpha1.Placement{Clusters: []string{"eu-1", "us-1"}},
		},
	}
	for _, m := range mutate {
		m(&p.Spec)
	}
	return p
}

// The inline definitions are urutau's dialect (internal/spec): every one loads in the coordinator.

const mysqlInline = `
pipeline: shop
source:
  kind: mysql
  serverId: "1001"
sink:
  type: iceberg+rest
  namespace: raw
  warehouse: s3://lake/warehouse
tables:
- source: shop.orders
  target: raw.orders
  primaryKey: [id]
`

// postgresSSHDiscoverInline discovers its tables and has maintenance on: the single-cluster
// operator grants no maintenance pod rules then (it cannot name the pods) and renders one generic
// worker template whose urutau.io/table label is empty. No sink.type: the default iceberg+rest.
const postgresSSHDiscoverInline = `
pipeline: billing
source:
  kind: postgres
  slotName: billing_slot
  postgres:
    host: billing-db.internal
    database: billing
    discover: true
    ssh:
      host: bastion.example.com
      username: urutau
      privateKey: /etc/urutau/ssh/privateKey
sink:
  namespace: billing
  maintenance:
    enabled: true
`

const postgresSSHSnapshotInline = `
pipeline: billing
source:
  kind: postgres
  slotName: billing_slot
  snapshotUri: postgres://reader@billing-replica.internal:5432/billing
  postgres:
    host: billing-db.internal
    database: billing
    ssh:
      host: bastion.example.com
      username: urutau
      privateKey: /etc/urutau/ssh/privateKey
sink:
  type: iceberg+rest
  namespace: billing
  warehouse: s3://lake/warehouse
  maintenance:
    enabled: true
tables:
- source: public.invoices
  target: public.invoices
  primaryKey: [id]
- source: public.payments
  target: public.payments
  primaryKey: [id]
  workers:
    number: 2
    cpu: 750m
`

const kedaInline = `
pipeline: shop
source:
  kind: mysql
  serverId: "1001"
sink:
  type: iceberg+rest
  namespace: raw
tables:
- source: shop.orders
  target: raw.orders
  primaryKey: [id]
  workers:
    number: 2
    max: 12
    memory: 2Gi
- source: shop.customers
  target: raw.customers
  primaryKey: [id]
  workers:
    number: 1
`

// sanitisedInline has names that need sanitising; the ã of the pipeline name becomes one '-' in
// the maintenance pod names, as urutau's maintenance.WorkerName replaces runes, not bytes.
const sanitisedInline = `
pipeline: Loja_São
source:
  kind: mysql
  serverId: "7"
sink:
  type: iceberg+rest
  namespace: raw
  maintenance:
    enabled: true
tables:
- source: shop.orders
  target: raw.Orders
  primaryKey: [id]
  workers:
    max: 4
- source: shop.lives
  target: 9lives
  primaryKey: [id]
- source: analytics.clv
  target: analytics.customer_lifetime_value_by_region_and_quarter
  primaryKey: [region, quarter]
  workers:
    max: 2
`

func withSecrets(s urutauv1alpha1.Secrets) func(*urutauv1alpha1.CDCPipelineSpec) {
	return func(sp *urutauv1alpha1.CDCPipelineSpec) { sp.Secrets = s }
}

var shopSecrets = withSecrets(urutauv1alpha1.Secrets{Source: "shop-mysql", Catalog: "shop-catalog"})

type renderCase struct {
	name     string
	p        func(testing.TB) *urutauv1alpha1.CDCPipeline
	settings Settings
}

var testFence = Fence{Image: "ghcr.io/urutau-io/urutau-fleet-hub:v0.2.0", TTL: 20 * time.Second, Grace: 10 * time.Second}

var kedaSettings = Settings{DefaultImage: testImage, KEDAPrometheusAddress: "http://prometheus.monitoring:9090"}

func renderCases() []renderCase {
	return []renderCase{
		{
			name:     "mysql-minimal",
			p:        func(t testing.TB) *urutauv1alpha1.CDCPipeline { return pipeline(t, "shop", mysqlInline, shopSecrets) },
			settings: Settings{DefaultImage: testImage},
		},
		{
			// --coordinator-network-policy: the same workload plus the coordinator's NetworkPolicy.
			name:     "network-policy",
			p:        func(t testing.TB) *urutauv1alpha1.CDCPipeline { return pipeline(t, "shop", mysqlInline, shopSecrets) },
			settings: Settings{DefaultImage: testImage, NetworkPolicy: true},
		},
		{
			name: "postgres-ssh-discover",
			p: func(t testing.TB) *urutauv1alpha1.CDCPipeline {
				// The postgres block connects by itself: no source Secret (its uri would fill
				// source.uri, which urutau refuses next to the block).
				return pipeline(t, "billing", postgresSSHDiscoverInline,
					withSecrets(urutauv1alpha1.Secrets{Catalog: "lake", SSH: "billing-ssh"}))
			},
			settings: Settings{DefaultImage: testImage},
		},
		{
			name: "postgres-ssh-snapshot",
			p: func(t testing.TB) *urutauv1alpha1.CDCPipeline {
				return pipeline(t, "billing", postgresSSHSnapshotInline,
					withSecrets(urutauv1alpha1.Secrets{Catalog: "lake", SSH: "billing-ssh"}),
					func(s *urutauv1alpha1.CDCPipelineSpec) {
						s.Worker = urutauv1alpha1.WorkerSpec{CPU: "250m", CPUOverhead: "100m", Memory: "512Mi", MemoryOverhead: "256Mi"}
					})
			},
			settings: Settings{DefaultImage: testImage},
		},
		{
			name: "tls-eventlog",
			p: func(t testing.TB) *urutauv1alpha1.CDCPipeline {
				return pipeline(t, "shop", mysqlInline, func(s *urutauv1alpha1.CDCPipelineSpec) {
					s.Image = "registry.example.com/urutau:v1.9.0"
					s.LogLevel = "debug"
					s.Secrets = urutauv1alpha1.Secrets{
						Source: "shop-mysql", Catalog: "shop-catalog",
						KafkaTLS: "shop-kafka-tls", SchemaRegistryTLS: "shop-sr-tls",
					}
					s.Coordinator = urutauv1alpha1.CoordinatorSpec{
						Snapshot: urutauv1alpha1.SnapshotSpec{ChunkSize: 50000, MaxParallelChunks: 4},
						Supervision: urutauv1alpha1.SupervisionSpec{
							AckTimeout: "45s", MaxResets: 9, Window: "10m",
							MaxConsecutiveCrashes: 5, WorkerDeliveryTimeout: "2m",
						},
						MetricsAddr: "0.0.0.0:9100",
						CPU:         "2",
						Memory:      "4Gi",
						TLS:         &urutauv1alpha1.TLSSpec{ServerSecret: "shop-cp-server", ClientSecret: "shop-cp-client"},
						Eventlog: &urutauv1alpha1.EventlogSpec{
							Bucket: "urutau-events", RootPrefix: "/prod/shop/", Endpoint: "https://minio.example.com",
							Secret: "shop-eventlog",
						},
					}
					s.Worker.MetricsAddr = ":9091"
				})
			},
			settings: Settings{DefaultImage: testImage},
		},
		{
			name:     "keda-on",
			p:        func(t testing.TB) *urutauv1alpha1.CDCPipeline { return pipeline(t, "shop", kedaInline, shopSecrets) },
			settings: kedaSettings,
		},
		{
			name:     "keda-off",
			p:        func(t testing.TB) *urutauv1alpha1.CDCPipeline { return pipeline(t, "shop", kedaInline, shopSecrets) },
			settings: Settings{DefaultImage: testImage},
		},
		{
			name: "override",
			p: func(t testing.TB) *urutauv1alpha1.CDCPipeline {
				return pipeline(t, "shop", mysqlInline, shopSecrets, func(s *urutauv1alpha1.CDCPipelineSpec) {
					s.Image = "ghcr.io/urutau-io/urutau:v1.8.0"
					s.LogLevel = "info"
					s.Coordinator.CPU = "1"
					s.Worker.Memory = "2Gi"
				})
			},
			settings: Settings{
				DefaultImage: testImage,
				Override: &urutauv1alpha1.ClusterOverride{
					Clusters:    []string{"us-1"},
					Image:       "us-mirror.example.com/urutau:v1.8.0",
					LogLevel:    "warn",
					Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "1500m", Memory: "3Gi"},
					Worker:      &urutauv1alpha1.ResourceOverride{CPU: "2"},
				},
			},
		},
		{
			// A fenced placement: the fence's init container, command, volume and Lease rule.
			name:     "fenced",
			p:        func(t testing.TB) *urutauv1alpha1.CDCPipeline { return pipeline(t, "shop", mysqlInline, shopSecrets) },
			settings: Settings{DefaultImage: testImage, Fence: &testFence},
		},
		{
			name: "sanitised-names",
			p: func(t testing.TB) *urutauv1alpha1.CDCPipeline {
				return pipeline(t, "shop-db", sanitisedInline, shopSecrets)
			},
			settings: Settings{DefaultImage: testImage, KEDAPrometheusAddress: "http://prometheus:9090", KEDAThreshold: "50"},
		},
	}
}

// TestRenderGolden compares every rendered object, in apply order, with testdata/<case>.golden.yaml.
// Regenerate with: go test ./internal/coordinator -update
func TestRenderGolden(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Render(tc.p(t), tc.settings)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			got := goldenYAML(t, w)
			path := filepath.Join("testdata", tc.name+".golden.yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s differs (-want +got), run with -update if intended:\n%s", path, diff)
			}
		})
	}
}

// objects lists the rendered objects in apply order, then the ScaledObjects.
func objects(w *Workload) []any {
	objs := []any{
		w.CoordinatorServiceAccount, w.WorkerServiceAccount, w.PodDisruptionBudget, w.Role,
		w.RoleBinding, w.Service, w.ConfigMap, w.StatefulSet,
	}
	for _, so := range w.ScaledObjects {
		objs = append(objs, so)
	}
	if w.NetworkPolicy != nil {
		objs = append(objs, w.NetworkPolicy)
	}
	return objs
}

func goldenYAML(t testing.TB, w *Workload) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# Generated by TestRenderGolden: go test ./internal/coordinator -update\n")
	fmt.Fprintf(&b, "# specHash: %s\n", w.SpecHash)
	var secrets []string
	for _, s := range w.RequiredSecrets {
		secrets = append(secrets, s.Name+"/"+s.Key)
	}
	fmt.Fprintf(&b, "# requiredSecrets: [%s]\n", strings.Join(secrets, ", "))
	for _, o := range objects(w) {
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatalf("marshal %T: %v", o, err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}
