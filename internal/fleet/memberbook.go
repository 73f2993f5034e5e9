package fleet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/status"
)

// memberBook is what the hub keeps about each member beyond one reconcile, outside members.Set:
// the backoff of each pipeline's work there, the applier's memory of what it applied, its health
// record on the hub and its metric series; and how all of it is dropped when the member leaves.
type memberBook struct {
	members   *members.Set
	inventory inventory.Inventory
	// backoff spaces the retries of one pipeline on one member that answered with an error.
	backoff members.Backoff[status.MemberObservation]
	applier *ssa.Applier
	// records publishes what the health checks find; health are the checks themselves.
	records members.Records
	health  healthChecks
	// pipelinesOn and requeue bring back the pipelines placed on a member.
	pipelinesOn func(ctx context.Context, member string) []types.NamespacedName
	requeue     func(keys ...types.NamespacedName)
	// memberTimeout and healthInterval are what a timed-out member's message names.
	memberTimeout, healthInterval time.Duration
}

// entry is the inventory entry of member, if it has one.
func (b *memberBook) entry(ctx context.Context, member string) (m inventory.Member, ok bool) {
	listed, err := b.inventory.Members(ctx)
	if err != nil {
		return m, false
	}
	for _, x := range listed {
		if x.Name == member {
			return x, true
		}
	}
	return m, false
}

// timedOut records that member's requests time out: it is down until a health check finds it
// answering (members.Monitor), and the message says so, the same for every request and pipeline.
func (b *memberBook) timedOut(member string) string {
	msg := fmt.Sprintf("cluster %q does not answer: its requests time out (--member-timeout %s); the hub checks it every %s and does not wait for it meanwhile", member, b.memberTimeout, b.healthInterval)
	if b.members.SetHealth(member, members.Health{Checked: true, Message: msg}) && b.requeue != nil {
		b.requeue(b.pipelinesOn(context.Background(), member)...)
	}
	return msg
}

// forget drops every piece of state kept about member, which left the inventory. The record goes
// first: should a check publish it again in between (the member is back already), the health
// forgotten after makes the member's next check publish it once more.
func (b *memberBook) forget(member string) {
	ctx, cancel := context.WithTimeout(context.Background(), hubWriteTimeout)
	defer cancel()
	if err := b.records.Remove(ctx, member); err != nil {
		ctrl.Log.WithName("health").Error(err, "Removing the health record of a member that left", "cluster", member)
	}
	b.members.Forget(member)
	b.backoff.ForgetMember(member)
	b.applier.ForgetMember(member)
	forgetMemberSeries(member)
	ssa.ForgetMemberSeries(member)
	b.health.Forget(member)
}

// publish records what the last check of member found (members.Records). A check that ended
// after member left the inventory is dropped with everything else kept about it: forget ran
// when it left, and this check must not bring its record back.
func (b *memberBook) publish(ctx context.Context, member string) {
	if b.records.Client == nil {
		return // a reconciler built without SetupWithManager (unit tests) publishes nothing
	}
	ctx, cancel := context.WithTimeout(ctx, hubWriteTimeout)
	defer cancel()
	present := func(ctx context.Context) bool {
		listed, err := b.inventory.Members(ctx)
		// An inventory that cannot be read says nothing of member: only a listing without it
		// drops what the hub keeps.
		return err != nil || slices.ContainsFunc(listed, func(m inventory.Member) bool { return m.Name == member })
	}
	stays, err := b.records.PublishWhile(ctx, member, b.members.Health(member), b.members.KnownIdentity(member), present)
	if err != nil {
		ctrl.Log.WithName("health").Error(err, "Publishing a member's health record", "cluster", member)
	}
	if !stays {
		b.forget(member)
	}
}

// hubWriteTimeout bounds one write of a health record to the hub.
const hubWriteTimeout = 10 * time.Second
