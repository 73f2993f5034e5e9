package orphans

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// failingReader answers every list with err.
type failingReader struct {
	client.Reader
	err error
}

func (f failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return f.err
}

// The orphan scan acts only on what the member itself still holds: its cache may show objects
// deleted while the member was down, for up to a minute after it answers again.
func TestConfirmLive(t *testing.T) {
	obj := func(uid, ns string) []client.Object {
		l := map[string]string{urutauv1alpha1.LabelHubPipelineUID: uid}
		return []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-coordinator", Labels: l}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-coordinator", Labels: l}},
		}
	}
	for _, tc := range []struct {
		name       string
		member     []client.Object
		failing    bool
		want       bool
		wantCounts int
	}{
		{"the member still holds the group: acted on, counted live", obj("u1", "cdc"), false, true, 2},
		{"only the lagging cache showed it: not acted on", nil, false, false, 0},
		{"the member holds another pipeline's objects only", obj("u2", "cdc"), false, false, 0},
		{"the member holds the group in another namespace only", obj("u1", "other"), false, false, 0},
		{"the member cannot be listed: not acted on, the next scan asks again", obj("u1", "cdc"), true, false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live client.Reader = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tc.member...).Build()
			if tc.failing {
				live = failingReader{Reader: live, err: errors.New("forbidden")}
			}
			g := &Group{UID: types.UID("u1"), Namespace: "cdc", Objects: 5}
			if got := confirmLive(t.Context(), live, g); got != tc.want {
				t.Errorf("confirmLive = %v, want %v", got, tc.want)
			}
			if g.Objects != tc.wantCounts {
				t.Errorf("objects = %d, want %d", g.Objects, tc.wantCounts)
			}
		})
	}
}

// TestOrphanConfirmPerNamespace: a pipeline's objects in two namespaces of a member are two
// groups, each confirmed by two scans in a row in its own namespace, and none once an entry
// records the pipeline in that namespace.
func TestOrphanConfirmPerNamespace(t *testing.T) {
	o := &Scanner{}
	found := func(nss ...string) map[key]*Group {
		out := map[key]*Group{}
		for _, ns := range nss {
			out[key{uid: "u1", namespace: ns}] = &Group{UID: "u1", Namespace: ns, Objects: 1}
		}
		return out
	}
	namespaces := func(gs []*Group) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Namespace)
		}
		slices.Sort(out)
		return out
	}
	none := sets.New[key]()
	for i, step := range []struct {
		found []string
		known sets.Set[key]
		want  []string
	}{
		{found: []string{"cdc"}, known: none, want: nil},
		{found: []string{"cdc", "restored"}, known: none, want: []string{"cdc"}},
		{found: []string{"cdc", "restored"}, known: none, want: []string{"cdc", "restored"}},
		{found: []string{"restored"}, known: none, want: []string{"restored"}},
		// The pipeline placed in "cdc" accounts for its objects there, not for those restored
		// into another namespace of the same member.
		{found: []string{"cdc", "restored"}, known: sets.New(key{uid: "u1", namespace: "cdc"}), want: []string{"restored"}},
		{found: []string{"cdc", "restored"}, known: sets.New(key{uid: "u1", namespace: "cdc"}, key{uid: "u1", namespace: "restored"}), want: nil},
		{found: []string{"cdc"}, known: none, want: nil},
	} {
		if got := namespaces(o.confirm("a", found(step.found...), step.known)); !slices.Equal(got, step.want) {
			t.Errorf("scan %d: confirmed %v, want %v", i, got, step.want)
		}
	}
}

// TestStrayOf: a live pipeline's objects are its strays only in its own namespace, the one the
// hub places it in; the same UID label anywhere else (a restore into a renamed namespace, or
// labels copied by whoever may write there) is an orphan, reported to the platform admin, never
// recorded in the pipeline's lease, where it would hold the pipeline's moves.
func TestStrayOf(t *testing.T) {
	p := &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: "orders", UID: "u1"}}
	rec := records{live: map[types.UID]*urutauv1alpha1.CDCPipeline{"u1": p}}
	for _, tc := range []struct {
		name string
		g    Group
		want *urutauv1alpha1.CDCPipeline
	}{
		{"its own namespace", Group{UID: "u1", Namespace: "cdc"}, p},
		{"another namespace", Group{UID: "u1", Namespace: "team-b"}, nil},
		{"no live pipeline", Group{UID: "u2", Namespace: "cdc"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rec.strayOf(&tc.g); got != tc.want {
				t.Errorf("strayOf = %v, want %v", got, tc.want)
			}
		})
	}
}

// A member's scan starts at most once per interval and never while one runs, whatever state the
// scanner starts from (a scanner whose last scans are known but that runs none yet included).
func TestOrphanScanDue(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	o := &Scanner{Interval: time.Minute, last: map[string]time.Time{"b": t0}}
	if !o.dueAt("a", t0) {
		t.Fatal("a member never scanned is not due")
	}
	if o.dueAt("a", t0.Add(2*time.Minute)) {
		t.Error("a second scan started while the first runs")
	}
	o.finished("a")
	if o.dueAt("a", t0.Add(30*time.Second)) {
		t.Error("a scan started within the interval of the last")
	}
	if !o.dueAt("a", t0.Add(time.Minute)) {
		t.Error("a scan not due once the interval passed")
	}
	if o.dueAt("b", t0.Add(time.Second)) || !o.dueAt("b", t0.Add(time.Minute)) {
		t.Error("the last scan of b was not counted")
	}
}
