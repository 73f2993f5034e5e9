package integration

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/tenancy"
)

// TestRenderedPodsMeetRestricted: every pod the hub's workloads run (the coordinator of each
// renderer golden case, and each worker template the coordinator starts workers from) is admitted
// by a real API server's Pod Security admission in a namespace that enforces "restricted", the
// level `hub join` labels the namespaces it opens with. A pod without the hardening is refused
// there, so the admission is really on.
func TestRenderedPodsMeetRestricted(t *testing.T) {
	c := startOne(t)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restricted",
		Labels: map[string]string{tenancy.LabelPodSecurityEnforce: tenancy.PodSecurityRestricted}}}
	if err := c.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	dryRun := func(name string, spec corev1.PodSpec) error {
		if sa := spec.ServiceAccountName; sa != "" {
			err := c.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: sa}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}, Spec: spec}
		return c.Client.Create(ctx, pod, client.DryRunAll)
	}

	// The control: a plain pod violates restricted and is refused.
	err := dryRun("plain", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}})
	if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a pod without hardening: %v, want a PodSecurity refusal (is the admission on?)", err)
	}

	goldens, err := filepath.Glob("../../internal/coordinator/testdata/*.golden.yaml")
	if err != nil || len(goldens) < 6 {
		t.Fatalf("golden files not found (%v): %v", goldens, err)
	}
	var coordinators, workers int
	for _, g := range goldens {
		for _, o := range readObjects(t, g) {
			switch o.GetKind() {
			case "StatefulSet":
				tmpl := podTemplate(t, o)
				if err := dryRun(o.GetName()+"-0", tmpl.Spec); err != nil {
					t.Errorf("%s: the coordinator pod is refused: %v", filepath.Base(g), err)
				}
				coordinators++
			case "ConfigMap":
				for key, text := range o.Object["data"].(map[string]any) {
					if !strings.HasPrefix(key, "worker-pod-template.") {
						continue
					}
					var tmpl corev1.PodTemplateSpec
					if err := yaml.UnmarshalStrict([]byte(text.(string)), &tmpl); err != nil {
						t.Fatalf("%s %s: %v", filepath.Base(g), key, err)
					}
					if err := dryRun(sanitize(key)+"-0", tmpl.Spec); err != nil {
						t.Errorf("%s: the worker pod of %s is refused: %v", filepath.Base(g), key, err)
					}
					workers++
				}
			}
		}
	}
	if coordinators < len(goldens) || workers == 0 {
		t.Errorf("checked %d coordinator and %d worker pods of %d golden cases", coordinators, workers, len(goldens))
	}
}

// podTemplate is a StatefulSet's pod template.
func podTemplate(t *testing.T, sts *unstructured.Unstructured) corev1.PodTemplateSpec {
	t.Helper()
	m, found, err := unstructured.NestedMap(sts.Object, "spec", "template")
	if err != nil || !found {
		t.Fatalf("StatefulSet %s has no pod template: %v", sts.GetName(), err)
	}
	var tmpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tmpl); err != nil {
		t.Fatal(err)
	}
	return tmpl
}
