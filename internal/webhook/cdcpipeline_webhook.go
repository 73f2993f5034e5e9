package webhook

import (
	"context"
	"errors"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// Path is where the webhook server serves the CDCPipeline validator. It is what controller-runtime
// derives from the GroupVersionKind, written down because the ValidatingWebhookConfiguration names
// it too.
const Path = "/validate-urutau-io-v1alpha1-cdcpipeline"

// groupKind is what the 422 answers name.
var groupKind = schema.GroupKind{Group: urutauv1alpha1.GroupVersion.Group, Kind: "CDCPipeline"}

// +kubebuilder:webhook:path=/validate-urutau-io-v1alpha1-cdcpipeline,mutating=false,failurePolicy=fail,sideEffects=None,groups=urutau.io,resources=cdcpipelines,verbs=create;update,versions=v1alpha1,name=vcdcpipeline.urutau.io,admissionReviewVersions=v1
// +kubebuilder:rbac:groups=urutau.io,resources=cdcpipelines,verbs=list;watch

// CDCPipelineValidator admits CDCPipelines on the hub. The rules are the pure functions ValidateSpec
// and ValidateUpdate plus a hub-wide uniqueness check that lists every CDCPipeline through Client.
type CDCPipelineValidator struct {
	// Client lists CDCPipelines in all namespaces. Prefer a live reader (mgr.GetAPIReader(), the
	// default of SetupWithManager): a cache that lags lets a duplicate through.
	Client client.Reader
	// Identities, when set, is a cache with IdentityIndex: the uniqueness check reads only the
	// pipelines that share the identity (uniqueness.go) instead of listing all through Client.
	Identities client.Reader
	// Tenancy, when set, applies the tenancy boundary (tenancy.go).
	Tenancy *TenancyCheck
}

var _ admission.Validator[*urutauv1alpha1.CDCPipeline] = &CDCPipelineValidator{}

// SetupWithManager registers v with mgr's webhook server at Path. A nil v, or a v without a
// Client, reads through mgr.GetAPIReader(). mgr's scheme must know urutau.io/v1alpha1.
func SetupWithManager(mgr ctrl.Manager, v *CDCPipelineValidator) error {
	if v == nil {
		v = &CDCPipelineValidator{}
	}
	if v.Client == nil {
		v.Client = mgr.GetAPIReader()
	}
	return ctrl.NewWebhookManagedBy(mgr, &urutauv1alpha1.CDCPipeline{}).
		WithValidator(v).
		WithValidatorCustomPath(Path).
		Complete()
}

// ValidateCreate admits a new pipeline when its spec is valid and its source identity is unique
// across the hub.
func (v *CDCPipelineValidator) ValidateCreate(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (admission.Warnings, error) {
	if errs := validateLimits(p); len(errs) > 0 { // limits.go: before anything parses it
		return nil, invalid(p, errs)
	}
	errs, warns := ValidateSpec(p)
	if len(errs) == 0 {
		uerrs, err := v.checkUniqueness(ctx, p)
		if err != nil {
			return warns, err
		}
		errs = uerrs
	}
	terrs, twarns, err := v.tenancy(ctx, p)
	if err != nil {
		return warns, err
	}
	return append(warns, twarns...), invalid(p, appendNewFields(errs, terrs))
}

// ValidateUpdate admits an update when the new spec is valid and changes no immutable field. An
// update of an object being deleted, or one that leaves spec unchanged (finalizers, labels,
// annotations), is admitted without checks: the hub's finalizer must never be blocked.
func (v *CDCPipelineValidator) ValidateUpdate(ctx context.Context, oldObj, newObj *urutauv1alpha1.CDCPipeline) (admission.Warnings, error) {
	if newObj.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(oldObj.Spec, newObj.Spec) {
		return nil, nil
	}
	if errs := validateLimits(newObj); len(errs) > 0 {
		return nil, invalid(newObj, errs)
	}
	errs, warns := ValidateSpec(newObj)
	errs = append(errs, ValidateUpdate(oldObj, newObj)...)
	if len(errs) == 0 {
		// The identity is immutable, so it can only differ when the old object had none that
		// parsed: only then can this update introduce a duplicate.
		oldID, _ := identityOf(oldObj)
		newID, _ := identityOf(newObj)
		if oldID != newID {
			uerrs, err := v.checkUniqueness(ctx, newObj)
			if err != nil {
				return warns, err
			}
			errs = uerrs
		}
	}
	terrs, twarns, err := v.tenancy(ctx, newObj)
	if err != nil {
		return warns, err
	}
	return append(warns, twarns...), invalid(newObj, appendNewFields(errs, terrs))
}

// appendNewFields adds to errs the errors of more whose field errs does not report yet: one answer
// per field (a renamed inline pipeline is immutable, and not the CR's name either: the first
// says what to do).
func appendNewFields(errs, more field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	for _, e := range errs {
		seen[e.Field] = true
	}
	for _, e := range more {
		if !seen[e.Field] {
			errs = append(errs, e)
		}
	}
	return errs
}

// ValidateDelete admits every delete; the webhook is not registered for DELETE anyway.
func (v *CDCPipelineValidator) ValidateDelete(context.Context, *urutauv1alpha1.CDCPipeline) (admission.Warnings, error) {
	return nil, nil
}

// checkUniqueness compares p's reader identity with the other CDCPipelines of the hub
// (uniqueness.go). A failed read is returned as an error: admission fails closed.
func (v *CDCPipelineValidator) checkUniqueness(ctx context.Context, p *urutauv1alpha1.CDCPipeline) (field.ErrorList, error) {
	if _, ok := identityOf(p); !ok {
		return nil, nil
	}
	if v.Client == nil {
		return nil, apierrors.NewInternalError(errors.New(
			"the CDCPipeline webhook has no client to check that the source identity is unique across the hub"))
	}
	return v.uniqueness(ctx, p) // uniqueness.go
}

// invalid is the one place an error list becomes an admission answer: a 422 Invalid whose causes
// carry the field paths. It is nil when errs is empty.
func invalid(p *urutauv1alpha1.CDCPipeline, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(groupKind, p.Name, errs)
}
