package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fleet"
	"github.com/urutau-io/fleet/internal/ssa"
)

// runFloor is the floor: a plain controller-runtime client program that Server-Side Applies
// exactly what the hub applies (coordinator.Render of the same pipelines, same image), with
// force and the same per-member field manager, into the same members, with the same concurrency
// as the hub: `concurrency` pipelines at once (the hub's --max-concurrent-reconciles), each fanned
// out to its members concurrently, the objects of one member applied one after another in the
// hub's order. It reads nothing and writes nothing on the hub: it is what the member writes alone
// cost.
func runFloor(ctx context.Context, clients map[string]client.Client, pipelines []*urutauv1alpha1.CDCPipeline, concurrency int) error {
	work := make(chan *urutauv1alpha1.CDCPipeline)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for p := range work {
				var mwg sync.WaitGroup
				for _, m := range p.Spec.Placement.Clusters {
					mwg.Go(func() {
						if err := applyAll(ctx, clients[m], p, m); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					})
				}
				mwg.Wait()
			}
		})
	}
	for _, p := range pipelines {
		work <- p
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

// applyAll renders p for member m (a fresh render per member: the client fills an apply
// configuration with the answer) and applies its objects in the hub's order.
func applyAll(ctx context.Context, c client.Client, p *urutauv1alpha1.CDCPipeline, member string) error {
	w, err := coordinator.Render(p, coordinator.Settings{DefaultImage: image})
	if err != nil {
		return err
	}
	manager := ssa.FieldManagerFor(fleet.DefaultFieldManager, member)
	for _, ac := range []runtime.ApplyConfiguration{
		w.CoordinatorServiceAccount, w.WorkerServiceAccount, w.PodDisruptionBudget, w.Role,
		w.RoleBinding, w.Service, w.ConfigMap, w.StatefulSet,
	} {
		if err := c.Apply(ctx, ac, client.FieldOwner(manager), client.ForceOwnership); err != nil {
			return fmt.Errorf("floor: applying to %s: %w", member, err)
		}
	}
	return nil
}
