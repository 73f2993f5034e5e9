package ssa

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

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
		req, err := StatefulSet(appsv1ac.StatefulSet("p-coordinator", "cdc"))
		if err != nil {
			t.Fatal(err)
		}
		asked := 0
		req.BeforeCreate = func(context.Context) error { asked++; return stop }
		req.ConfirmAbsent = confirm
		a := &Applier{}
		wrote, err := a.Apply(t.Context(), empty, live, nil, "member-a", "urutau-operator@member-a", req)
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
		req, err := StatefulSet(appsv1ac.StatefulSet("p-coordinator", "cdc").WithLabels(map[string]string{"x": "y"}))
		if err != nil {
			t.Fatal(err)
		}
		asked := 0
		req.BeforeCreate = func(context.Context) error { asked++; return stop }
		a := &Applier{}
		wrote, err := a.Apply(t.Context(), cached, tc.live, nil, "member-a", "urutau-operator@member-a", req)
		if !errors.Is(err, stop) || wrote || asked != tc.ask {
			t.Errorf("%s: apply = %v, %v; beforeCreate asked %d times, want %d and no write", tc.name, wrote, err, asked, tc.ask)
		}
	}
}

// A member's cache may lag behind it for up to a minute after the member was down (client-go's
// LIST/WATCH backoff). The applier decides from the member itself where a lagging cache would
// have it refuse a pipeline for nothing, or write over someone else's object.
func TestApplierConfirmsWhatALaggingCacheShows(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	theirs := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p-coordinator", Labels: map[string]string{"team": "payments"}}}
	}
	ours := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p-coordinator", ResourceVersion: "7"}}
	}
	refused := errors.New("not this pipeline's")
	wouldWrite := errors.New("would write")
	for _, tc := range []struct {
		name          string
		cached, live  *corev1.Service // nil: absent
		cacheMayLag   bool
		want          error
		wantLiveReads int
		// ours: the cached object is the one this applier last applied, unchanged since.
		ours bool
	}{
		{"the cache holds another's object the member has since deleted: written", theirs(), nil, false, wouldWrite, 1, false},
		{"another's object in the cache and in the member: refused", theirs(), theirs(), false, refused, 1, false},
		{"a miss while the cache may lag, another's object in the member: refused", nil, theirs(), true, refused, 1, false},
		{"a miss while the cache may lag, absent in the member too: written", nil, nil, true, wouldWrite, 1, false},
		{"a miss while the cache is current: written, no member read", nil, nil, false, wouldWrite, 0, false},
		{"our applied object, still in a lagging cache, deleted in the member: written again", ours(), nil, true, wouldWrite, 1, true},
		{"our applied object in the cache and the member, while the cache may lag: no write", ours(), ours(), true, nil, 1, true},
		{"our applied object in a current cache: no write, no member read", ours(), nil, false, nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(s *corev1.Service) client.Client {
				b := fake.NewClientBuilder().WithScheme(scheme)
				if s != nil {
					b = b.WithObjects(s)
				}
				return b.Build()
			}
			cached, live := build(tc.cached), &countingReader{Reader: build(tc.live)}
			req, err := Service(corev1ac.Service("p-coordinator", "cdc"))
			if err != nil {
				t.Fatal(err)
			}
			req.CacheMayLag = tc.cacheMayLag
			req.Guard = func(_ string, existing client.Object) error {
				if existing.GetLabels()["team"] != "" {
					return refused
				}
				return nil
			}
			req.BeforeWrite = func(context.Context) error { return wouldWrite }
			a := &Applier{}
			if tc.ours {
				// What apply remembers of its own write: these bytes, answered with this version.
				a.remember(a.cacheKey("member-a", req.kind, req.key), sha256.Sum256(req.desiredJSON), "7")
			}
			wrote, err := a.Apply(t.Context(), cached, live, nil, "member-a", "urutau-operator@member-a", req)
			if wrote || !errors.Is(err, tc.want) {
				t.Errorf("apply = %v, %v; want %v", wrote, err, tc.want)
			}
			if live.gets != tc.wantLiveReads {
				t.Errorf("%d member reads, want %d", live.gets, tc.wantLiveReads)
			}
		})
	}
}

// A hand scale to zero leaves no manager behind (the Scale omits a zero), so the content hash and
// the managers alone would call the StatefulSet unchanged: keeps reads the replicas.
func TestStatefulSetRequestKeepsReplicas(t *testing.T) {
	ac := appsv1ac.StatefulSet("c", "ns").WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(1))
	r, err := StatefulSet(ac)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		replicas *int32
		want     bool
	}{{ptr.To[int32](1), true}, {ptr.To[int32](0), false}, {ptr.To[int32](2), false}, {nil, false}} {
		live := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: tc.replicas}}
		if got := r.keeps(live); got != tc.want {
			t.Errorf("replicas %v: keeps = %v, want %v", tc.replicas, got, tc.want)
		}
	}
	workers, err := StatefulSet(appsv1ac.StatefulSet("w", "ns").WithSpec(appsv1ac.StatefulSetSpec()))
	if err != nil || workers.keeps != nil {
		t.Errorf("a StatefulSet whose replicas another owns (KEDA) has keeps %v, err %v", workers.keeps != nil, err)
	}
}

// A coordinator StatefulSet the member holds at zero replicas (a cleanup scaled it down before
// deleting it, and the placement came back; or a hand scale to 0) is asked like a create before
// the apply brings it back to one: that starts a reader. Read fresh from the member at one
// replica, it is not asked.
func TestBeforeCreateAskedForAStatefulSetAtZero(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop before the write")
	for _, tc := range []struct {
		replicas int32
		ask      int
	}{{0, 1}, {1, 0}} {
		held := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p-coordinator", ResourceVersion: "7"},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(tc.replicas)}}
		member := fake.NewClientBuilder().WithScheme(scheme).WithObjects(held).Build()
		req, err := StatefulSet(appsv1ac.StatefulSet("p-coordinator", "cdc").WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(1)).
			WithLabels(map[string]string{"x": "y"}))
		if err != nil {
			t.Fatal(err)
		}
		req.CacheMayLag = true // read from the member itself: fresh
		asked := 0
		req.BeforeCreate = func(context.Context) error { asked++; return stop }
		req.BeforeWrite = func(context.Context) error { return stop } // no write here either way
		a := &Applier{}
		_, err = a.Apply(t.Context(), member, member, nil, "member-a", "urutau-operator@member-a", req)
		if asked != tc.ask {
			t.Errorf("replicas %d: beforeCreate asked %d times, want %d (apply: %v)", tc.replicas, asked, tc.ask, err)
		}
		if !errors.Is(err, stop) {
			t.Errorf("replicas %d: apply = %v, want it stopped", tc.replicas, err)
		}
	}
}
