package coordinator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// The single-cluster operator's CDCPipelineSpec, as urutau declares it (api/v1alpha1/types.go
// @1e5656b): field names and omitempty exactly as there, the inline definition a map. The test
// hashes a spec the way that operator does, from these types, and compares.
type (
	urutauCRSpec struct {
		Image       string             `json:"image,omitempty"`
		LogLevel    string             `json:"logLevel,omitempty"`
		Definition  urutauCRDefinition `json:"definition"`
		Secrets     urutauCRSecrets    `json:"secrets"`
		Coordinator urutauCRCoord      `json:"coordinator"`
		Worker      urutauCRWorker     `json:"worker,omitempty"`
	}
	urutauCRDefinition struct {
		Image  string         `json:"image,omitempty"`
		S3     string         `json:"s3,omitempty"`
		Inline map[string]any `json:"inline,omitempty"`
	}
	urutauCRSecrets struct {
		Source            string `json:"source"`
		Catalog           string `json:"catalog"`
		SSH               string `json:"ssh,omitempty"`
		KafkaTLS          string `json:"kafkaTLS,omitempty"`
		SchemaRegistryTLS string `json:"schemaRegistryTLS,omitempty"`
	}
	urutauCRCoord struct {
		Snapshot struct {
			ChunkSize         int `json:"chunkSize,omitempty"`
			MaxParallelChunks int `json:"maxParallelChunks,omitempty"`
		} `json:"snapshot,omitempty"`
		Supervision struct {
			AckTimeout            string `json:"ackTimeout,omitempty"`
			MaxResets             int    `json:"maxResets,omitempty"`
			Window                string `json:"window,omitempty"`
			MaxConsecutiveCrashes int    `json:"maxConsecutiveCrashes,omitempty"`
			WorkerDeliveryTimeout string `json:"workerDeliveryTimeout,omitempty"`
		} `json:"supervision,omitempty"`
		CPU         string `json:"cpu,omitempty"`
		Memory      string `json:"memory,omitempty"`
		MetricsAddr string `json:"metricsAddr,omitempty"`
		Eventlog    *struct {
			Bucket     string `json:"bucket"`
			RootPrefix string `json:"rootPrefix,omitempty"`
			Endpoint   string `json:"endpoint,omitempty"`
			Secret     string `json:"secret,omitempty"`
		} `json:"eventlog,omitempty"`
		TLS *struct {
			ServerSecret string `json:"serverSecret"`
			ClientSecret string `json:"clientSecret"`
		} `json:"tls,omitempty"`
	}
	urutauCRWorker struct {
		CPU            string `json:"cpu,omitempty"`
		CPUOverhead    string `json:"cpuOverhead,omitempty"`
		Memory         string `json:"memory,omitempty"`
		MemoryOverhead string `json:"memoryOverhead,omitempty"`
		MetricsAddr    string `json:"metricsAddr,omitempty"`
	}
)

// urutauHash is the single-cluster operator's specHash of the spec s, as that operator receives
// it: the CR's JSON decoded into its own types (unknown fields refused, so a field of ours that
// urutau lacks fails the test), then hex(sha256(sigs.k8s.io/yaml.Marshal(spec))[:8]).
func urutauHash(t *testing.T, s urutauv1alpha1.PipelineSpec) string {
	t.Helper()
	j, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var u urutauCRSpec
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		t.Fatalf("urutau's CDCPipelineSpec cannot hold %s: %v", j, err)
	}
	b, err := yaml.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func inlineOf(raw string) urutauv1alpha1.Definition {
	return urutauv1alpha1.Definition{Inline: &runtime.RawExtension{Raw: []byte(raw)}}
}

// TestSpecHashMatchesUrutau: the hash equals the single-cluster operator's for every shape of
// spec, in particular when the source or catalog Secret is unset (urutau marshals them as "",
// our API leaves them out). The golden column pins the values: a change restarts every
// coordinator of the fleet, so it must be deliberate.
func TestSpecHashMatchesUrutau(t *testing.T) {
	const inline = `{"pipeline":"shop","source":{"kind":"mysql","serverId":"1101"},"sink":{"namespace":"raw"},"tables":[{"source":"shop.orders","target":"raw.orders","primaryKey":["id"],"workers":{"number":3,"max":6}}]}`
	tests := []struct {
		name   string
		spec   urutauv1alpha1.PipelineSpec
		golden string
	}{
		{name: "no secrets at all", spec: urutauv1alpha1.PipelineSpec{Definition: inlineOf(inline)}, golden: "ba7cf70e7be6c13c"},
		{name: "source secret only", spec: urutauv1alpha1.PipelineSpec{Definition: inlineOf(inline),
			Secrets: urutauv1alpha1.Secrets{Source: "shop-mysql"}}, golden: "e1b9dba50cf704ad"},
		{name: "catalog secret only", spec: urutauv1alpha1.PipelineSpec{Definition: inlineOf(inline),
			Secrets: urutauv1alpha1.Secrets{Catalog: "lake"}}, golden: "b37e94d978672198"},
		{name: "both secrets", spec: urutauv1alpha1.PipelineSpec{Definition: inlineOf(inline),
			Secrets: urutauv1alpha1.Secrets{Source: "shop-mysql", Catalog: "lake"}}, golden: "84d9ea48ad980f0e"},
		{name: "every secret", spec: urutauv1alpha1.PipelineSpec{Definition: inlineOf(inline),
			Secrets: urutauv1alpha1.Secrets{Source: "s", Catalog: "c", SSH: "k", KafkaTLS: "kt", SchemaRegistryTLS: "st"}}, golden: "0ce29a2c1c7ccb3d"},
		{name: "empty inline", spec: urutauv1alpha1.PipelineSpec{Definition: inlineOf(`{}`), Image: "urutau:v1"}, golden: "4036d5b4c2175cce"},
		{name: "null inline", spec: urutauv1alpha1.PipelineSpec{Definition: inlineOf(`null`), Image: "urutau:v1"}, golden: "4036d5b4c2175cce"},
		{name: "inline keys in any order, floats and unicode", spec: urutauv1alpha1.PipelineSpec{Definition: inlineOf(
			`{"tables":[{"target":"raw.pedidos","primaryKey":["id"],"source":"loja.pedidos"}],"sink":{"namespace":"raw","type":"iceberg+rest"},"source":{"kind":"mysql","serverId":"007"},"pipeline":"Loja_São","x":{"ratio":0.25,"big":12345678901}}`)},
			golden: "219f5146ed47ceab"},
		{name: "everything set", spec: everythingSet(inline), golden: "eb6bede9adcd46d1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SpecHash(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if want := urutauHash(t, tc.spec); got != want {
				t.Errorf("SpecHash = %s, the single-cluster operator's = %s", got, want)
			}
			if got != tc.golden {
				t.Errorf("SpecHash = %s, golden %s", got, tc.golden)
			}
		})
	}
	// The case the hash function exists for: marshalling our own API type instead gives another
	// hash, which would restart every coordinator taken over from the single-cluster operator.
	noSecrets := tests[0].spec
	b, err := yaml.Marshal(noSecrets)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:8]) == urutauHash(t, noSecrets) {
		t.Error("our API type marshals like urutau's without Secrets: the mapping in SpecHash is no longer needed, or the test no longer tests it")
	}
}

func everythingSet(inline string) urutauv1alpha1.PipelineSpec {
	return urutauv1alpha1.PipelineSpec{
		Image:      "registry.example.com/urutau:v1.9.0",
		LogLevel:   "debug",
		Definition: inlineOf(inline),
		Secrets:    urutauv1alpha1.Secrets{Source: "s", Catalog: "c", SSH: "k", KafkaTLS: "kt", SchemaRegistryTLS: "st"},
		Coordinator: urutauv1alpha1.CoordinatorSpec{
			Snapshot: urutauv1alpha1.SnapshotSpec{ChunkSize: 50000, MaxParallelChunks: 4},
			Supervision: urutauv1alpha1.SupervisionSpec{AckTimeout: "45s", MaxResets: 9, Window: "10m",
				MaxConsecutiveCrashes: 5, WorkerDeliveryTimeout: "2m"},
			MetricsAddr: ":9100", CPU: "2", Memory: "4Gi",
			TLS:      &urutauv1alpha1.TLSSpec{ServerSecret: "srv", ClientSecret: "cli"},
			Eventlog: &urutauv1alpha1.EventlogSpec{Bucket: "b", RootPrefix: "p", Endpoint: "https://minio", Secret: "e"},
		},
		Worker: urutauv1alpha1.WorkerSpec{CPU: "1", CPUOverhead: "100m", Memory: "1Gi", MemoryOverhead: "256Mi", MetricsAddr: ":9091"},
	}
}

// TestSpecHashBytes pins the bytes hashed for a spec without Secrets: urutau's spec marshals
// secrets.source and secrets.catalog even when empty.
func TestSpecHashBytes(t *testing.T) {
	s := urutauv1alpha1.PipelineSpec{
		Image:      "urutau:v1",
		Definition: inlineOf(`{"pipeline":"p","source":{"kind":"mysql"}}`),
	}
	const marshalled = `coordinator:
  snapshot: {}
  supervision: {}
definition:
  inline:
    pipeline: p
    source:
      kind: mysql
image: urutau:v1
secrets:
  catalog: ""
  source: ""
worker: {}
`
	sum := sha256.Sum256([]byte(marshalled))
	got, err := SpecHash(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:8]); got != want {
		t.Errorf("SpecHash = %s, want %s (the hash of\n%s)", got, want, marshalled)
	}
}
