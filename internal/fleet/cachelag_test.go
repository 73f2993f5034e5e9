package fleet

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

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
			req, err := serviceRequest(corev1ac.Service("p-coordinator", "cdc"))
			if err != nil {
				t.Fatal(err)
			}
			req.cacheMayLag = tc.cacheMayLag
			req.guard = func(_ string, existing client.Object) error {
				if existing.GetLabels()["team"] != "" {
					return refused
				}
				return nil
			}
			req.beforeWrite = func(context.Context) error { return wouldWrite }
			a := &applier{}
			if tc.ours {
				// What apply remembers of its own write: these bytes, answered with this version.
				a.remember("member-a", req, sha256.Sum256(req.desiredJSON), "7")
			}
			wrote, err := a.apply(t.Context(), cached, live, nil, "member-a", "urutau-operator@member-a", req)
			if wrote || !errors.Is(err, tc.want) {
				t.Errorf("apply = %v, %v; want %v", wrote, err, tc.want)
			}
			if live.gets != tc.wantLiveReads {
				t.Errorf("%d member reads, want %d", live.gets, tc.wantLiveReads)
			}
		})
	}
}

// A member's cache is suspect for memberCacheRecovery after the member last left a request
// unanswered, and only then.
func TestLivenessCacheMayLag(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	l := &Liveness{}
	l.sent("a", t0)
	l.returned("a", true, t0)
	if l.cacheMayLag("a", t0) {
		t.Error("a member that always answered: cache suspect")
	}
	l.sent("a", t0)
	l.returned("a", false, t0.Add(time.Second))
	l.sent("a", t0)
	l.returned("a", true, t0.Add(2*time.Second))
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{
		{2 * time.Second, true},
		{time.Second + memberCacheRecovery - time.Millisecond, true},
		{time.Second + memberCacheRecovery, false},
	} {
		if got := l.cacheMayLag("a", t0.Add(tc.at)); got != tc.want {
			t.Errorf("at %s after an unanswered request at 1s: cacheMayLag = %v, want %v", tc.at, got, tc.want)
		}
	}
	if l.cacheMayLag("b", t0) || (*Liveness)(nil).cacheMayLag("a", t0) {
		t.Error("an unknown member or no Liveness: cache suspect")
	}
}
