package fleet

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/orphans"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// Strays are a live pipeline's objects in a member its lease does not name. The orphan scan
// (internal/orphans) finds them; the reconciler records them here, and removes them like a
// member the pipeline left.

// recordStray adds to p's ReaderLease an Active entry for member m, where the scan found objects
// of p that no entry names, and has p reconciled: the entry holds p's other starts (a reader may
// run there) until p's reconcile has emptied the member, as for a member it left. A pipeline
// being deleted empties it too before its finalizer goes. It returns false, and records nothing,
// when the hub could not have placed p there (stray objects the hub cannot remove are reported
// as orphans, see placeable); true when it recorded them or will look again at the next scan.
func (r *CoordinatorReconciler) recordStray(ctx context.Context, m inventory.Member, c *members.Conn, p *urutauv1alpha1.CDCPipeline, g *orphans.Group) bool {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", m.Name, "pipeline", klogRef(p))
	id := r.members.KnownIdentity(m.Name)
	if id == "" {
		return true // the next scan, once the identity is known
	}
	switch err := r.tenancy.placeable(ctx, m, c, g.Namespace); {
	case isDenial(err):
		log.Info("objects of a live pipeline where the hub could not have placed it: reported as orphans, not recorded", "namespace", g.Namespace, "reason", err.Error())
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
	next := lease.WithEntry(current, name, sourceIdentity(parseInline(p)), urutauv1alpha1.PipelineRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}, urutauv1alpha1.LeaseMember{
		Cluster: m.Name, ClusterID: id, PipelineUID: p.UID, PipelineNamespace: p.Namespace, PipelineName: p.Name,
		Namespace: g.Namespace, State: urutauv1alpha1.LeaseMemberActive, Since: metav1.Now().Rfc3339Copy(),
		Reason: "found by the orphan scan where the pipeline was not placed (restored objects?)",
	})
	if next == nil {
		return true
	}
	// Not through hubWrites.lease: this write's watch event must not pass for the pipeline's own echo.
	// It brings the pipeline back once the cache holds the entry; the requeue below may read the
	// lease before that, find nothing to remove, and leave the strays to the periodic look.
	if _, err := r.leases.Write(ctx, current, next); err != nil {
		log.Info("recording stray objects failed", "error", err.Error())
		return true
	}
	log.Info("stray objects of a live pipeline recorded: they are removed like a member it left", "objects", g.Objects, "namespace", g.Namespace)
	r.event(p, corev1.EventTypeWarning, EventStrayObjects, "Scan",
		"cluster %q holds %d object(s) of this pipeline in namespace %q, where it is not placed (restored from a backup?): a coordinator there would be a second reader; the hub removes them", m.Name, g.Objects, g.Namespace)
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
func (t hubTenancy) placeable(ctx context.Context, m inventory.Member, c *members.Conn, ns string) error {
	b := t.flags
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

// klogRef names p in logs.
func klogRef(p *urutauv1alpha1.CDCPipeline) string { return p.Namespace + "/" + p.Name }
