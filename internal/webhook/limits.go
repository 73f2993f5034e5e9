package webhook

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/spec"
)

// validateLimits refuses an inline definition larger than the renderer accepts
// (spec.MaxInlineBytes), before anything parses it: the uniqueness check and every
// render parse it again.
func validateLimits(p *urutauv1alpha1.CDCPipeline) field.ErrorList {
	if in := p.Spec.Definition.Inline; in != nil {
		if e := spec.CheckInlineSize(field.NewPath("spec", "definition", "inline"), in.Raw); e != nil {
			e.Detail += ": the definition is bounded so that admitting and rendering it stay cheap; move bulky settings out of it"
			return field.ErrorList{e}
		}
	}
	return nil
}
