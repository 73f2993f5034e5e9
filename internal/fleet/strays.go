package fleet

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// Strays are readers the hub did not start where it started them: a live pipeline's objects in a
// member its lease does not name, and coordinator pods no StatefulSet controls. The orphan scan
// finds them (orphans.go); this file acts on them.

// recordStray adds to p's ReaderLease an Active entry for member m, where the scan found objects
// of p that no entry names, and has p reconciled: the entry holds p's other starts (a reader may
// run there) until p's reconcile has emptied the member, as for a member it left. A pipeline
// being deleted empties it too before its finalizer goes. It returns false, and records nothing,
// when the hub could not have placed p there (stray objects the hub cannot remove are reported
// as orphans, see placeable); true when it recorded them or will look again at the next scan.
func (r *CoordinatorReconciler) recordStray(ctx context.Context, m inventory.Member, c *members.Conn, p *urutauv1alpha1.CDCPipeline, g *orphanGroup) bool {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", m.Name, "pipeline", klogRef(p))
	id := r.members.KnownIdentity(m.Name)
	if id == "" {
		return true // the next scan, once the identity is known
	}
	switch err := r.placeable(ctx, m, c, g.namespace); {
	case isDenial(err):
		log.Info("objects of a live pipeline where the hub could not have placed it: reported as orphans, not recorded", "namespace", g.namespace, "reason", err.Error())
		return false
	case err != nil:
		log.Info("recording stray objects failed", "error", err.Error())
		return true
	}
	name := lease.Name(sourceIdentity(parseInline(p)), p.UID)
	current, err := r.leases.GetLive(ctx, name)
	if err != nil {
		log.Info("recording stray objects failed", "error", err.Error())
		return true
	}
	next := strayLease(current, name, sourceIdentity(parseInline(p)), p, urutauv1alpha1.LeaseMember{
		Cluster: m.Name, ClusterID: id, PipelineUID: p.UID, PipelineNamespace: p.Namespace, PipelineName: p.Name,
		Namespace: g.namespace, State: urutauv1alpha1.LeaseMemberActive, Since: metav1.Now().Rfc3339Copy(),
		Reason: "found by the orphan scan where the pipeline was not placed (restored objects?)",
	})
	if next == nil {
		return true
	}
	// Not through writeLease: this write's watch event must not pass for the pipeline's own echo.
	// It brings the pipeline back once the cache holds the entry; the requeue below may read the
	// lease before that, find nothing to remove, and leave the strays to the periodic look.
	if _, err := r.leases.Write(ctx, current, next); err != nil {
		log.Info("recording stray objects failed", "error", err.Error())
		return true
	}
	log.Info("stray objects of a live pipeline recorded: they are removed like a member it left", "objects", g.objects, "namespace", g.namespace)
	r.event(p, corev1.EventTypeWarning, EventStrayObjects, "Scan",
		"cluster %q holds %d object(s) of this pipeline in namespace %q, where it is not placed (restored from a backup?): a coordinator there would be a second reader; the hub removes them", m.Name, g.objects, g.namespace)
	r.requeue(client.ObjectKeyFromObject(p))
	return true
}

// placeable tells whether namespace ns of member m is open to the fleet, where the hub may remove
// what it finds: a *tenancy.Denial when not. Stray objects are recorded in p's lease only there,
// since an entry holds p's moves until the hub has emptied that member: anyone who may label
// objects in a namespace of some member that the hub may not write to would otherwise hold p's
// moves and failovers for good. Whether a PlacementPolicy allows p there is not asked: a
// coordinator restored on a member no policy names (a disaster-recovery cluster) reads the source
// all the same, and the hub stops it where it may.
func (r *CoordinatorReconciler) placeable(ctx context.Context, m inventory.Member, c *members.Conn, ns string) error {
	b := r.hubBoundary()
	memberNS := &corev1.Namespace{}
	switch err := c.Live.Get(ctx, client.ObjectKey{Name: ns}, memberNS); {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return b.CheckUnreadableNamespace(m.Name, ns, apierrors.IsForbidden(err))
	case err != nil:
		return err
	}
	return b.CheckMemberNamespace(m.Name, memberNS)
}

func isDenial(err error) bool {
	var d *tenancy.Denial
	return errors.As(err, &d)
}

// strayLease is current with entry added, or a new lease held by p with it; nil when an entry
// with entry's key is there already.
func strayLease(current *urutauv1alpha1.ReaderLease, name string, source *urutauv1alpha1.SourceIdentity, p *urutauv1alpha1.CDCPipeline, entry urutauv1alpha1.LeaseMember) *urutauv1alpha1.ReaderLease {
	next := current.DeepCopy()
	if next == nil {
		next = &urutauv1alpha1.ReaderLease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       urutauv1alpha1.ReaderLeaseSpec{Source: source.DeepCopy(), Holder: urutauv1alpha1.PipelineRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}},
		}
	}
	for _, e := range next.Spec.Members {
		if lease.KeyOf(e) == lease.KeyOf(entry) {
			return nil
		}
	}
	next.Spec.Members = append(next.Spec.Members, entry)
	lease.SortEntries(next.Spec.Members)
	return next
}

// strayPods deletes, in member, the coordinator pods of live pipelines that no StatefulSet
// controls: a second reader beside the one the hub runs, or one where it runs none. One list per
// namespace that holds live pipelines; a namespace the hub may not read there is not open to the
// fleet, and holds nothing of it.
func (o *orphanScanner) strayPods(ctx context.Context, member string, c *members.Conn, rec records) {
	names := map[string]sets.Set[string]{}
	for _, p := range rec.live {
		if names[p.Namespace] == nil {
			names[p.Namespace] = sets.New[string]()
		}
		names[p.Namespace].Insert(p.Name)
	}
	for _, ns := range sortedKeys(names) {
		pods := &corev1.PodList{}
		err := c.Live.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{urutauv1alpha1.LabelApp: coordinator.AppCoordinator})
		if err != nil {
			if !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("stray pod scan failed", "cluster", member, "namespace", ns, "error", err.Error())
			}
			continue
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if name := pod.Labels[urutauv1alpha1.LabelPipeline]; names[ns].Has(name) {
				o.judgePod(ctx, member, c, pod, rec.placed[types.NamespacedName{Namespace: ns, Name: name}])
			}
		}
	}
}

// judgePod deletes pod when no StatefulSet controls it; placed is the UID of the pipeline an
// Active entry runs there under the pod's name ("" when none).
func (o *orphanScanner) judgePod(ctx context.Context, member string, c *members.Conn, pod *corev1.Pod, placed types.UID) {
	owner, err := memberwork.ControllerOf(ctx, c.Live, pod)
	if err != nil || owner.Exists || owner.Foreign {
		return
	}
	if err := memberwork.DeleteStrayPod(ctx, c.Cached, pod); err != nil {
		ctrl.LoggerFrom(ctx).Info("deleting a stray reader pod failed", "cluster", member, "pod", client.ObjectKeyFromObject(pod).String(), "error", err.Error())
		return
	}
	strayPodsDeleted.WithLabelValues(member).Inc()
	ctrl.LoggerFrom(ctx).Info("deleted a coordinator pod no StatefulSet controls (made by hand, or orphaned): a second reader",
		"cluster", member, "pod", client.ObjectKeyFromObject(pod).String(), "placedHere", placed != "")
}

// klogRef names p in logs.
func klogRef(p *urutauv1alpha1.CDCPipeline) string { return p.Namespace + "/" + p.Name }
