package coordinator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// overridePath roots errors about a value that came from the member's merged override, so the
// message points at spec.overrides rather than at a spec field the user did not write.
var overridePath = field.NewPath("spec", "overrides")

// EffectiveSpec is s with the member's merged override applied: image, logLevel and the
// coordinator and worker cpu/memory. Everything is rendered from it and hashed from it. s is not
// modified.
func EffectiveSpec(s urutauv1alpha1.PipelineSpec, o *urutauv1alpha1.ClusterOverride) urutauv1alpha1.PipelineSpec {
	out := *s.DeepCopy()
	if o == nil {
		return out
	}
	if o.Image != "" {
		out.Image = o.Image
	}
	if o.LogLevel != "" {
		out.LogLevel = o.LogLevel
	}
	if c := o.Coordinator; c != nil {
		if c.CPU != "" {
			out.Coordinator.CPU = c.CPU
		}
		if c.Memory != "" {
			out.Coordinator.Memory = c.Memory
		}
	}
	if w := o.Worker; w != nil {
		if w.CPU != "" {
			out.Worker.CPU = w.CPU
		}
		if w.Memory != "" {
			out.Worker.Memory = w.Memory
		}
	}
	return out
}

// SpecHash is the urutau.io/spec-hash of a pipeline spec, computed as the single-cluster operator
// computes it (urutau internal/operator specHash): the hex of the first 8 bytes of the SHA-256 of
// sigs.k8s.io/yaml.Marshal of its spec (sorted keys, so stable, #259). It is computed over
// PipelineSpec alone, so a pipeline without an override hashes exactly as under the single-cluster
// operator, whatever its placement.
//
// The bytes must be those of urutau's own CDCPipelineSpec, whose JSON tags differ from ours in two
// places (see urutauSpec): that is why the spec goes through urutauSpec first.
func SpecHash(s urutauv1alpha1.PipelineSpec) (string, error) {
	u, err := toUrutauSpec(s)
	if err != nil {
		return "", fmt.Errorf("hashing the pipeline spec: %w", err)
	}
	b, err := yaml.Marshal(u)
	if err != nil {
		return "", fmt.Errorf("marshalling the pipeline spec for its hash: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// urutauSpec is PipelineSpec with the JSON tags of urutau's CDCPipelineSpec (api/v1alpha1/types.go
// @1e5656b), so that it marshals to the same bytes. The differences: secrets.source and
// secrets.catalog have no omitempty there, so an unset one marshals as ""; and inline is a map
// there, so an empty one ({} or null) is left out. Every other field has the same name and
// omitempty in both APIs.
type urutauSpec struct {
	Image       string                         `json:"image,omitempty"`
	LogLevel    string                         `json:"logLevel,omitempty"`
	Definition  urutauDefinition               `json:"definition"`
	Secrets     urutauSecrets                  `json:"secrets"`
	Coordinator urutauv1alpha1.CoordinatorSpec `json:"coordinator"`
	Worker      urutauv1alpha1.WorkerSpec      `json:"worker,omitempty"`
}

type urutauDefinition struct {
	Image  string                `json:"image,omitempty"`
	S3     string                `json:"s3,omitempty"`
	Inline *runtime.RawExtension `json:"inline,omitempty"`
}

type urutauSecrets struct {
	Source            string `json:"source"`
	Catalog           string `json:"catalog"`
	SSH               string `json:"ssh,omitempty"`
	KafkaTLS          string `json:"kafkaTLS,omitempty"`
	SchemaRegistryTLS string `json:"schemaRegistryTLS,omitempty"`
}

func toUrutauSpec(s urutauv1alpha1.PipelineSpec) (urutauSpec, error) {
	inline, err := inlineJSON(s.Definition.Inline)
	if err != nil {
		return urutauSpec{}, fmt.Errorf("spec.definition.inline: %w", err)
	}
	u := urutauSpec{
		Image:    s.Image,
		LogLevel: s.LogLevel,
		Definition: urutauDefinition{
			Image: s.Definition.Image,
			S3:    s.Definition.S3,
		},
		Secrets:     urutauSecrets(s.Secrets),
		Coordinator: s.Coordinator,
		Worker:      s.Worker,
	}
	if inline != nil {
		u.Definition.Inline = &runtime.RawExtension{Raw: inline}
	}
	return u, nil
}

// input is everything a render needs, validated and parsed once.
type input struct {
	p *urutauv1alpha1.CDCPipeline
	// spec is the effective spec (override applied).
	spec   urutauv1alpha1.PipelineSpec
	inline *spec.Inline
	image  string
	// fence is Settings.Fence: nil for an unfenced placement.
	fence *Fence

	coordinatorCPU, coordinatorMemory resource.Quantity
	// spec.worker's quantities (cpu and memory with the override applied); nil means unset.
	workerCPU, workerMemory, cpuOverhead, memoryOverhead *resource.Quantity
	// tables holds each table's own workers.cpu/memory, by index into inline.Tables.
	tables []tableQuantities
}

type tableQuantities struct {
	cpu, memory *resource.Quantity
}

// newInput validates p for this member and parses what the render reads. Every problem is
// reported, each with its field path.
func newInput(p *urutauv1alpha1.CDCPipeline, s Settings) (*input, field.ErrorList) {
	in := &input{p: p, spec: EffectiveSpec(p.Spec.PipelineSpec, s.Override)}
	var errs field.ErrorList
	sp := field.NewPath("spec")

	inline, defErrs := parseDefinition(in.spec.Definition, s.Parsed, sp.Child("definition"))
	errs = append(errs, defErrs...)
	if inline == nil {
		// Go on with no tables, so that every other error is reported too.
		inline = &spec.Inline{}
	}
	in.inline = inline

	in.parseQuantities(s.Override, quantityParser{errs: &errs})
	errs = append(errs, in.checkCoordinator(sp)...)

	if f := s.Fence; f != nil {
		if err := f.validate(); err != nil {
			errs = append(errs, field.Invalid(sp.Child("placement", "fenced"), true, err.Error()))
		}
		in.fence = f
	}

	in.image = in.spec.Image // the override is already in the effective spec
	if in.image == "" {
		in.image = s.DefaultImage
	}
	if in.image == "" {
		errs = append(errs, field.Required(sp.Child("image"),
			"no image: set spec.image, a per-cluster override image, or the hub's --coordinator-image"))
	}
	return in, errs
}

// parseQuantities reads the coordinator's, the workers' and each table's quantities. A value
// that came from the override is reported under spec.overrides.
func (in *input) parseQuantities(o *urutauv1alpha1.ClusterOverride, q quantityParser) {
	sp := field.NewPath("spec")
	from := func(part, name string, overridden bool) *field.Path {
		if overridden {
			return overridePath.Child(part, name)
		}
		return sp.Child(part, name)
	}
	oc := o != nil && o.Coordinator != nil
	ow := o != nil && o.Worker != nil

	in.coordinatorCPU = q.orDefault(in.spec.Coordinator.CPU, DefaultCPU, from("coordinator", "cpu", oc && o.Coordinator.CPU != ""))
	in.coordinatorMemory = q.orDefault(in.spec.Coordinator.Memory, DefaultMemory, from("coordinator", "memory", oc && o.Coordinator.Memory != ""))
	in.workerCPU = q.optional(in.spec.Worker.CPU, from("worker", "cpu", ow && o.Worker.CPU != ""))
	in.workerMemory = q.optional(in.spec.Worker.Memory, from("worker", "memory", ow && o.Worker.Memory != ""))
	in.cpuOverhead = q.optional(in.spec.Worker.CPUOverhead, sp.Child("worker", "cpuOverhead"))
	in.memoryOverhead = q.optional(in.spec.Worker.MemoryOverhead, sp.Child("worker", "memoryOverhead"))

	// The tables' own quantities; spec.Parse has checked them (and every name derived from the
	// tables), so a definition that parsed renders.
	tablesPath := spec.InlinePath.Child("tables")
	for i, t := range in.inline.Tables {
		var tq tableQuantities
		if w := t.Workers; w != nil {
			tp := tablesPath.Index(i).Child("workers")
			tq.cpu = q.optional(w.CPU, tp.Child("cpu"))
			tq.memory = q.optional(w.Memory, tp.Child("memory"))
		}
		in.tables = append(in.tables, tq)
	}
}

// checkCoordinator checks the coordinator's TLS and eventlog settings for what they need.
func (in *input) checkCoordinator(sp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if tls := in.spec.Coordinator.TLS; tls != nil {
		tp := sp.Child("coordinator", "tls")
		if tls.ServerSecret == "" {
			errs = append(errs, field.Required(tp.Child("serverSecret"), "serverSecret and clientSecret are both required"))
		}
		if tls.ClientSecret == "" {
			errs = append(errs, field.Required(tp.Child("clientSecret"), "serverSecret and clientSecret are both required"))
		}
	}
	if el := in.spec.Coordinator.Eventlog; el != nil && el.Bucket == "" {
		errs = append(errs, field.Required(sp.Child("coordinator", "eventlog", "bucket"), "the eventlog needs a bucket"))
	}
	return errs
}

// parseDefinition accepts only a non-empty inline definition: the image and s3 planners are not
// implemented (#253). parsed, when set, is that definition parsed by the caller already.
func parseDefinition(d urutauv1alpha1.Definition, parsed *spec.Inline, p *field.Path) (*spec.Inline, field.ErrorList) {
	var errs field.ErrorList
	if d.Image != "" {
		errs = append(errs, field.Forbidden(p.Child("image"), "not implemented, use inline"))
	}
	if d.S3 != "" {
		errs = append(errs, field.Forbidden(p.Child("s3"), "not implemented, use inline"))
	}
	if parsed != nil {
		return parsed, errs
	}
	raw, err := inlineJSON(d.Inline)
	if err != nil {
		return nil, append(errs, field.Invalid(p.Child("inline"), "<not shown>", err.Error()))
	}
	if raw == nil {
		if len(errs) == 0 {
			errs = append(errs, field.Required(p.Child("inline"), "definition.inline is required (image/s3 planner not implemented)"))
		}
		return nil, errs
	}
	inline, perrs := spec.Parse(raw)
	return inline, append(errs, perrs...)
}

// inlineJSON is the compact JSON of definition.inline, or nil when it is absent, null or {}.
func inlineJSON(re *runtime.RawExtension) ([]byte, error) {
	if re == nil {
		return nil, nil
	}
	// json.Marshal rather than re.Raw: it also covers an Object set in memory, and checks the JSON.
	raw, err := json.Marshal(re)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 0 {
		return nil, nil
	}
	return raw, nil
}

// quantityParser parses resource quantities, recording each failure under its field path.
type quantityParser struct {
	errs *field.ErrorList
}

func (q quantityParser) optional(v string, p *field.Path) *resource.Quantity {
	if v == "" {
		return nil
	}
	if e := spec.CheckQuantityBounds(p, v); e != nil {
		*q.errs = append(*q.errs, e)
		return nil
	}
	r, err := resource.ParseQuantity(v)
	if err != nil {
		*q.errs = append(*q.errs, field.Invalid(p, v, "is not a valid resource quantity (e.g. 500m, 2, 512Mi, 1Gi)"))
		return nil
	}
	if r.Sign() < 0 {
		*q.errs = append(*q.errs, field.Invalid(p, v, "must not be negative"))
		return nil
	}
	return &r
}

func (q quantityParser) orDefault(v, def string, p *field.Path) resource.Quantity {
	if r := q.optional(v, p); r != nil {
		return *r
	}
	return resource.MustParse(def) // def is one of our constants
}
