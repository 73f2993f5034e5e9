package memberwork

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
)

// failingTransport fails every request with err, after "sending" it.
type failingTransport struct{ err error }

func (t failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, t.err }

// A write that got no answer may still be committed by the member: until members.WriteLanding after
// it was sent, a cleanup that finds the member empty does not count it empty. A refused
// connection sent nothing; a read changes nothing.
func TestLateWritesAreFenced(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		err    error
		fenced bool
	}{
		{"a write that timed out", http.MethodPost, context.DeadlineExceeded, true},
		{"an apply whose connection was reset", http.MethodPatch, syscall.ECONNRESET, true},
		{"a write refused at connect", http.MethodPatch, &netOpError{syscall.ECONNREFUSED}, false},
		{"a read that timed out", http.MethodGet, context.DeadlineExceeded, false},
		{"a write that was answered", http.MethodPatch, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &members.Liveness{}
			cfg := &rest.Config{Host: "https://m"}
			if err := l.Track(cfg); err != nil {
				t.Fatal(err)
			}
			var transport http.RoundTripper = failingTransport{tc.err}
			if tc.err == nil {
				transport = answering{}
			}
			rt := cfg.WrapTransport(transport)
			req, _ := http.NewRequest(tc.method, "https://m/apis/apps/v1/namespaces/x/statefulsets/p-coordinator", nil)
			sent := time.Now()
			_, _ = rt.RoundTrip(req)
			until, fenced := l.WriteMayLand("https://m", time.Now())
			if fenced != tc.fenced {
				t.Fatalf("writeMayLand = %v, want %v", fenced, tc.fenced)
			}
			empty := Departed{State: lease.Empty}
			got := fenceLateWrites(empty, "m", l, "https://m", time.Now())
			if (got.State == lease.Holding) != tc.fenced {
				t.Fatalf("a member found empty counts as %v, fenced %v", got.State, tc.fenced)
			}
			if !tc.fenced {
				return
			}
			if until.Before(sent.Add(members.WriteLanding)) {
				t.Errorf("fenced until %s, want at least %s after the write was sent", until, members.WriteLanding)
			}
			if after := fenceLateWrites(empty, "m", l, "https://m", until); after.State != lease.Empty {
				t.Errorf("still fenced at %s", until)
			}
			if holding := fenceLateWrites(Departed{State: lease.Unreachable}, "m", l, "https://m", time.Now()); holding.State != lease.Unreachable {
				t.Errorf("an unreachable member changed state: %v", holding.State)
			}
		})
	}
}

type answering struct{}

func (answering) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// netOpError wraps a syscall error as the dialer does.
type netOpError struct{ err error }

func (e *netOpError) Error() string { return "dial tcp: " + e.err.Error() }
func (e *netOpError) Unwrap() error { return e.err }

// A StatefulSet deleted by a cleanup pass (scaled to zero, and that seen by its controller) still
// counts as a reader in that pass: the next pass counts its pods.
func TestStatefulSetDeletedThisPassStillCounts(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "p-coordinator", UID: "sts-1", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0)}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 2}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sts).Build()
	list := &appsv1.StatefulSetList{}
	if err := c.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	var res CleanupResult
	if err := deleteListed(t.Context(), c, list, "cdc", &res, DefaultControllerPatience); err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 1 || res.readers != 1 || res.state() != lease.Holding {
		t.Fatalf("after deleting the StatefulSet: deleted %d, readers %d, state %v; want 1, 1, holding", res.Deleted, res.readers, res.state())
	}
}
