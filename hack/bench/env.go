package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/tenancy"
	"github.com/urutau-io/fleet/internal/testenv"
)

// makePipelines builds P pipelines in ns, pipeline i placed on `replicas` consecutive members
// starting at member i mod C, each with a MySQL server id no other pipeline of the invocation
// has. For the floor (withUID) they get a UID, as the hub's would have.
func (e *env) makePipelines(ns string, s size, members []*testenv.Cluster, replicas int, withUID bool) ([]*urutauv1alpha1.CDCPipeline, []placement) {
	var out []*urutauv1alpha1.CDCPipeline
	var want []placement
	n := min(replicas, len(members))
	for i := range s.P {
		name := fmt.Sprintf("p-%04d", i)
		p := benchPipeline(ns, name, e.serverIDs)
		e.serverIDs++
		if withUID {
			p.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
			p.Generation = 1
		}
		for k := range n {
			m := members[(i+k)%len(members)].Name
			p.Spec.Placement.Clusters = append(p.Spec.Placement.Clusters, m)
			want = append(want, placement{member: m, pipeline: name})
		}
		out = append(out, p)
	}
	return out, want
}

// benchPipeline is the pipeline the bench creates: a MySQL source read with serverID (urutau's
// dialect: a string holding a uint32), one table into an Iceberg REST catalog, no placement yet.
func benchPipeline(ns, name string, serverID int) *urutauv1alpha1.CDCPipeline {
	def := fmt.Sprintf(`{"pipeline":%q,"source":{"kind":"mysql","serverId":"%d","uri":"mysql://bench@db:3306/shop"},`+
		`"sink":{"type":"iceberg+rest","uri":"http://catalog.lake:8181/api/catalog","namespace":"raw","warehouse":"s3://lake/warehouse"},`+
		`"tables":[{"source":"shop.orders","target":"raw.orders","primaryKey":["id"]}]}`, name, serverID)
	return &urutauv1alpha1.CDCPipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: urutauv1alpha1.CDCPipelineSpec{
			PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{Inline: &k8sruntime.RawExtension{Raw: []byte(def)}},
			},
		},
	}
}

// submit creates the pipelines on the hub, 8 at a time.
func (e *env) submit(ctx context.Context, ps []*urutauv1alpha1.CDCPipeline) error {
	return e.each(ps, func(p *urutauv1alpha1.CDCPipeline) error { return e.clients["hub"].Create(ctx, p) })
}

func (e *env) clientsOf(members []*testenv.Cluster) map[string]client.Client {
	out := map[string]client.Client{}
	for _, m := range members {
		out[m.Name] = e.clients[m.Name]
	}
	return out
}

func (e *env) createNamespace(ctx context.Context, ns string, on []*testenv.Cluster) error {
	for _, c := range on {
		// Opened to the fleet, as a member's platform team does (the hub's tenancy boundary).
		err := e.clients[c.Name].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{urutauv1alpha1.LabelFleetManaged: "true", tenancy.LabelPodSecurityEnforce: tenancy.PodSecurityRestricted}}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s in %s: %w", ns, c.Name, err)
		}
	}
	return nil
}

// cleanup deletes the workload objects in ns of each member (envtest runs no namespace
// controller, so deleting the namespace would delete nothing).
func (e *env) cleanup(ctx context.Context, members []*testenv.Cluster, ns string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, m := range members {
		wg.Go(func() {
			c := e.clients[m.Name]
			for _, obj := range memberKinds() {
				err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns))
				if apierrors.IsMethodNotSupported(err) {
					err = deleteEach(ctx, c, obj, ns)
				}
				if err != nil {
					errs[i] = fmt.Errorf("cleaning %s in %s: %w", ns, m.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func deleteEach(ctx context.Context, c client.Client, obj client.Object, ns string) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind + "List"})
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range list.Items {
		if err := c.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// memberWrites adds up the members' write counters on the resources the hub writes there, keyed
// healthy members.
type degradedRun struct {
	took       time.Duration
	placements int
	err        string
}

// runWithout creates P pipelines in ns, placed as in the other runs, and times the convergence of
// their placements on every member but faulty (which the caller has made fail).
func (e *env) runWithout(ctx context.Context, o options, s size, ns string, members []*testenv.Cluster, faulty *testenv.Cluster) (degradedRun, error) {
	var run degradedRun
	pipelines, all := e.makePipelines(ns, s, members, o.replicas, false)
	var want []placement
	var healthy []*testenv.Cluster
	for _, p := range all {
		if p.member != faulty.Name {
			want = append(want, p)
		}
	}
	for _, m := range members {
		if m != faulty {
			healthy = append(healthy, m)
		}
	}
	run.placements = len(want)
	obs, err := newObserver(ctx, ns, healthy, e.hub, want, false)
	if err != nil {
		return run, err
	}
	t0 := time.Now()
	if err := e.submit(ctx, pipelines); err != nil {
		return run, err
	}
	run.took, err = obs.wait(t0, o.timeout)
	obs.stop()
	if err != nil {
		run.err = err.Error()
	}
	return run, nil
}

// openPlacement lets every hub namespace place on every member: the hub's tenancy boundary is
// closed until a PlacementPolicy opens it.
func (e *env) openPlacement(ctx context.Context) error {
	p := &urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bench-open"},
		Spec: urutauv1alpha1.PlacementPolicySpec{NamespaceSelector: &metav1.LabelSelector{}, ClusterSelector: &metav1.LabelSelector{}}}
	if err := e.clients[e.hub.Name].Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PlacementPolicy %s: %w", p.Name, err)
	}
	return nil
}
