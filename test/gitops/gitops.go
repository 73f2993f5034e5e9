// Package gitops checks what GitOps tools conclude from a CDCPipeline, with the tools' own rules:
//
//   - Argo CD: ArgoHealth runs the health check shipped in config/argocd (resource_customizations
//     layout) through gopher-lua, in the sandbox Argo CD gives a script from argocd-cm.
//   - Flux: FluxHealth evaluates the CEL healthCheckExprs of the example Flux Kustomizations in
//     examples/gitops/flux with the order and the observedGeneration pre-check of Flux's
//     kustomize-controller (RFC-0009).
//   - kstatus: internal/testenv.KStatus (sigs.k8s.io/cli-utils status.Compute).
//
// The tests run all three over the samples in config/argocd/.../testdata, build every overlay of
// examples/gitops and apply the results to a real API server with the CRD and the admission
// webhook. ArgoHealth and FluxHealth are exported so that the hub's integration suite can assert
// them on the real objects at each step of a rollout.
//
// Test support only: nothing outside tests imports this package.
package gitops

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// Paths relative to the repository root.
const (
	// CustomizationDir is the Argo CD resource customization of CDCPipeline.
	CustomizationDir = "config/argocd/resource_customizations/urutau.io/CDCPipeline"
	// FluxKustomizations holds the example Flux Kustomizations and their healthCheckExprs.
	FluxKustomizations = "examples/gitops/flux/kustomizations.yaml"
)

// RepoRoot is the root of this repository, found from this source file.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("cannot locate the gitops package source")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Health is an Argo CD health assessment: status is one of Healthy, Progressing, Degraded,
// Suspended, Missing, Unknown.
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Argo CD's health codes; a script returning anything else is reported as Unknown by Argo CD.
var argoHealthCodes = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

var healthScript = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), CustomizationDir, "health.lua"))
	return string(b), err
})

// ArgoHealth is the health Argo CD shows for obj with the shipped health.lua.
func ArgoHealth(obj *unstructured.Unstructured) (Health, error) {
	script, err := healthScript()
	if err != nil {
		return Health{}, err
	}
	return RunHealthLua(script, obj)
}

// RunHealthLua runs a health script the way Argo CD runs one configured in argocd-cm
// (util/lua/lua.go of argo-cd): a fresh state with only the package, base and table libraries
// (useOpenLibs is false unless configured), a one-second deadline, the object as the global obj
// with every number a Lua number, and the returned table read as {status, message}. Argo CD also
// opens a restricted os library; it is left out here, so a script that needs it fails the tests.
func RunHealthLua(script string, obj *unstructured.Unstructured) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return Health{}, fmt.Errorf("opening Lua library %q: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj.Object))
	if err := l.DoString(script); err != nil {
		return Health{}, err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("the health script returned %s, not a table", l.Get(-1).Type())
	}
	var h Health
	for key, dst := range map[string]*string{"status": &h.Status, "message": &h.Message} {
		switch v := ret.RawGetString(key).(type) {
		case lua.LString:
			*dst = string(v)
		case *lua.LNilType:
		default:
			return Health{}, fmt.Errorf("the health script returned %s %s, not a string", key, v.Type())
		}
	}
	if !argoHealthCodes[h.Status] {
		return Health{}, fmt.Errorf("the health script returned status %q, which Argo CD reports as Unknown", h.Status)
	}
	return h, nil
}

// toLua converts an unstructured value as Argo CD does: maps and slices become tables, every
// number (int64 from the API server, float64 from YAML) a Lua number.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetString(k, toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

// FluxHealthCheck is one entry of a Flux Kustomization's spec.healthCheckExprs.
type FluxHealthCheck struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Current    string `json:"current"`
	InProgress string `json:"inProgress,omitempty"`
	Failed     string `json:"failed,omitempty"`
}

// FluxKustomization is the part of a kustomize.toolkit.fluxcd.io/v1 Kustomization the tests read.
type FluxKustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Path      string `json:"path"`
		Prune     bool   `json:"prune"`
		Wait      bool   `json:"wait"`
		Timeout   string `json:"timeout"`
		DependsOn []struct {
			Name string `json:"name"`
		} `json:"dependsOn"`
		SourceRef struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"sourceRef"`
		HealthCheckExprs []FluxHealthCheck `json:"healthCheckExprs"`
	} `json:"spec"`
}

// ReadFluxKustomizations reads every Flux Kustomization of the example.
func ReadFluxKustomizations() ([]FluxKustomization, error) {
	docs, err := ReadYAMLDocuments(filepath.Join(RepoRoot(), FluxKustomizations))
	if err != nil {
		return nil, err
	}
	var out []FluxKustomization
	for _, doc := range docs {
		var k FluxKustomization
		if err := yaml.Unmarshal(doc, &k); err != nil {
			return nil, err
		}
		if k.Kind == "Kustomization" {
			out = append(out, k)
		}
	}
	return out, nil
}

// ReadYAMLDocuments splits a multi-document YAML file.
func ReadYAMLDocuments(path string) ([][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			out = append(out, doc)
		}
	}
}

var fluxCheck = sync.OnceValues(func() (*FluxEvaluator, error) {
	ks, err := ReadFluxKustomizations()
	if err != nil {
		return nil, err
	}
	for _, k := range ks {
		for _, hc := range k.Spec.HealthCheckExprs {
			if hc.APIVersion == "urutau.io/v1alpha1" && hc.Kind == "CDCPipeline" {
				return NewFluxEvaluator(hc)
			}
		}
	}
	return nil, fmt.Errorf("no healthCheckExprs entry for urutau.io/v1alpha1 CDCPipeline in %s", FluxKustomizations)
})

// FluxHealth is what Flux's kustomize-controller concludes about obj with the example's
// healthCheckExprs. An expression that fails to evaluate (for instance on an object without
// status) is returned as an error with status Unknown: Flux keeps polling until its timeout.
func FluxHealth(obj *unstructured.Unstructured) (status.Status, error) {
	e, err := fluxCheck()
	if err != nil {
		return status.UnknownStatus, err
	}
	return e.Evaluate(obj)
}

// FluxEvaluator evaluates one healthCheckExprs entry.
type FluxEvaluator struct {
	current, inProgress, failed cel.Program
}

// NewFluxEvaluator parses the expressions in the CEL environment Flux uses (fluxcd/pkg
// runtime/cel): parsed, not compiled, so the object's top-level fields are untyped variables.
func NewFluxEvaluator(hc FluxHealthCheck) (*FluxEvaluator, error) {
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		return nil, err
	}
	parse := func(name, expr string) (cel.Program, error) {
		if expr == "" {
			return nil, nil
		}
		ast, iss := env.Parse(expr)
		if iss != nil && iss.Err() != nil {
			return nil, fmt.Errorf("parsing %s: %w", name, iss.Err())
		}
		return env.Program(ast)
	}
	var e FluxEvaluator
	if hc.Current == "" {
		return nil, errors.New("healthCheckExprs: current is required")
	}
	if e.current, err = parse("current", hc.Current); err != nil {
		return nil, err
	}
	if e.inProgress, err = parse("inProgress", hc.InProgress); err != nil {
		return nil, err
	}
	if e.failed, err = parse("failed", hc.Failed); err != nil {
		return nil, err
	}
	return &e, nil
}

// Evaluate applies Flux's rules: InProgress when status.observedGeneration exists and differs from
// metadata.generation; otherwise inProgress, failed, current in that order, the first true one
// deciding; InProgress when none is true.
func (e *FluxEvaluator) Evaluate(u *unstructured.Unstructured) (status.Status, error) {
	og, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if err != nil {
		return status.UnknownStatus, err
	}
	if found && og != u.GetGeneration() {
		return status.InProgressStatus, nil
	}
	for _, step := range []struct {
		prog cel.Program
		st   status.Status
	}{
		{e.inProgress, status.InProgressStatus},
		{e.failed, status.FailedStatus},
		{e.current, status.CurrentStatus},
	} {
		if step.prog == nil {
			continue
		}
		val, _, err := step.prog.Eval(u.Object)
		if err != nil {
			return status.UnknownStatus, fmt.Errorf("evaluating the %s expression: %w", step.st, err)
		}
		b, ok := val.(types.Bool)
		if !ok {
			return status.UnknownStatus, fmt.Errorf("the %s expression returned %v, not a bool", step.st, val)
		}
		if b {
			return step.st, nil
		}
	}
	return status.InProgressStatus, nil
}

// ReadObject reads one YAML object with numbers as the API server returns them (int64), which is
// what kstatus and Flux read.
func ReadObject(path string) (*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := DecodeObjects(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("%s: want one object, found %d", path, len(objs))
	}
	return objs[0], nil
}

// DecodeObjects decodes a YAML stream into objects, numbers as int64 where they are whole.
func DecodeObjects(raw []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
}

// stripComments drops comment lines, so a document of comments only counts as empty.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
