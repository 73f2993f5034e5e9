package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// Tombstones: a member that could not be cleaned in time (deletion past TombstoneGrace, or a
// departed member a person confirmed gone) is recorded as a ConfigMap on the hub, in
// TombstoneNamespace, so the cleanup is durable and visible (`kubectl get cm -l
// urutau.io/tombstone=true`). The TombstoneReconciler replays it whenever the member answers and
// deletes it once the member holds nothing with the pipeline's UID.
const (
	// LabelTombstone marks a tombstone ConfigMap.
	LabelTombstone = "urutau.io/tombstone"

	// Keys of a tombstone's data.
	TombstoneKeyPipelineUID = "pipelineUID"
	TombstoneKeyCluster     = "cluster"
	TombstoneKeyNamespace   = "namespace"
	TombstoneKeyName        = "name"
	TombstoneKeyReason      = "reason"
	TombstoneKeyCreated     = "created"

	// DefaultTombstoneNamespace is where tombstones live when none is configured.
	DefaultTombstoneNamespace = "urutau-system"
)

// TombstoneName is the deterministic name of the tombstone of pipeline uid in member: writing it
// twice is idempotent.
func TombstoneName(uid types.UID, member string) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + member))
	return "urutau-tombstone-" + hex.EncodeToString(sum[:])[:20]
}

func newTombstone(ns string, p *urutauv1alpha1.CDCPipeline, member, reason string, now time.Time) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      TombstoneName(p.UID, member),
			Labels: map[string]string{
				LabelTombstone:                     "true",
				urutauv1alpha1.LabelHubPipelineUID: string(p.UID),
				urutauv1alpha1.LabelManagedBy:      urutauv1alpha1.ManagedByFleet,
			},
		},
		Data: map[string]string{
			TombstoneKeyPipelineUID: string(p.UID),
			TombstoneKeyCluster:     member,
			TombstoneKeyNamespace:   p.Namespace,
			TombstoneKeyName:        p.Name,
			TombstoneKeyReason:      reason,
			TombstoneKeyCreated:     now.UTC().Format(time.RFC3339),
		},
	}
}

// writeTombstone records that member may still hold objects of p. An existing one is kept.
func writeTombstone(ctx context.Context, c ctrl.Client, ns, fieldOwner string, p *urutauv1alpha1.CDCPipeline, member, reason string) error {
	err := c.Create(ctx, newTombstone(ns, p, member, reason, time.Now()), ctrl.FieldOwner(fieldOwner))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording the tombstone of cluster %q on the hub: %w", member, err)
	}
	if err == nil {
		tombstonesWritten.Inc()
	}
	return nil
}

// deleteTombstone removes the tombstone of p in member, if any: the pipeline takes that member
// back into its inventory, so its own cleanup owns it again.
func deleteTombstone(ctx context.Context, c ctrl.Client, ns string, uid types.UID, member string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: TombstoneName(uid, member)}}
	if err := c.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the tombstone of cluster %q: %w", member, err)
	}
	return nil
}

// TombstoneReconciler replays tombstones: it empties the member of everything carrying the
// pipeline's UID label, then deletes the tombstone. While the member does not answer it retries
// every RetryInterval.
type TombstoneReconciler struct {
	// Client reads and deletes tombstones and reads CDCPipelines on the hub.
	Client  ctrl.Client
	Manager mcmanager.Manager
	// Namespace holds the tombstones.
	Namespace     string
	MemberTimeout time.Duration
	RetryInterval time.Duration
	Recorder      events.EventRecorder
}

// Reconcile replays one tombstone.
func (r *TombstoneReconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (reconcile.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Client.Get(ctx, req.NamespacedName, cm); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if cm.Labels[LabelTombstone] != "true" || cm.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	uid := types.UID(cm.Data[TombstoneKeyPipelineUID])
	member := cm.Data[TombstoneKeyCluster]
	ns := cm.Data[TombstoneKeyNamespace]
	log := logf.FromContext(ctx).WithValues("cluster", member, "pipelineUID", uid)
	if uid == "" || member == "" || ns == "" {
		log.Info("ignoring a malformed tombstone", "tombstone", req.NamespacedName)
		return reconcile.Result{}, nil
	}

	// While the live pipeline still lists the member in its inventory, the pipeline's own
	// reconcile owns that member: it is either about to drop it (the tombstone is written first)
	// or has taken it back, in which case it deletes the tombstone itself. Replaying now could
	// delete what that pipeline applies.
	p := &urutauv1alpha1.CDCPipeline{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: cm.Data[TombstoneKeyName]}, p); err == nil &&
		p.UID == uid && p.DeletionTimestamp == nil && containsString(p.Status.Inventory, member) {
		return reconcile.Result{RequeueAfter: r.RetryInterval}, nil
	}

	mctx, cancel := context.WithTimeout(ctx, r.MemberTimeout)
	defer cancel()
	left, err := r.replay(mctx, member, ns, uid)
	if err != nil {
		log.Info("tombstone not replayed yet", "reason", err.Error())
		return reconcile.Result{RequeueAfter: r.RetryInterval}, nil
	}
	if left > 0 {
		return reconcile.Result{RequeueAfter: r.RetryInterval}, nil
	}
	log.Info("member cleaned; tombstone removed")
	if r.Recorder != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeNormal, "TombstoneReplayed", "Cleanup",
			"cluster %q holds nothing of pipeline %s/%s (uid %s) any more", member, ns, cm.Data[TombstoneKeyName], uid)
	}
	uidp, rv := cm.UID, cm.ResourceVersion
	err = r.Client.Delete(ctx, cm, ctrl.Preconditions{UID: &uidp, ResourceVersion: &rv})
	return reconcile.Result{}, ctrl.IgnoreNotFound(err)
}

func (r *TombstoneReconciler) replay(ctx context.Context, member, ns string, uid types.UID) (int, error) {
	cl, err := r.Manager.GetCluster(ctx, mcNameOf(member))
	if err != nil {
		return 0, err
	}
	// Pods are not checked: they carry no UID label, and a pipeline of the same name may run
	// there now.
	res, err := cleanupMember(ctx, cl.GetAPIReader(), cl.GetClient(), ns, uid, "")
	if err != nil {
		return 0, err
	}
	return res.coordinator + res.others, nil
}

// SetupWithManager watches tombstone ConfigMaps in r.Namespace on the hub.
func (r *TombstoneReconciler) SetupWithManager(mgr mcmanager.Manager) error {
	if r.Manager == nil {
		r.Manager = mgr
	}
	if r.Client == nil {
		r.Client = mgr.GetLocalManager().GetClient()
	}
	if r.Namespace == "" {
		r.Namespace = DefaultTombstoneNamespace
	}
	if r.MemberTimeout == 0 {
		r.MemberTimeout = DefaultMemberTimeout
	}
	if r.RetryInterval == 0 {
		r.RetryInterval = DefaultRetryInterval
	}
	isTombstone := predicate.NewPredicateFuncs(func(o ctrl.Object) bool {
		return o.GetNamespace() == r.Namespace && o.GetLabels()[LabelTombstone] == "true"
	})
	return mcbuilder.ControllerManagedBy(mgr).
		Named("urutau-fleet-tombstone").
		For(&corev1.ConfigMap{},
			mcbuilder.WithEngageWithLocalCluster(true),
			mcbuilder.WithEngageWithProviderClusters(false),
			mcbuilder.WithPredicates(isTombstone)).
		WithClusterNotFoundWrapper(false).
		WithOptions(mccontroller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}
