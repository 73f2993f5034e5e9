package memberwork

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/lease"
)

func TestScaledDown(t *testing.T) {
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	sts := func(replicas *int32, generation, observed int64, scaledDownAt string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec: appsv1.StatefulSetSpec{Replicas: replicas}, Status: appsv1.StatefulSetStatus{ObservedGeneration: observed}}
		if scaledDownAt != "" {
			s.Annotations = map[string]string{urutauv1alpha1.AnnotationScaledDownAt: scaledDownAt}
		}
		return s
	}
	at := func(gen int, ago time.Duration) string {
		return fmt.Sprintf("%d/%s", gen, now.Add(-ago).Format(time.RFC3339))
	}
	patience := DefaultControllerPatience
	for name, tc := range map[string]struct {
		sts  *appsv1.StatefulSet
		want bool
	}{
		"running, seen": {sts(ptr.To[int32](1), 1, 1, ""), false},
		"running, never seen (its pod may exist)":    {sts(ptr.To[int32](1), 1, 0, ""), false},
		"replicas unset (one), seen":                 {sts(nil, 1, 1, ""), false},
		"scaled to zero, not seen yet":               {sts(ptr.To[int32](0), 2, 1, at(2, 0)), false},
		"scaled to zero, seen":                       {sts(ptr.To[int32](0), 2, 2, at(2, 0)), true},
		"scaled to zero, then scaled up by a person": {sts(ptr.To[int32](2), 3, 3, at(2, 0)), false},
		"not seen a minute after the scale":          {sts(ptr.To[int32](0), 2, 1, at(2, time.Minute)), false},
		"not seen for the whole patience":            {sts(ptr.To[int32](0), 2, 1, at(2, patience)), true},
		"no controller ever, after the patience":     {sts(ptr.To[int32](0), 2, 0, at(2, patience)), true},
		"scaled up again after the patience":         {sts(ptr.To[int32](1), 3, 1, at(2, patience)), false},
		"the time of an earlier generation":          {sts(ptr.To[int32](0), 4, 1, at(2, time.Hour)), false},
		"a time that does not parse":                 {sts(ptr.To[int32](0), 2, 1, "2/soon"), false},
		"no generation":                              {sts(ptr.To[int32](0), 2, 1, now.Add(-time.Hour).Format(time.RFC3339)), false},
		"a time to come":                             {sts(ptr.To[int32](0), 2, 1, fmt.Sprintf("2/%s", time.Now().Add(time.Hour).Format(time.RFC3339))), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := scaledDown(tc.sts, now, patience); got != tc.want {
				t.Fatalf("scaledDown = %v, want %v", got, tc.want)
			}
		})
	}
}

// A coordinator StatefulSet its controller runs is scaled to zero, kept (a reader) until the
// controller has seen the scale, and deleted in the pass after: a controller whose cache of
// StatefulSets lags cannot make pod-0 again after the member was found empty.
func TestCleanupScalesTheCoordinatorToZeroBeforeDeletingIt(t *testing.T) {
	entry := urutauv1alpha1.LeaseMember{PipelineUID: "u1", PipelineName: "p", PipelineNamespace: "hub-ns", Namespace: "cdc"}
	labels := hubLabels("hub-ns", "p")
	labels[urutauv1alpha1.LabelHubPipelineUID] = "u1"
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: coordinator.CoordinatorName("p"), Labels: labels, Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1}}
	c := fake.NewClientBuilder().WithScheme(cleanScheme(t)).WithObjects(sts).WithStatusSubresource(sts).Build()
	pass := func() CleanupResult {
		t.Helper()
		res, err := CleanupMember(t.Context(), c, c, entry, DefaultControllerPatience)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	get := func() *appsv1.StatefulSet {
		t.Helper()
		got := &appsv1.StatefulSet{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(sts), got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	if res := pass(); res.state() != lease.Holding || res.Deleted != 0 || res.Scaled != 1 {
		t.Fatalf("first pass: %v, %d deleted, %d scaled; want Holding, none deleted, one scaled", res.state(), res.Deleted, res.Scaled)
	}
	got := get()
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 0 {
		t.Fatalf("replicas %v after the first pass, want 0", got.Spec.Replicas)
	}
	if _, ok := scaledDownAt(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2, Annotations: got.Annotations}}, time.Now()); !ok {
		t.Fatalf("the scale was not recorded for generation 2: %q", got.Annotations[urutauv1alpha1.AnnotationScaledDownAt])
	}
	// The API server counts the new generation (the fake client does not).
	got.Generation = 2
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if res := pass(); res.state() != lease.Holding || res.Deleted != 0 {
		t.Fatalf("a pass before the controller saw the scale: %v, %d deleted; want Holding, none deleted", res.state(), res.Deleted)
	}
	// The controller sees it.
	got = get()
	got.Status.ObservedGeneration = 2
	if err := c.Status().Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if res := pass(); res.Deleted != 1 {
		t.Fatalf("the pass after the controller saw the scale deleted %d objects, want 1", res.Deleted)
	}
	if res := pass(); res.state() != lease.Empty {
		t.Fatalf("after the deletion: %v, want Empty", res.state())
	}
}

// A StatefulSet scaled down once, then placed there again (the hub's apply takes replicas back,
// the annotation stays), is scaled down with a new time and generation: the old one would skip
// the wait for the controller at once. A member that will not have it scaled (an admission
// policy refuses or undoes the write) has it deleted as before.
func TestScaleToZero(t *testing.T) {
	old := fmt.Sprintf("3/%s", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	newSTS := func() *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p-coordinator", Generation: 3,
			Annotations: map[string]string{urutauv1alpha1.AnnotationScaledDownAt: old}},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 3}}
	}
	now := time.Now()
	// scaled scales newSTS() to zero through a fake member and returns what the member stores.
	scaled := func(t *testing.T, funcs interceptor.Funcs) *appsv1.StatefulSet {
		t.Helper()
		sts := newSTS()
		c := fake.NewClientBuilder().WithScheme(cleanScheme(t)).WithObjects(sts).WithInterceptorFuncs(funcs).Build()
		if refused, err := scaleToZero(t.Context(), c, sts.DeepCopy(), now); err != nil || refused {
			t.Fatalf("refused %v, %v", refused, err)
		}
		got := &appsv1.StatefulSet{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(sts), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Run("an earlier time is replaced", func(t *testing.T) {
		got := scaled(t, interceptor.Funcs{})
		if at := got.Annotations[urutauv1alpha1.AnnotationScaledDownAt]; at != "4/"+now.UTC().Format(time.RFC3339) {
			t.Fatalf("scaled down at %q, want generation 4 now", at)
		}
		got.Generation = 4 // as the API server counts the scale
		if scaledDown(got, now.Add(time.Second), DefaultControllerPatience) {
			t.Fatal("deleted before its controller saw the scale")
		}
	})
	t.Run("a generation a webhook added is recorded", func(t *testing.T) {
		patches := 0
		got := scaled(t, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
				if err := c.Patch(ctx, o, p, opts...); err != nil {
					return err
				}
				if patches++; patches == 1 {
					o.SetGeneration(5) // the scale and a webhook's default: two generations
				}
				return nil
			}})
		if at := got.Annotations[urutauv1alpha1.AnnotationScaledDownAt]; at != "5/"+now.UTC().Format(time.RFC3339) {
			t.Fatalf("scaled down at %q, want generation 5 now", at)
		}
	})
	for name, tc := range map[string]interceptor.Funcs{
		"forbidden": {Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "p-coordinator", errors.New("denied by policy"))
		}},
		"undone by a mutating policy": {Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			o.(*appsv1.StatefulSet).Spec.Replicas = ptr.To[int32](1)
			return nil
		}},
	} {
		t.Run(name, func(t *testing.T) {
			sts := newSTS()
			c := fake.NewClientBuilder().WithScheme(cleanScheme(t)).WithObjects(sts).WithInterceptorFuncs(tc).Build()
			if refused, err := scaleToZero(t.Context(), c, sts.DeepCopy(), now); err != nil || !refused {
				t.Fatalf("refused %v, %v; want refused", refused, err)
			}
		})
	}
}
