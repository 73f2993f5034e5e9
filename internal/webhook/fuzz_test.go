package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// FuzzValidate feeds the validator arbitrary objects. Each input is the JSON of a new and of an
// old CDCPipeline; bytes that are not a CDCPipeline become the inline definition of a valid one, so
// every input reaches the parser. The validator must never panic, never change its inputs, and
// answer either nothing or a 422 whose causes all carry a field path.
//
// The seed corpus is every golden case of cdcpipeline_webhook_test.go. Run it with
//
//	go test ./internal/webhook -run '^$' -fuzz FuzzValidate -fuzztime 2m
func FuzzValidate(f *testing.F) {
	for _, tc := range append(badCases(), goodCases()...) {
		old := tc.old
		if old == nil {
			old = pipeline()
		}
		f.Add(mustJSON(tc.obj), mustJSON(old))
		if tc.obj.Spec.Definition.Inline != nil {
			f.Add(tc.obj.Spec.Definition.Inline.Raw, mustJSON(old))
		}
	}
	f.Fuzz(func(t *testing.T, newJSON, oldJSON []byte) {
		newObj, oldObj := fromFuzz(newJSON), fromFuzz(oldJSON)
		// The hub holds another pipeline with the old object's spec, and the old object itself.
		other := oldObj.DeepCopy()
		other.Namespace, other.Name = "elsewhere", "other"
		r := &listReader{items: []urutauv1alpha1.CDCPipeline{*other, *oldObj}}
		v := &CDCPipelineValidator{Client: r}

		newBefore, oldBefore := newObj.DeepCopy(), oldObj.DeepCopy()
		_, cerr := v.ValidateCreate(t.Context(), newObj)
		_, uerr := v.ValidateUpdate(t.Context(), oldObj, newObj)
		ValidateSpec(newObj)
		ValidateUpdate(oldObj, newObj)
		ValidateUpdate(newObj, oldObj)
		validateUniqueness(newObj, r.items)

		if !apiequality.Semantic.DeepEqual(newBefore, newObj) || !apiequality.Semantic.DeepEqual(oldBefore, oldObj) {
			t.Fatal("the validator changed its input")
		}
		for _, err := range []error{cerr, uerr} {
			if err == nil {
				continue
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a StatusError: %v", err, err)
			}
			st := se.Status()
			if st.Code != http.StatusUnprocessableEntity || st.Details == nil || len(st.Details.Causes) == 0 {
				t.Fatalf("got %d %s without causes: %v", st.Code, st.Reason, err)
			}
			for _, c := range st.Details.Causes {
				if !strings.HasPrefix(c.Field, "spec.") && c.Field != "metadata.name" {
					t.Fatalf("cause without a field path: %+v", c)
				}
			}
		}
	})
}

func mustJSON(p *urutauv1alpha1.CDCPipeline) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}

// fromFuzz decodes a CDCPipeline, or makes b the inline definition of a valid one.
func fromFuzz(b []byte) *urutauv1alpha1.CDCPipeline {
	var p urutauv1alpha1.CDCPipeline
	if err := json.Unmarshal(b, &p); err == nil && p.Kind == "CDCPipeline" {
		return &p
	}
	return pipeline(func(p *urutauv1alpha1.CDCPipeline) {
		p.Spec.Definition.Inline = &runtime.RawExtension{Raw: append([]byte(nil), b...)}
	})
}
