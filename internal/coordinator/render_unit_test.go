package coordinator

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// fieldErrors unpacks Render's error into its field errors.
func fieldErrors(t *testing.T, err error) []*field.Error {
	t.Helper()
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("error %v (%T) is not an aggregate of field errors", err, err)
	}
	var out []*field.Error
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("error %v (%T) is not a field error", e, e)
		}
		out = append(out, fe)
	}
	return out
}

func TestRenderErrors(t *testing.T) {
	type mut = func(*urutauv1alpha1.CDCPipelineSpec)
	inline := func(raw string) mut {
		return func(s *urutauv1alpha1.CDCPipelineSpec) {
			s.Definition.Inline = &runtime.RawExtension{Raw: []byte(raw)}
		}
	}
	tables := func(tablesJSON string) mut {
		return inline(`{"pipeline":"shop","source":{"kind":"mysql"},"sink":{"type":"iceberg+rest","namespace":"raw"},"tables":` + tablesJSON + `}`)
	}
	tls := func(server, client string) mut {
		return func(s *urutauv1alpha1.CDCPipelineSpec) {
			s.Coordinator.TLS = &urutauv1alpha1.TLSSpec{ServerSecret: server, ClientSecret: client}
		}
	}
	tests := []struct {
		name      string
		mutate    mut
		override  *urutauv1alpha1.ClusterOverride
		noImage   bool
		wantField string
		wantType  field.ErrorType
	}{
		{name: "coordinator cpu", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) { s.Coordinator.CPU = "2GB" }, wantField: "spec.coordinator.cpu", wantType: field.ErrorTypeInvalid},
		{name: "coordinator memory", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) { s.Coordinator.Memory = "1 Gi" }, wantField: "spec.coordinator.memory", wantType: field.ErrorTypeInvalid},
		{name: "worker cpu", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) { s.Worker.CPU = "lots" }, wantField: "spec.worker.cpu", wantType: field.ErrorTypeInvalid},
		{name: "worker cpu negative", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) { s.Worker.CPU = "-1" }, wantField: "spec.worker.cpu", wantType: field.ErrorTypeInvalid},
		{name: "worker cpuOverhead", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) { s.Worker.CPUOverhead = "1x" }, wantField: "spec.worker.cpuOverhead", wantType: field.ErrorTypeInvalid},
		{name: "worker memory", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) { s.Worker.Memory = "2GB" }, wantField: "spec.worker.memory", wantType: field.ErrorTypeInvalid},
		{name: "worker memoryOverhead", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) { s.Worker.MemoryOverhead = "256 Mi" }, wantField: "spec.worker.memoryOverhead", wantType: field.ErrorTypeInvalid},
		{name: "table workers cpu", mutate: tables(`[{"source":"s.a","target":"a","primaryKey":["id"],"workers":{"cpu":"fast"}}]`), wantField: "spec.definition.inline.tables[0].workers.cpu", wantType: field.ErrorTypeInvalid},
		{name: "table workers memory", mutate: tables(`[{"source":"s.a","target":"a","primaryKey":["id"]},{"source":"s.b","target":"b","primaryKey":["id"],"workers":{"memory":"2GB"}}]`), wantField: "spec.definition.inline.tables[1].workers.memory", wantType: field.ErrorTypeInvalid},
		{name: "table workers max too big", mutate: tables(`[{"source":"s.a","target":"a","primaryKey":["id"],"workers":{"max":` + strconv.Itoa(math.MaxInt32+1) + `}}]`), wantField: "spec.definition.inline.tables[0].workers.max", wantType: field.ErrorTypeInvalid},
		{
			name: "override coordinator cpu", override: &urutauv1alpha1.ClusterOverride{Coordinator: &urutauv1alpha1.ResourceOverride{CPU: "2GB"}},
			wantField: "spec.overrides.coordinator.cpu", wantType: field.ErrorTypeInvalid,
		},
		{
			name: "override worker memory", override: &urutauv1alpha1.ClusterOverride{Worker: &urutauv1alpha1.ResourceOverride{Memory: "2GB"}},
			wantField: "spec.overrides.worker.memory", wantType: field.ErrorTypeInvalid,
		},
		{name: "inline does not parse", mutate: inline(`{"pipeline":"shop","source":{"kind":"oracle"},"sink":{"namespace":"raw"},"tables":[{"source":"s.a","target":"a","primaryKey":["id"]}]}`), wantField: "spec.definition.inline.source.kind", wantType: field.ErrorTypeNotSupported},
		{name: "inline not JSON", mutate: inline(`pipeline: shop`), wantField: "spec.definition.inline", wantType: field.ErrorTypeInvalid},
		{name: "inline absent", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) { s.Definition.Inline = nil }, wantField: "spec.definition.inline", wantType: field.ErrorTypeRequired},
		{name: "inline empty object", mutate: inline(`{}`), wantField: "spec.definition.inline", wantType: field.ErrorTypeRequired},
		{name: "inline null", mutate: inline(`null`), wantField: "spec.definition.inline", wantType: field.ErrorTypeRequired},
		{
			name: "image definition", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) {
				s.Definition = urutauv1alpha1.Definition{Image: "planner:v1"}
			},
			wantField: "spec.definition.image", wantType: field.ErrorTypeForbidden,
		},
		{
			name: "s3 definition", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) {
				s.Definition = urutauv1alpha1.Definition{S3: "s3://plans/shop.yaml"}
			},
			wantField: "spec.definition.s3", wantType: field.ErrorTypeForbidden,
		},
		{name: "tls without server secret", mutate: tls("", "client"), wantField: "spec.coordinator.tls.serverSecret", wantType: field.ErrorTypeRequired},
		{name: "tls without client secret", mutate: tls("server", ""), wantField: "spec.coordinator.tls.clientSecret", wantType: field.ErrorTypeRequired},
		{
			name: "eventlog without bucket", mutate: func(s *urutauv1alpha1.CDCPipelineSpec) {
				s.Coordinator.Eventlog = &urutauv1alpha1.EventlogSpec{Endpoint: "https://minio"}
			},
			wantField: "spec.coordinator.eventlog.bucket", wantType: field.ErrorTypeRequired,
		},
		{name: "no image anywhere", noImage: true, wantField: "spec.image", wantType: field.ErrorTypeRequired},
		{name: "targets share a worker group", mutate: tables(`[{"source":"s.a","target":"raw.orders","primaryKey":["id"]},{"source":"s.b","target":"raw_orders","primaryKey":["id"]}]`), wantField: "spec.definition.inline.tables[1].target", wantType: field.ErrorTypeInvalid},
		{name: "target is no ConfigMap key", mutate: tables(`[{"source":"s.a","target":"raw/orders","primaryKey":["id"]}]`), wantField: "spec.definition.inline.tables[0].target", wantType: field.ErrorTypeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var muts []func(*urutauv1alpha1.CDCPipelineSpec)
			if tt.mutate != nil {
				muts = append(muts, tt.mutate)
			}
			p := pipeline(t, "shop", mysqlInline, muts...)
			s := Settings{DefaultImage: testImage, Override: tt.override}
			if tt.noImage {
				s.DefaultImage = ""
			}
			w, err := Render(p, s)
			if err == nil {
				t.Fatalf("Render succeeded, want an error on %s", tt.wantField)
			}
			if w != nil {
				t.Errorf("Render returned a workload with its error")
			}
			fes := fieldErrors(t, err)
			if len(fes) != 1 || fes[0].Field != tt.wantField || fes[0].Type != tt.wantType {
				t.Fatalf("errors = %v, want one %s on %s", err, tt.wantType, tt.wantField)
			}
			if !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("message %q does not name %s", err, tt.wantField)
			}
		})
	}
}

func TestRenderReportsAllErrors(t *testing.T) {
	p := pipeline(t, "shop", mysqlInline, func(s *urutauv1alpha1.CDCPipelineSpec) {
		s.Coordinator.CPU = "x"
		s.Worker.Memory = "y"
		s.Coordinator.TLS = &urutauv1alpha1.TLSSpec{}
	})
	_, err := Render(p, Settings{DefaultImage: testImage})
	var got []string
	for _, fe := range fieldErrors(t, err) {
		got = append(got, fe.Field)
	}
	want := "spec.coordinator.cpu spec.worker.memory spec.coordinator.tls.serverSecret spec.coordinator.tls.clientSecret"
	if strings.Join(got, " ") != want {
		t.Errorf("fields = %v, want %s", got, want)
	}
}

func TestRenderNilPipeline(t *testing.T) {
	if _, err := Render(nil, Settings{DefaultImage: testImage}); err == nil {
		t.Error("Render(nil) succeeded")
	}
}

func TestSpecHash(t *testing.T) {
	base := func(t testing.TB) *urutauv1alpha1.CDCPipeline { return pipeline(t, "shop", mysqlInline, shopSecrets) }
	hash := func(p *urutauv1alpha1.CDCPipeline, s Settings) string {
		t.Helper()
		w, err := Render(p, s)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		if w.StatefulSet.Spec.Template.Annotations[urutauv1alpha1.AnnotationSpecHash] != w.SpecHash {
			t.Fatalf("pod template annotation differs from SpecHash %q", w.SpecHash)
		}
		return w.SpecHash
	}
	s := Settings{DefaultImage: testImage}
	h := hash(base(t), s)

	t.Run("stable", func(t *testing.T) {
		if got := hash(base(t), s); got != h {
			t.Errorf("hash of the same input = %s then %s", h, got)
		}
		if len(h) != 16 {
			t.Errorf("hash %q is not 16 hex characters", h)
		}
	})
	t.Run("independent of inline key order", func(t *testing.T) {
		p := base(t)
		p.Spec.Definition.Inline = &runtime.RawExtension{Raw: []byte(
			`{"tables":[{"primaryKey":["id"],"target":"raw.orders","source":"shop.orders"}],"source":{"serverId":"1001","kind":"mysql"},"sink":{"warehouse":"s3://lake/warehouse","namespace":"raw","type":"iceberg+rest"},"pipeline":"shop"}`)}
		if got := hash(p, s); got != h {
			t.Errorf("reordered inline hashes %s, want %s", got, h)
		}
	})
	t.Run("changes with a spec field", func(t *testing.T) {
		for name, mutate := range map[string]func(*urutauv1alpha1.CDCPipelineSpec){
			"logLevel":    func(s *urutauv1alpha1.CDCPipelineSpec) { s.LogLevel = "debug" },
			"worker cpu":  func(s *urutauv1alpha1.CDCPipelineSpec) { s.Worker.CPU = "1" },
			"secret name": func(s *urutauv1alpha1.CDCPipelineSpec) { s.Secrets.Source = "other" },
			"inline": func(s *urutauv1alpha1.CDCPipelineSpec) {
				s.Definition.Inline = &runtime.RawExtension{Raw: bytes.Replace(s.Definition.Inline.Raw, []byte("1001"), []byte("1002"), 1)}
			},
		} {
			p := base(t)
			mutate(&p.Spec)
			if got := hash(p, s); got == h {
				t.Errorf("%s: hash did not change", name)
			}
		}
	})
	t.Run("ignores placement and other members' overrides", func(t *testing.T) {
		p := base(t)
		p.Spec.Placement = urutauv1alpha1.Placement{Clusters: []string{"ap-1"}}
		p.Spec.Overrides = []urutauv1alpha1.ClusterOverride{{Clusters: []string{"us-1"}, Image: "mirror/urutau:v1"}}
		if got := hash(p, s); got != h {
			t.Errorf("hash with placement/overrides = %s, want %s", got, h)
		}
		if got, _ := SpecHash(p.Spec.PipelineSpec); got != h {
			t.Errorf("SpecHash(PipelineSpec) = %s, want the rendered %s", got, h)
		}
	})
	t.Run("follows this member's override", func(t *testing.T) {
		o := &urutauv1alpha1.ClusterOverride{Clusters: []string{"us-1"}, Image: "mirror/urutau:v1"}
		got := hash(base(t), Settings{DefaultImage: testImage, Override: o})
		if got == h {
			t.Error("an override image did not change the hash")
		}
		want, _ := SpecHash(EffectiveSpec(base(t).Spec.PipelineSpec, o))
		if got != want {
			t.Errorf("hash = %s, want SpecHash(EffectiveSpec) = %s", got, want)
		}
		// An empty override changes nothing.
		if got := hash(base(t), Settings{DefaultImage: testImage, Override: &urutauv1alpha1.ClusterOverride{}}); got != h {
			t.Errorf("empty override: hash = %s, want %s", got, h)
		}
	})
	t.Run("ignores the hub's default image", func(t *testing.T) {
		if got := hash(base(t), Settings{DefaultImage: "other:v2"}); got != h {
			t.Errorf("hash = %s, want %s", got, h)
		}
	})
}

// TestRenderDoesNotMutate: the hub renders from objects in its informer cache.
func TestRenderDoesNotMutate(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p(t)
			p.Spec.Overrides = []urutauv1alpha1.ClusterOverride{{Clusters: []string{"us-1"}, LogLevel: "warn"}}
			before := p.DeepCopy()
			var overrideBefore *urutauv1alpha1.ClusterOverride
			if tc.settings.Override != nil {
				overrideBefore = tc.settings.Override.DeepCopy()
			}
			if _, err := Render(p, tc.settings); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(before, p) {
				t.Error("Render modified the CDCPipeline")
			}
			if !apiequality.Semantic.DeepEqual(overrideBefore, tc.settings.Override) {
				t.Error("Render modified Settings.Override")
			}
		})
	}
	// Nor on the error path.
	p := pipeline(t, "shop", mysqlInline, func(s *urutauv1alpha1.CDCPipelineSpec) { s.Coordinator.CPU = "bad" })
	before := p.DeepCopy()
	if _, err := Render(p, Settings{DefaultImage: testImage}); err == nil {
		t.Fatal("want an error")
	}
	if !apiequality.Semantic.DeepEqual(before, p) {
		t.Error("Render modified the CDCPipeline on error")
	}
}

// TestRenderParsedOnce: a definition the caller parsed renders exactly as the raw one, and is
// what Render reads (the hub parses a 128 KiB definition once per reconcile, not once per member),
// and Render leaves it as it was.
func TestRenderParsedOnce(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p(t)
			parsed, errs := spec.Parse(p.Spec.Definition.Inline.Raw)
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			before, _ := spec.Parse(p.Spec.Definition.Inline.Raw)
			with := tc.settings
			with.Parsed = parsed
			w1, err1 := Render(p, tc.settings)
			w2, err2 := Render(p, with)
			if err1 != nil || err2 != nil {
				t.Fatalf("%v %v", err1, err2)
			}
			if !bytes.Equal(goldenYAML(t, w1), goldenYAML(t, w2)) {
				t.Error("rendering a parsed definition differs from rendering the raw one")
			}
			if !apiequality.Semantic.DeepEqual(before, parsed) {
				t.Error("Render modified the parsed definition")
			}
		})
	}
	// What Render reads is the parsed definition, not the raw one again.
	p := pipeline(t, "shop", mysqlInline)
	parsed, _ := spec.Parse(p.Spec.Definition.Inline.Raw)
	parsed.Tables = append(parsed.Tables, spec.Table{Source: "shop.refunds", Target: "raw.refunds", PrimaryKey: []string{"id"}})
	w, err := Render(p, Settings{DefaultImage: testImage, Parsed: parsed})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(grantedNames(w), ","), WorkerGroupPrefix(parsed.Pipeline, "raw.refunds")) {
		t.Errorf("the Role does not grant the parsed definition's table: %v", grantedNames(w))
	}
}

// grantedNames are the resourceNames of the Role's rules.
func grantedNames(w *Workload) []string {
	var out []string
	for _, r := range w.Role.Rules {
		out = append(out, r.ResourceNames...)
	}
	return out
}

func TestRenderDeterministic(t *testing.T) {
	for _, tc := range renderCases() {
		w1, err1 := Render(tc.p(t), tc.settings)
		w2, err2 := Render(tc.p(t), tc.settings)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", tc.name, err1, err2)
		}
		if !bytes.Equal(goldenYAML(t, w1), goldenYAML(t, w2)) {
			t.Errorf("%s: two renders differ", tc.name)
		}
	}
}

// TestLabels: fleet labels on every object's metadata; selectors, the coordinator pod template and
// the worker pod templates carry exactly the single-cluster labels.
func TestLabels(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p(t)
			w, err := Render(p, tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			sel := SelectorLabels(p.Name)
			wantObj := maps.Clone(sel)
			maps.Copy(wantObj, FleetLabels(p))
			if len(wantObj) != 6 || wantObj[urutauv1alpha1.LabelHubPipelineUID] != string(testUID) {
				t.Fatalf("object labels = %v", wantObj)
			}

			metas := map[string]map[string]string{
				"coordinator ServiceAccount": w.CoordinatorServiceAccount.Labels,
				"worker ServiceAccount":      w.WorkerServiceAccount.Labels,
				"PodDisruptionBudget":        w.PodDisruptionBudget.Labels,
				"Role":                       w.Role.Labels,
				"RoleBinding":                w.RoleBinding.Labels,
				"Service":                    w.Service.Labels,
				"ConfigMap":                  w.ConfigMap.Labels,
				"StatefulSet":                w.StatefulSet.Labels,
			}
			for _, so := range w.ScaledObjects {
				metas["ScaledObject "+so.Name] = so.Labels
			}
			for what, got := range metas {
				if !maps.Equal(got, wantObj) {
					t.Errorf("%s labels = %v, want %v", what, got, wantObj)
				}
			}

			exact := map[string]map[string]string{
				"StatefulSet selector":    w.StatefulSet.Spec.Selector.MatchLabels,
				"coordinator pod labels":  w.StatefulSet.Spec.Template.Labels,
				"Service selector":        w.Service.Spec.Selector,
				"PodDisruptionBudget sel": w.PodDisruptionBudget.Spec.Selector.MatchLabels,
			}
			for what, got := range exact {
				if !maps.Equal(got, sel) {
					t.Errorf("%s = %v, want exactly %v", what, got, sel)
				}
			}

			for key, value := range w.ConfigMap.Data {
				if key == PipelineFileKey {
					continue
				}
				target := strings.TrimSuffix(strings.TrimPrefix(key, "worker-pod-template."), ".yaml")
				if target == spec.DefaultWorkerTemplateTarget {
					// The generic template of a discovering source is for no table in
					// particular: its label is empty, as the single-cluster operator renders it.
					target = ""
				}
				var tmpl corev1.PodTemplateSpec
				// Strict: the coordinator must be able to read every field we write.
				if err := yaml.UnmarshalStrict([]byte(value), &tmpl); err != nil {
					t.Fatalf("%s is not a PodTemplateSpec: %v", key, err)
				}
				want := map[string]string{
					urutauv1alpha1.LabelApp:      AppWorker,
					urutauv1alpha1.LabelPipeline: p.Name,
					LabelTable:                   target,
				}
				if !maps.Equal(tmpl.Labels, want) {
					t.Errorf("%s labels = %v, want exactly %v", key, tmpl.Labels, want)
				}
				if len(tmpl.Annotations) > 0 {
					t.Errorf("%s has annotations %v", key, tmpl.Annotations)
				}
			}
		})
	}
}

// TestWorkerTemplates checks the ConfigMap keys against the tables, and the discovery template.
func TestWorkerTemplates(t *testing.T) {
	keys := func(w *Workload) []string {
		var ks []string
		for k := range w.ConfigMap.Data {
			ks = append(ks, k)
		}
		return ks
	}
	w, err := Render(pipeline(t, "shop", kedaInline, shopSecrets), Settings{DefaultImage: testImage})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{PipelineFileKey, spec.WorkerPodTemplateKey("raw.orders"), spec.WorkerPodTemplateKey("raw.customers")} {
		if _, ok := w.ConfigMap.Data[k]; !ok {
			t.Errorf("ConfigMap lacks %s (has %v)", k, keys(w))
		}
	}
	if len(w.ConfigMap.Data) != 3 {
		t.Errorf("ConfigMap keys = %v, want 3", keys(w))
	}

	w, err = Render(pipeline(t, "billing", postgresSSHDiscoverInline), Settings{DefaultImage: testImage})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.ConfigMap.Data[spec.WorkerPodTemplateKey(spec.DefaultWorkerTemplateTarget)]; !ok || len(w.ConfigMap.Data) != 2 {
		t.Errorf("discovering source: ConfigMap keys = %v, want pipeline.yaml and the _default template", keys(w))
	}
	// Without secrets.ssh there is no key to mount, whatever the source says.
	for _, v := range w.StatefulSet.Spec.Template.Spec.Volumes {
		if *v.Name == volumeSSHKey {
			t.Error("ssh-key volume without secrets.ssh")
		}
	}
}

func TestScaledObjects(t *testing.T) {
	p := pipeline(t, "shop", kedaInline, shopSecrets)
	w, err := Render(p, kedaSettings)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.ScaledObjects) != 1 {
		t.Fatalf("ScaledObjects = %d, want 1 (only raw.orders has max)", len(w.ScaledObjects))
	}
	so := w.ScaledObjects[0]
	if so.APIVersion != "keda.sh/v1alpha1" || so.Kind != "ScaledObject" {
		t.Errorf("TypeMeta = %s %s", so.APIVersion, so.Kind)
	}
	if so.Name != "shop-raw-orders" || so.Spec.ScaleTargetRef.Name != so.Name || so.Namespace != testNamespace {
		t.Errorf("name %s/%s, target %s", so.Namespace, so.Name, so.Spec.ScaleTargetRef.Name)
	}
	if *so.Spec.MinReplicaCount != 2 || *so.Spec.MaxReplicaCount != 12 {
		t.Errorf("replicas %d..%d, want 2..12", *so.Spec.MinReplicaCount, *so.Spec.MaxReplicaCount)
	}
	if got := so.Spec.Triggers[0].Metadata["threshold"]; got != DefaultKEDAThreshold {
		t.Errorf("threshold = %q, want the default %q", got, DefaultKEDAThreshold)
	}
	if len(so.OwnerReferences) > 0 {
		t.Error("ScaledObject has ownerReferences")
	}

	off, err := Render(p, Settings{DefaultImage: testImage})
	if err != nil {
		t.Fatal(err)
	}
	if len(off.ScaledObjects) != 0 {
		t.Errorf("KEDA off: %d ScaledObjects", len(off.ScaledObjects))
	}
}

// TestRoleMaintenanceRules: the maintenance pod rules are the single-cluster operator's: create
// and name-scoped delete when maintenance is on and the tables are known, nothing at all when
// the source discovers its tables (the pods cannot be named) or maintenance is off.
func TestRoleMaintenanceRules(t *testing.T) {
	podRules := func(t *testing.T, inline string) []string {
		t.Helper()
		w, err := Render(pipeline(t, "p", inline), Settings{DefaultImage: testImage})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range w.Role.Rules {
			if r.Resources[0] == "pods" && !slices.Equal(r.Verbs, []string{"get"}) {
				out = append(out, strings.Join(r.Verbs, ",")+"["+strings.Join(r.ResourceNames, ",")+"]")
			}
		}
		return out
	}
	tests := []struct {
		name, inline string
		want         []string
	}{
		{name: "maintenance on, tables listed", inline: postgresSSHSnapshotInline,
			want: []string{"create[]", "delete[billing-public-invoices-maint,billing-public-payments-maint]"}},
		{name: "maintenance on, tables discovered", inline: postgresSSHDiscoverInline},
		{name: "maintenance off", inline: mysqlInline},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podRules(t, tc.inline); !slices.Equal(got, tc.want) {
				t.Errorf("pod write rules = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSourceTLSMountsReadOnly: the kafka-tls and schema-registry-tls Secrets are mounted
// read-only, as every Secret is (#598).
func TestSourceTLSMountsReadOnly(t *testing.T) {
	p := pipeline(t, "shop", mysqlInline, withSecrets(urutauv1alpha1.Secrets{KafkaTLS: "k", SchemaRegistryTLS: "s", SSH: "ssh"}))
	w, err := Render(p, Settings{DefaultImage: testImage})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, m := range w.StatefulSet.Spec.Template.Spec.Containers[0].VolumeMounts {
		switch *m.Name {
		case volumeKafkaTLS, volumeSchemaRegistryTLS:
			seen++
			if m.ReadOnly == nil || !*m.ReadOnly {
				t.Errorf("%s mounted writable", *m.Name)
			}
		}
	}
	if seen != 2 {
		t.Errorf("found %d source TLS mounts, want 2", seen)
	}
}
