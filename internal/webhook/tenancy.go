package webhook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/spec"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// The webhook reads the pipeline's hub Namespace (its labels decide system namespaces and policy
// selection) and the PlacementPolicies, live.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=urutau.io,resources=placementpolicies,verbs=list

// TenancyCheck is the admission side of the tenancy boundary (internal/tenancy): the fast,
// friendly answer; the reconciler checks again before every write into a member, because
// members, labels and policies change after admission.
//
//   - A CDCPipeline in a system namespace of the hub is refused (metadata.namespace).
//   - A pipeline with a placement needs a PlacementPolicy that governs its namespace
//     (spec.placement); a pipeline placed nowhere is admitted without one.
//   - Each member named in spec.placement.clusters must be allowed to it, in the member namespace
//     of the pipeline's name (spec.placement.clusters[i]); a name the inventory does not know yet
//     and no policy names is a warning.
//   - Members the clusterSelector selects today but no policy allows are a warning: they are
//     skipped at reconcile, with a condition.
//   - spec.definition.inline.pipeline must equal metadata.name (tenancy.CheckWorkerNames).
//   - No table's worker group may be named like a coordinator (tenancy.CheckWorkerGroupName),
//     nor, with maintenance on, its maintenance pod name be cut (tenancy.CheckMaintenanceName).
//   - Every image the pipeline names (spec.image, spec.overrides[i].image) must be allowed: by
//     the hub (Images) or by a policy governing the namespace; and on each member of
//     placement.clusters, the image it runs there by the hub or a policy granting that member
//     (tenancy.Boundary.CheckImages). On members the clusterSelector selects today it is a
//     warning.
type TenancyCheck struct {
	// Reader reads Namespaces and PlacementPolicies; a live reader (mgr.GetAPIReader()).
	Reader client.Reader
	// Inventory lists the members and their labels.
	Inventory inventory.Inventory
	// Reserved are the hub's own namespaces (tenancy.Boundary.Reserved).
	Reserved []string
	// Images are the hub's image rules (tenancy.Boundary.Images).
	Images tenancy.ImageSettings
}

// tenancy runs v.Tenancy, if set, on p.
func (v *CDCPipelineValidator) tenancy(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (field.ErrorList, []string, error) {
	if v.Tenancy == nil {
		return nil, nil, nil
	}
	return v.Tenancy.check(ctx, p)
}

func (t *TenancyCheck) check(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (field.ErrorList, []string, error) {
	ns := &corev1.Namespace{}
	if err := t.Reader.Get(ctx, client.ObjectKey{Name: p.Namespace}, ns); err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("cannot check the tenancy boundary: reading namespace %q: %w", p.Namespace, err))
	}
	b := tenancy.Boundary{Reserved: t.Reserved, Images: t.Images}
	if err := b.CheckHubNamespace(ns); err != nil {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "namespace"), err.Error())}, nil, nil
	}
	errs := workerNameErrors(p)
	pl := p.Spec.Placement
	placed := len(pl.Clusters) > 0 || pl.ClusterSelector != nil || pl.Failover != nil
	if !placed && len(tenancy.ImageFields(p)) == 0 {
		return errs, nil, nil
	}
	var policies urutauv1alpha1.PlacementPolicyList
	if err := t.Reader.List(ctx, &policies); err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("cannot check the tenancy boundary: listing PlacementPolicies: %w", err))
	}
	b.Policies = policies.Items
	imgErrs := namespaceImageErrors(b, ns, p)
	errs = append(errs, imgErrs...)
	if !placed {
		return errs, nil, nil
	}
	members, err := t.Inventory.Members(ctx)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("cannot check the tenancy boundary: %w", err))
	}
	perrs, warns := placementDenials(b, ns, p, members)
	ierrs, iwarns := memberImageDenials(b, ns, p, members, imgErrs)
	return append(append(errs, perrs...), ierrs...), append(warns, iwarns...), nil
}

// workerNameErrors refuses an inline definition whose pipeline is not the CR's name.
func workerNameErrors(p *urutauv1alpha1.CDCPipeline) field.ErrorList {
	var d *tenancy.Denial
	if err := tenancy.CheckWorkerNames(p); errors.As(err, &d) {
		return field.ErrorList{field.Forbidden(pipelinePath, strings.TrimPrefix(d.Message, pipelinePath.String()+": "))}
	}
	return nil
}

// workerGroupErrors refuses a table whose worker group is named like a coordinator
// (tenancy.CheckWorkerGroupName), or, with maintenance on, whose maintenance pod name is cut
// (tenancy.CheckMaintenanceName).
func workerGroupErrors(in *spec.Inline) field.ErrorList {
	var errs field.ErrorList
	for i, t := range in.Tables {
		path := inlinePath.Child("tables").Index(i).Child("target")
		var d *tenancy.Denial
		if err := tenancy.CheckWorkerGroupName(path.String(), spec.WorkerGroupPrefix(in.Pipeline, t.Target)); errors.As(err, &d) {
			errs = append(errs, field.Forbidden(path, strings.TrimPrefix(d.Message, path.String()+": ")))
		}
		if !in.Sink.MaintenanceEnabled() {
			continue
		}
		if err := tenancy.CheckMaintenanceName(path.String(), coordinator.MaintenanceWorkerName(in.Pipeline, t.Target)); errors.As(err, &d) {
			errs = append(errs, field.Forbidden(path, strings.TrimPrefix(d.Message, path.String()+": ")))
		}
	}
	return errs
}

// namespaceImageErrors refuses every image p names that neither the hub nor a policy governing
// its namespace allows: it would run nowhere.
func namespaceImageErrors(b tenancy.Boundary, ns *corev1.Namespace, p *urutauv1alpha1.CDCPipeline) field.ErrorList {
	ip := b.ImagePolicyForNamespace(ns)
	var errs field.ErrorList
	check := func(path *field.Path, image string) {
		if err := ip.Check(path.String(), image); err != nil {
			errs = append(errs, field.Forbidden(path, strings.TrimPrefix(err.Error(), path.String()+": ")))
		}
	}
	if p.Spec.Image != "" {
		check(specPath.Child("image"), p.Spec.Image)
	}
	for i := range p.Spec.Overrides {
		if img := p.Spec.Overrides[i].Image; img != "" {
			check(overridesPath.Index(i).Child("image"), img)
		}
	}
	return errs
}

// memberImageDenials checks, on each member the placement names or selects today and the boundary
// allows, the image the pipeline would run there: an error for a member of placement.clusters, a
// warning for one the selector selects. Fields refused already (have) are not reported again.
func memberImageDenials(b tenancy.Boundary, ns *corev1.Namespace, p *urutauv1alpha1.CDCPipeline, members []inventory.Member, have field.ErrorList) (field.ErrorList, []string) {
	refused := map[string]bool{}
	for _, e := range have {
		refused[e.Field] = true
	}
	var sel labels.Selector
	if ps := p.Spec.Placement.ClusterSelector; ps != nil {
		sel, _ = metav1.LabelSelectorAsSelector(ps) // an invalid selector is reported by ValidateSpec
	}
	var errs field.ErrorList
	var warns []string
	for _, m := range members {
		named := slices.Contains(p.Spec.Placement.Clusters, m.Name)
		selected := sel != nil && sel.Matches(labels.Set(m.Labels))
		if (!named && !selected) || b.Check(ns, m, p.Namespace) != nil {
			continue // not placed there, or placement denials say why
		}
		f, _ := tenancy.ImageFor(p, m.Name)
		err := b.CheckImages(ns, m, p.Namespace, p)
		if err == nil || refused[f] {
			continue
		}
		if named {
			errs = append(errs, field.Forbidden(imagePath(f), strings.TrimPrefix(err.Error(), f+": ")))
			refused[f] = true
		} else {
			warns = append(warns, err.Error()+"; the pipeline will not run there")
		}
	}
	return errs, warns
}

// imagePath is the field path of an image field tenancy.ImageFor names.
func imagePath(f string) *field.Path {
	var i int
	if _, err := fmt.Sscanf(f, "spec.overrides[%d].image", &i); err == nil {
		return overridesPath.Index(i).Child("image")
	}
	return specPath.Child("image")
}

// placementDenials applies the boundary to each member the placement names or selects today.
func placementDenials(b tenancy.Boundary, ns *corev1.Namespace, p *urutauv1alpha1.CDCPipeline, members []inventory.Member) (field.ErrorList, []string) {
	path := field.NewPath("spec", "placement")
	// No policy governs the namespace: one error, whatever the placement names.
	if err := b.Check(ns, inventory.Member{}, p.Namespace); reasonOf(err) == tenancy.ReasonNoPlacementPolicy {
		return field.ErrorList{field.Forbidden(path, err.Error())}, nil
	}
	known := map[string]inventory.Member{}
	for _, m := range members {
		known[m.Name] = m
	}
	var errs field.ErrorList
	var warns []string
	named := func(listPath *field.Path, names []string) {
		for i, name := range names {
			m, ok := known[name]
			err := b.Check(ns, inventory.Member{Name: name, Labels: m.Labels}, p.Namespace)
			switch {
			case err == nil:
			case !ok && reasonOf(err) == tenancy.ReasonClusterNotAllowed:
				warns = append(warns, fmt.Sprintf("%s: member %q is not in the inventory yet and no PlacementPolicy names it: it runs there only if its labels match a policy when it joins",
					listPath.Index(i), name))
			default:
				errs = append(errs, field.Forbidden(listPath.Index(i), err.Error()))
			}
		}
	}
	named(path.Child("clusters"), p.Spec.Placement.Clusters)
	if fo := p.Spec.Placement.Failover; fo != nil {
		// A candidate the boundary refuses would be chosen and then not run on.
		named(path.Child("failover", "candidates"), fo.Candidates)
	}
	if w := selectorWarning(b, ns, p, members); w != "" {
		warns = append(warns, w)
	}
	return errs, warns
}

// selectorWarning names the members the clusterSelector selects today that the boundary does not
// allow: not an error, since labels and policies may change, but the pipeline will not run there.
func selectorWarning(b tenancy.Boundary, ns *corev1.Namespace, p *urutauv1alpha1.CDCPipeline, members []inventory.Member) string {
	sel := p.Spec.Placement.ClusterSelector
	if sel == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "" // reported by ValidateSpec
	}
	var denied []string
	for _, m := range members {
		if s.Matches(labels.Set(m.Labels)) && b.Check(ns, m, p.Namespace) != nil {
			denied = append(denied, m.Name)
		}
	}
	if len(denied) == 0 {
		return ""
	}
	return fmt.Sprintf("%s selects members that no PlacementPolicy lets namespace %q use: %s; the pipeline will not run there",
		field.NewPath("spec", "placement", "clusterSelector"), p.Namespace, strings.Join(denied, ", "))
}

func reasonOf(err error) string {
	var d *tenancy.Denial
	if errors.As(err, &d) {
		return d.Reason
	}
	return ""
}
