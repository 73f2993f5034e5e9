package fleet

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/memberwork"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// The tenancy boundary (internal/tenancy) and the adoption rules (internal/adopt), at reconcile
// time: the webhook gives the fast, friendly answer, but members, labels and policies change after
// admission, and a pipeline admitted while the webhook was down never met it. Nothing is written
// into a member the boundary refuses; what runs there already is left as it is (a policy change
// never tears a pipeline down by itself), and only cleanup by UID label stays allowed.

// Events of the boundary and the adoption rules.
const (
	// EventPlacementDenied: the tenancy boundary refuses a member to the pipeline.
	EventPlacementDenied = memberwork.EventPlacementDenied
	// EventAdoptionConflict: an object of the pipeline's name exists in the member and is not
	// the pipeline's: nothing is written there.
	EventAdoptionConflict = memberwork.EventAdoptionConflict
)

// hubTenancy decides the tenancy boundary at reconcile time: from the hub's flags (flags), and the
// PlacementPolicies and hub namespaces it reads from the hub's cache.
type hubTenancy struct {
	cache client.Reader
	// flags is the boundary the hub's flags set, without the PlacementPolicies: enough for the
	// checks of a member namespace.
	flags tenancy.Boundary
}

// read reads what the tenancy boundary decides from: every PlacementPolicy and the pipeline's hub
// namespace, both from the hub's cache.
func (t hubTenancy) read(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (tenancy.Boundary, *corev1.Namespace, error) {
	b := t.flags
	policies := &urutauv1alpha1.PlacementPolicyList{}
	if err := t.cache.List(ctx, policies); err != nil {
		return b, nil, fmt.Errorf("listing PlacementPolicies: %w", err)
	}
	b.Policies = policies.Items
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := t.cache.Get(ctx, client.ObjectKey{Name: p.Namespace}, ns); err != nil {
		return b, nil, fmt.Errorf("reading the hub namespace %q: %w", p.Namespace, err)
	}
	return b, &corev1.Namespace{ObjectMeta: ns.ObjectMeta}, nil
}

// observe records, for each selected member, whether the boundary lets the pipeline run there
// (in the member namespace of the pipeline's name) with its worker names and images.
func (t hubTenancy) observe(ctx context.Context, p *urutauv1alpha1.CDCPipeline, w *world) error {
	if len(w.selected) == 0 {
		return nil
	}
	b, hubNS, err := t.read(ctx, p)
	if err != nil {
		return err
	}
	// Worker names do not depend on the member: checked once, refused everywhere.
	names := tenancy.CheckParsedWorkerNames(p, w.inline)
	for _, m := range w.selected {
		err := names
		if err == nil {
			err = b.Check(hubNS, w.inventory[m], p.Namespace)
		}
		if err == nil {
			err = b.CheckImages(hubNS, w.inventory[m], p.Namespace, p)
		}
		var d *tenancy.Denial
		if errors.As(err, &d) {
			w.denied[m] = d
		} else if err != nil {
			return err
		}
	}
	w.boundary, w.hubNS = b, hubNS
	return nil
}
