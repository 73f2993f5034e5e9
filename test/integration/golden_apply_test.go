package integration

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestGoldenWorkloadsApply server-side applies every object of every renderer golden case to a
// real API server that has KEDA's own ScaledObject CRD: the API server's validation (built-in
// kinds, KEDA's schema) must accept them all, and must store what was sent without dropping any
// field (a dropped field would mean the renderer writes something the schema does not know).
func TestGoldenWorkloadsApply(t *testing.T) {
	c := startOne(t)
	goldens, err := filepath.Glob("../../internal/coordinator/testdata/*.golden.yaml")
	if err != nil || len(goldens) < 6 {
		t.Fatalf("golden files not found (%v): %v", goldens, err)
	}
	kinds := map[string]int{}
	for _, g := range goldens {
		t.Run(filepath.Base(g), func(t *testing.T) {
			ctx := t.Context()
			objs := readObjects(t, g)
			if len(objs) < 8 {
				t.Fatalf("%d objects in %s, want at least the 8 built-in ones", len(objs), g)
			}
			// Each case gets its own namespace so same-named objects of different cases never meet.
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sanitize(strings.TrimSuffix(filepath.Base(g), ".golden.yaml"))}}
			for _, o := range objs {
				o.SetNamespace(ns.Name)
			}
			if err := c.Client.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			for _, want := range objs {
				sent := want.DeepCopy()
				// Status is not ours to apply; the typed KEDA struct serialises an empty one.
				unstructured.RemoveNestedField(sent.Object, "status")
				if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(sent), fieldOwner, client.ForceOwnership); err != nil {
					t.Fatalf("%s %s rejected by the API server: %v", want.GetKind(), want.GetName(), err)
				}
				kinds[want.GetKind()]++
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(want.GroupVersionKind())
				if err := c.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
					t.Fatal(err)
				}
				sentBody := normalize(t, sent.Object).(map[string]any)
				gotBody := normalize(t, got.Object).(map[string]any)
				for _, p := range missing(sentBody, gotBody, "") {
					t.Errorf("%s %s: the API server did not keep %s", want.GetKind(), want.GetName(), p)
				}
			}
		})
	}
	for _, k := range []string{"ServiceAccount", "PodDisruptionBudget", "Role", "RoleBinding", "Service",
		"ConfigMap", "StatefulSet", "ScaledObject"} {
		if kinds[k] == 0 {
			t.Errorf("no golden case exercised kind %s", k)
		}
	}
}

// missing lists the paths of sent that are absent from, or different in, stored. The server may
// add fields (defaults); it must not drop or change ours.
func missing(sent, stored any, path string) []string {
	switch s := sent.(type) {
	case map[string]any:
		st, ok := stored.(map[string]any)
		if !ok {
			return []string{path}
		}
		var out []string
		for k, v := range s {
			out = append(out, missing(v, st[k], path+"."+k)...)
		}
		return out
	case []any:
		st, ok := stored.([]any)
		if !ok || len(st) != len(s) {
			return []string{path}
		}
		var out []string
		for i := range s {
			out = append(out, missing(s[i], st[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if !reflect.DeepEqual(sent, stored) {
			return []string{fmt.Sprintf("%s (sent %v, stored %v)", path, sent, stored)}
		}
		return nil
	}
}

func sanitize(s string) string {
	out := []rune{}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			out = append(out, r)
		case r >= 'A' && r <= 'Z':
			out = append(out, r-'A'+'a')
		default:
			out = append(out, '-')
		}
	}
	return string(out)
}
