package members

import (
	"context"
	"fmt"
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

// Records publishes what the health checks found about each member, so that people and
// tools (`kubectl urutau members`) read the hub's own view rather than guess it from pipelines'
// status: one coordination Lease per member in the lease namespace (the hub may already write
// Leases there, so this needs no right on anything else). Written only when a check found
// something new, and only by the leader: an idle fleet writes nothing.
type Records struct {
	Client client.Client
	// Live reads Leases from the API server: the hub keeps no Lease informer.
	Live      client.Reader
	Namespace string
	// Holder is the hub replica that writes (its host name).
	Holder   string
	Interval time.Duration
}

// Publish records what the last check of member found; a record that already says so is left
// alone.
func (p Records) Publish(ctx context.Context, member string, h Health, id string) error {
	if p.Client == nil {
		return nil // a reconciler built without SetupWithManager (unit tests) publishes nothing
	}
	name := urutauv1alpha1.MemberHealthPrefix + member
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return fmt.Errorf("no health record for member %q: %q is not a valid object name", member, name)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old := &coordinationv1.Lease{}
		err := p.Live.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, old)
		if apierrors.IsNotFound(err) {
			return p.Client.Create(ctx, healthRecord(p.Namespace, member, h, id, p.Holder, p.Interval, nil, time.Now()))
		}
		if err != nil {
			return err
		}
		want := healthRecord(p.Namespace, member, h, id, p.Holder, p.Interval, old, time.Now())
		if sameRecord(old, want) {
			return nil
		}
		return p.Client.Update(ctx, want)
	})
}

// PublishWhile publishes member's record while present says member is in the inventory. A
// check that ends after its member left, whose record was removed then, must not bring the
// record back for good: present is asked again after the write, and a member that left meanwhile
// has its record removed again. It reports whether member was present both times.
func (p Records) PublishWhile(ctx context.Context, member string, h Health, id string, present func(context.Context) bool) (bool, error) {
	if !present(ctx) {
		return false, p.Remove(ctx, member)
	}
	err := p.Publish(ctx, member, h, id)
	if !present(ctx) {
		return false, p.Remove(ctx, member)
	}
	return true, err
}

// Remove deletes the record of a member that left the inventory.
func (p Records) Remove(ctx context.Context, member string) error {
	if p.Client == nil {
		return nil
	}
	rec := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: urutauv1alpha1.MemberHealthPrefix + member}}
	return client.IgnoreNotFound(p.Client.Delete(ctx, rec))
}

// Prune deletes the records of members no longer in the inventory (they left while no hub ran).
func (p Records) Prune(ctx context.Context, members []inventory.Member) error {
	if p.Client == nil {
		return nil
	}
	l := &coordinationv1.LeaseList{}
	if err := p.Live.List(ctx, l, client.InNamespace(p.Namespace), client.MatchingLabels{urutauv1alpha1.LabelMemberHealth: "true"}); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, m := range members {
		keep[m.Name] = true
	}
	for i := range l.Items {
		if member := l.Items[i].Annotations[urutauv1alpha1.AnnotationMember]; !keep[member] {
			if err := client.IgnoreNotFound(p.Client.Delete(ctx, &l.Items[i])); err != nil {
				return err
			}
		}
	}
	return nil
}

// healthRecord is the record of what a check of member found, as a change of old (nil: none
// yet) at now. acquireTime says since when the member has been reachable (or not): it moves only
// when that flips.
func healthRecord(namespace, member string, h Health, id, holder string, interval time.Duration, old *coordinationv1.Lease, now time.Time) *coordinationv1.Lease {
	rec := &coordinationv1.Lease{}
	if old != nil {
		rec = old.DeepCopy()
	}
	rec.Namespace, rec.Name = namespace, urutauv1alpha1.MemberHealthPrefix+member
	rec.Labels = mergeString(rec.Labels, map[string]string{urutauv1alpha1.LabelMemberHealth: "true",
		"app.kubernetes.io/managed-by": "urutau-fleet-hub"})
	wasReachable := rec.Annotations[urutauv1alpha1.AnnotationReachable]
	rec.Annotations = mergeString(rec.Annotations, map[string]string{
		urutauv1alpha1.AnnotationMember:         member,
		urutauv1alpha1.AnnotationReachable:      conditionWord(h.Up),
		urutauv1alpha1.AnnotationEngaged:        conditionWord(h.Engaged),
		urutauv1alpha1.AnnotationHealthMessage:  h.Message,
		urutauv1alpha1.AnnotationHealthInterval: interval.String(),
		urutauv1alpha1.AnnotationClusterID:      id,
	})
	if id == "" && old != nil {
		rec.Annotations[urutauv1alpha1.AnnotationClusterID] = old.Annotations[urutauv1alpha1.AnnotationClusterID]
	}
	rec.Spec.HolderIdentity = &holder
	if wasReachable != conditionWord(h.Up) || rec.Spec.AcquireTime == nil {
		rec.Spec.AcquireTime = &metav1.MicroTime{Time: now.Truncate(time.Second)}
	}
	if !h.LastAnswer.IsZero() {
		rec.Spec.RenewTime = &metav1.MicroTime{Time: h.LastAnswer.Truncate(time.Second)}
	}
	return rec
}

// sameRecord tells whether writing want over old would change what the record says. The holder
// and times alone do not count: a new leader finding what its predecessor recorded writes nothing.
func sameRecord(old, want *coordinationv1.Lease) bool {
	return maps.Equal(old.Labels, want.Labels) && maps.Equal(old.Annotations, want.Annotations) &&
		old.Spec.AcquireTime.Equal(want.Spec.AcquireTime)
}

func conditionWord(b bool) string {
	if b {
		return string(metav1.ConditionTrue)
	}
	return string(metav1.ConditionFalse)
}

func mergeString(dst, src map[string]string) map[string]string {
	out := maps.Clone(dst)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, src)
	return out
}
