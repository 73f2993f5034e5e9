package fleet

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/prometheus/client_golang/prometheus/testutil"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/hubindex"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/status"
)

// Which pipelines a change of an inventory entry brings back.
func TestInventoryEventHandler(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := urutauv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pipeline := func(name string, inventory ...string) client.Object {
		return &urutauv1alpha1.CDCPipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "cdc", Name: name},
			Status: urutauv1alpha1.CDCPipelineStatus{Inventory: inventory}}
	}
	// applying-on-m's first apply on m is still running: only its lease entry, written before
	// anything is applied, records it there yet.
	applying := pipeline("applying-on-m")
	applying.SetUID("uid-applying")
	rl := &urutauv1alpha1.ReaderLease{ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: "mysql-1101"},
		Spec: urutauv1alpha1.ReaderLeaseSpec{Members: []urutauv1alpha1.LeaseMember{{Cluster: "m", ClusterID: "id-m",
			PipelineUID: "uid-applying", PipelineNamespace: "cdc", PipelineName: "applying-on-m", State: urutauv1alpha1.LeaseMemberActive}}}}
	checks := &recordedChecks{}
	hub := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(pipeline("on-m", "a", "m"), pipeline("elsewhere", "a"), pipeline("nowhere"), applying, rl).
		WithStatusSubresource(&urutauv1alpha1.CDCPipeline{}).Build()
	r := &CoordinatorReconciler{Client: hub}
	r.book = memberBook{members: &r.members, applier: &r.applier, health: checks}
	handlers := &handlers{health: checks, lookup: hubindex.Lookup{Hub: hub, LeaseNamespace: "urutau-system"}, forgetMember: r.book.forget}
	h := handlers.inventory("", nil)

	entry := func(labels, annotations map[string]string, kubeconfig string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: "m", Labels: labels, Annotations: annotations},
			Data: map[string][]byte{"kubeconfig": []byte(kubeconfig)}}
	}
	old := entry(map[string]string{"region": "eu"}, nil, "v1")
	queued := func(send func(context.Context, workqueue.TypedRateLimitingInterface[mcreconcile.Request])) []string {
		t.Helper()
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[mcreconcile.Request]())
		defer q.ShutDown()
		send(context.Background(), q)
		var names []string
		for q.Len() > 0 {
			req, _ := q.Get()
			names = append(names, req.Name)
			q.Done(req)
		}
		slices.Sort(names)
		return names
	}
	update := func(n client.Object) func(context.Context, workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
		return func(ctx context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: n}, q)
		}
	}
	all := []string{"applying-on-m", "elsewhere", "nowhere", "on-m"}

	for _, tc := range []struct {
		name string
		send func(context.Context, workqueue.TypedRateLimitingInterface[mcreconcile.Request])
		want []string
	}{
		{"a member joins", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: old}, q)
		}, all},
		{"a member leaves", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: old}, q)
		}, all},
		{"relabelled", update(entry(map[string]string{"region": "us"}, nil, "v1")), all},
		{"a setting changed", update(entry(map[string]string{"region": "eu"}, map[string]string{AnnotationKEDAPrometheusAddress: "http://p"}, "v1")), all},
		{"a new kubeconfig", update(entry(map[string]string{"region": "eu"}, nil, "v2")), []string{"applying-on-m", "on-m"}},
	} {
		if got := queued(tc.send); !slices.Equal(got, tc.want) {
			t.Errorf("%s: queued %v, want %v", tc.name, got, tc.want)
		}
	}

	// A new way to reach the member has it checked at the next round.
	checks.soon = nil
	queued(update(entry(map[string]string{"region": "eu"}, nil, "v3")))
	if !slices.Equal(checks.soon, []string{"m"}) {
		t.Fatalf("after a new kubeconfig the health checks brought forward %v, want [m]", checks.soon)
	}
	// A member that leaves takes what was kept about it.
	r.members.SetHealth("m", members.Health{Checked: true, Up: true})
	work := members.WorkKey{Pipeline: types.NamespacedName{Namespace: "cdc", Name: "on-m"}, Member: "m"}
	r.book.backoff.Failed(work, status.MemberObservation{Name: "m"}, time.Now())
	memberHeld.WithLabelValues("m").Set(1)
	checks.forgot = nil
	queued(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
		h.Delete(ctx, event.TypedDeleteEvent[client.Object]{Object: old}, q)
	})
	if h := r.members.Health("m"); h.Checked {
		t.Fatal("the health of a member that left was kept")
	}
	if _, _, waiting := r.book.backoff.Waiting(work, time.Now()); waiting {
		t.Fatal("the backoff of a member that left was kept")
	}
	if n := testutil.CollectAndCount(memberHeld); n != 0 {
		t.Fatalf("%d urutau_fleet_member_held series left after the member left", n)
	}
	if !slices.Equal(checks.forgot, []string{"m"}) {
		t.Fatalf("the health checks forgot %v, want [m]", checks.forgot)
	}
}

// recordedChecks records what the handlers ask of the health checks.
type recordedChecks struct{ soon, forgot []string }

func (c *recordedChecks) CheckSoon(member string) { c.soon = append(c.soon, member) }
func (c *recordedChecks) Forget(member string)    { c.forgot = append(c.forgot, member) }
