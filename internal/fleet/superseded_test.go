package fleet

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/status"
)

// A coordinator is created only by the reconcile of the pipeline as it still is: an apply that a
// newer change overtook starts no reader.
func TestStillCurrent(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := urutauv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	read := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p", UID: "u1", Generation: 2}}
	now := func(mutate func(*urutauv1alpha1.CDCPipeline)) *urutauv1alpha1.CDCPipeline {
		p := read.DeepCopy()
		mutate(p)
		return p
	}
	for _, tc := range []struct {
		name       string
		hub        *urutauv1alpha1.CDCPipeline // nil: gone
		superseded bool
	}{
		{"unchanged", now(func(*urutauv1alpha1.CDCPipeline) {}), false},
		{"status and metadata changed", now(func(p *urutauv1alpha1.CDCPipeline) { p.Labels = map[string]string{"a": "b"} }), false},
		{"the spec changed (a new placement)", now(func(p *urutauv1alpha1.CDCPipeline) { p.Generation = 3 }), true},
		{"being deleted", now(func(p *urutauv1alpha1.CDCPipeline) {
			ts := metav1.Now()
			p.DeletionTimestamp, p.Finalizers = &ts, []string{urutauv1alpha1.Finalizer}
		}), true},
		{"re-created", now(func(p *urutauv1alpha1.CDCPipeline) { p.UID = "u2" }), true},
		{"gone", nil, true},
	} {
		b := fake.NewClientBuilder().WithScheme(scheme)
		if tc.hub != nil {
			b = b.WithObjects(tc.hub)
		}
		c := b.Build()
		r := &CoordinatorReconciler{Client: c, APIReader: c}
		err := r.stillCurrent(t.Context(), read)
		if got := errors.Is(err, errSuperseded); got != tc.superseded || (!tc.superseded && err != nil) {
			t.Errorf("%s: stillCurrent = %v, want superseded %v", tc.name, err, tc.superseded)
		}
	}
}

// A superseded apply is neither a failure nor silent: the member waits for the newer reconcile,
// which is asked for at once.
func TestSupersededApplyLooksAgain(t *testing.T) {
	asked := false
	j := &applyJob{conn: &memberConn{name: "member-c"}, crossed: func() { asked = true }}
	res := memberResult{obs: status.MemberObservation{Name: "member-c"}}
	if j.boundaryAllows(&res, errors.Join(errSuperseded)) {
		t.Fatal("a superseded apply went on")
	}
	if !asked || !res.retry || res.err != nil || res.obs.Phase != urutauv1alpha1.ClusterPending || res.eventReason != "" {
		t.Fatalf("superseded apply: looked again %v, retry %v, err %v, phase %s, event %q", asked, res.retry, res.err, res.obs.Phase, res.eventReason)
	}
}

// countingReader counts the Gets a reader serves.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A coordinator that the cache does not hold is confirmed absent with a member read only when
// the check before its creation could refuse it (the lease was not written by this reconcile):
// a first placement costs no member read besides the namespace's (bench: member reads per
// placement on create).
func TestBeforeCreateReadsTheMemberOnlyWhenAsked(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop before the write")
	for _, confirm := range []bool{false, true} {
		empty := fake.NewClientBuilder().WithScheme(scheme).Build()
		live := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme).Build()}
		req, err := statefulSetRequest(appsv1ac.StatefulSet("p-coordinator", "cdc"))
		if err != nil {
			t.Fatal(err)
		}
		asked := 0
		req.beforeCreate = func(context.Context) error { asked++; return stop }
		req.confirmAbsent = confirm
		a := &applier{}
		wrote, err := a.apply(t.Context(), empty, live, nil, "member-a", "urutau-operator@member-a", req)
		if !errors.Is(err, stop) || wrote || asked != 1 {
			t.Errorf("confirmAbsent %v: apply = %v, %v; beforeCreate asked %d times; want the check's error, no write, asked once", confirm, wrote, err, asked)
		}
		if want := map[bool]int{false: 0, true: 1}[confirm]; live.gets != want {
			t.Errorf("confirmAbsent %v: %d member reads, want %d", confirm, live.gets, want)
		}
	}
}

// A coordinator StatefulSet that only a lagging member cache still shows (it was deleted in the
// member) is written like a create: the apply would create it, so the check before a creation
// (the pipeline and the reader lease, read with quorum) is asked first. Before, a stale cache
// and a stale lease together created a coordinator with no check at all.
func TestBeforeCreateAskedForAnObjectOnlyTheCacheShows(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stale := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p-coordinator", ResourceVersion: "7"}}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stale).Build()
	stop := errors.New("stop before the write")
	for _, tc := range []struct {
		name string
		live client.Reader
		ask  int
	}{
		{"gone from the member", fake.NewClientBuilder().WithScheme(scheme).Build(), 1},
		{"still in the member", fake.NewClientBuilder().WithScheme(scheme).WithObjects(stale.DeepCopy()).Build(), 1},
	} {
		req, err := statefulSetRequest(appsv1ac.StatefulSet("p-coordinator", "cdc").WithLabels(map[string]string{"x": "y"}))
		if err != nil {
			t.Fatal(err)
		}
		asked := 0
		req.beforeCreate = func(context.Context) error { asked++; return stop }
		a := &applier{}
		wrote, err := a.apply(t.Context(), cached, tc.live, nil, "member-a", "urutau-operator@member-a", req)
		if !errors.Is(err, stop) || wrote || asked != tc.ask {
			t.Errorf("%s: apply = %v, %v; beforeCreate asked %d times, want %d and no write", tc.name, wrote, err, asked, tc.ask)
		}
	}
}
