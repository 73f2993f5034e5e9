package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// IdentityIndex is the field index of CDCPipelines by reader identity ("<kind>/<field>/<value>",
// e.g. mysql/serverId/1101): the uniqueness check reads the few pipelines that share it instead of
// parsing every pipeline of the hub on each admission.
const IdentityIndex = "urutau.io/source-identity"

// IndexIdentities registers IdentityIndex with a cache (mgr.GetFieldIndexer()). The cache must
// hold every CDCPipeline of the hub (no --watch-namespaces), or the check misses the others.
func IndexIdentities(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &urutauv1alpha1.CDCPipeline{}, IdentityIndex, func(o client.Object) []string {
		p, ok := o.(*urutauv1alpha1.CDCPipeline)
		if !ok {
			return nil
		}
		return identityKeys(p)
	})
}

// identityKeys are the index keys of p's reader identity; none when it has none the hub can see.
func identityKeys(p *urutauv1alpha1.CDCPipeline) []string {
	id, ok := identityOf(p)
	if !ok {
		return nil
	}
	return []string{id.Kind + "/" + id.Field + "/" + id.Value}
}

// uniquenessCandidates are the pipelines that may share p's identity: those the index finds under
// p's keys when v.Identities is set, else every pipeline of the hub (read live through v.Client).
func (v *CDCPipelineValidator) uniquenessCandidates(ctx context.Context, p *urutauv1alpha1.CDCPipeline) ([]urutauv1alpha1.CDCPipeline, error) {
	if v.Identities == nil {
		var list urutauv1alpha1.CDCPipelineList
		if err := v.Client.List(ctx, &list); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	seen := map[client.ObjectKey]bool{}
	var out []urutauv1alpha1.CDCPipeline
	for _, key := range identityKeys(p) {
		var list urutauv1alpha1.CDCPipelineList
		if err := v.Identities.List(ctx, &list, client.MatchingFields{IdentityIndex: key}); err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			if k := client.ObjectKeyFromObject(&o); !seen[k] {
				seen[k] = true
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// uniqueness checks p's identity against the candidates. A pipeline of p's own namespace is named
// (the same tenant owns both); one of another namespace is not: its name and namespace are another
// tenant's business, and the error says only that the value is taken.
func (v *CDCPipelineValidator) uniqueness(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (field.ErrorList, error) {
	candidates, err := v.uniquenessCandidates(ctx, p)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf(
			"cannot check that the source identity (MySQL serverId, Postgres slotName) is unique across the hub: listing CDCPipelines in all namespaces: %w; retry, and if it persists check the webhook's RBAC (list cdcpipelines cluster-wide)", err))
	}
	var own, others []urutauv1alpha1.CDCPipeline
	for _, o := range candidates {
		if o.Namespace == p.Namespace {
			own = append(own, o)
		} else {
			others = append(others, o)
		}
	}
	errs := validateUniqueness(p, own)
	for _, e := range validateUniqueness(p, others) {
		id, _ := identityOf(p)
		e.Detail = fmt.Sprintf("%s is already used by a CDCPipeline in another namespace of the hub; two readers with one identity corrupt each other's stream: %s",
			describeIdentity(id), uniqueAdvice[id.Kind])
		errs = append(errs, e)
	}
	return errs, nil
}
