package fleet

import (
	"context"
	"fmt"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/hubindex"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/ssa"
)

// hubWrites makes the reconciler's writes to the hub's pipelines and ReaderLeases, each told to
// its echo filter (ssa.EchoFilter), which holds the watch event of our own write and lets through
// one by someone else. A write that crossed a change by someone else has its pipeline looked at
// again at once (lookAgain).
type hubWrites struct {
	client       client.Client
	fieldManager string
	leases       *lease.Store
	// pipelineEchoes and leaseEchoes filter the hub watch events of our own writes.
	pipelineEchoes, leaseEchoes ssa.EchoFilter
	// lookAgain holds the pipelines whose writes crossed a change by someone else.
	lookAgain sync.Map
	// requeue brings pipelines back; lookup finds the pipelines a lease concerns.
	requeue func(keys ...types.NamespacedName)
	lookup  hubindex.Lookup
}

// pipeline makes one write to pipeline p through write, which updates p with the answer. An
// answer that shows a change by someone else has the pipeline looked at again: a write that
// changed nothing answers with the latest resourceVersion, and the filter then takes that
// change's event for our echo.
func (hw *hubWrites) pipeline(p *urutauv1alpha1.CDCPipeline, write func() error) error {
	key := hubKey(p)
	sent := p.DeepCopy()
	hw.pipelineEchoes.Begin(key)
	err := write()
	rv := ""
	if err == nil {
		rv = p.ResourceVersion
	}
	if hw.pipelineEchoes.End(key, rv) || (err == nil && othersWrote(sent, p)) {
		hw.crossed(client.ObjectKeyFromObject(p))
	}
	return err
}

// patch merge-patches p's metadata or spec from orig, locked on orig's resourceVersion: the
// finalizer, and the annotations a phase consumes.
func (hw *hubWrites) patch(ctx context.Context, orig, p *urutauv1alpha1.CDCPipeline) error {
	return hw.pipeline(p, func() error {
		return hw.client.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(hw.fieldManager))
	})
}

// status merge-patches the hub status from orig's to p's, only when it changed (idle is
// quiet). The merge patch carries only what we changed of the status, so fields others write
// (phase, runId) are not clobbered, and nothing of the metadata: writes to p made since orig
// (annotations consumed by the phases) put no resourceVersion in it, which would fail the patch
// on any write by someone else meanwhile. lock adds p's resourceVersion as a precondition where
// acting on a stale object would be wrong (clearing a termination).
func (hw *hubWrites) status(ctx context.Context, orig, p *urutauv1alpha1.CDCPipeline, lock bool) error {
	if apiequality.Semantic.DeepEqual(orig.Status, p.Status) {
		return nil
	}
	base := p.DeepCopy()
	base.Status = *orig.Status.DeepCopy()
	var opts []client.MergeFromOption
	if lock {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	if err := hw.pipeline(p, func() error {
		return hw.client.Status().Patch(ctx, p, client.MergeFromWithOptions(base, opts...), client.FieldOwner(hw.fieldManager))
	}); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// lease writes next over current (lease.Store.Write). The lease echo filter holds the lease's
// watch events while the write is in flight; one that was not ours (the orphan scan recording a
// stray, another hub replica) brings the lease's pipelines back here, as its event would have.
func (hw *hubWrites) lease(ctx context.Context, current, next *urutauv1alpha1.ReaderLease) (*urutauv1alpha1.ReaderLease, error) {
	key := hw.leases.Namespace + "/" + next.Name
	hw.leaseEchoes.Begin(key)
	written, err := hw.leases.Write(ctx, current, next)
	rv := ""
	if err == nil {
		rv = written.ResourceVersion
	}
	if hw.leaseEchoes.End(key, rv) {
		hw.requeue(hw.lookup.OfLease(ctx, next)...)
	}
	return written, err
}

// crossed has pipeline key looked at again at once: a change by someone else crossed a write.
func (hw *hubWrites) crossed(key types.NamespacedName) { hw.lookAgain.Store(key, true) }

// again tells, once, whether pipeline key is to be looked at again at once.
func (hw *hubWrites) again(key types.NamespacedName) bool {
	_, ok := hw.lookAgain.LoadAndDelete(key)
	return ok
}

// othersWrote tells that the answer to a write of sent carries a change the hub does not make
// and acts on: the spec (its generation), a deletion, labels, annotations, status.terminated.
func othersWrote(sent, answer *urutauv1alpha1.CDCPipeline) bool {
	return othersChange(sent, answer) || !apiequality.Semantic.DeepEqual(sent.Status.Terminated, answer.Status.Terminated)
}

func hubKey(o client.Object) string { return o.GetNamespace() + "/" + o.GetName() }
