// Package adopt decides whether the hub may apply over an object that already exists in a member.
// Force Server-Side Apply takes over any object of the same name: without this decision a
// pipeline named after another team's Service, Role, RoleBinding or ConfigMap would take it over
// (and the UID label it stamps would make the pipeline's deletion delete it).
//
// The hub applies to an existing object only when it is already this pipeline's (its UID label),
// when it is the single-cluster operator's object for the same CR that this CR let go of (a
// migration, docs/upgrading.md: no owner left), or when someone who owns it handed it over with the annotation
// urutau.io/adopt=<hub namespace>/<hub name>. Anything else is a Conflict naming the object and its
// current managers, and nothing is written.
//
// Pure: the caller reads the live object.
//
// # In the applier
//
// Before the first apply of each object into member M for pipeline P: take the object from M's
// cache (which holds only objects labelled managed-by urutau-fleet), and on a cache miss read it
// live (a NotFound is Absent); Decide(kind, live, Pipeline{UID, Namespace, Name} of P). Ours,
// Migrate and Adopt apply as usual. A *Conflict: apply
// nothing more to M for P in this reconcile, report M with Conflict.Message, and retry on the
// usual interval (someone may delete or annotate the object).
package adopt

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// Pipeline identifies the hub CDCPipeline whose workload is being applied.
type Pipeline struct {
	UID             types.UID
	Namespace, Name string
}

func (p Pipeline) String() string { return p.Namespace + "/" + p.Name }

// Verdict is what the hub may do with the object.
type Verdict string

const (
	// Absent: there is no object; the apply creates it.
	Absent Verdict = "Absent"
	// Ours: the object carries this pipeline's UID label.
	Ours Verdict = "Ours"
	// Migrate: the single-cluster operator's object for the same CR (its selector labels), let go
	// by that CR (no owner left).
	Migrate Verdict = "Migrate"
	// Adopt: the object's owner handed it over with urutau.io/adopt.
	Adopt Verdict = "Adopt"
)

// Decision is the verdict.
type Decision struct {
	Verdict Verdict
}

// Conflict is the error for an object the hub must not touch.
type Conflict struct {
	// Object is "<kind> <namespace>/<name>".
	Object string
	// Managers are the object's field managers (managedFields), sorted.
	Managers []string
	Message  string
}

func (c *Conflict) Error() string { return c.Message }

// coordinatorApp is the single-cluster operator's value of the selector label app.
const coordinatorApp = "urutau-coordinator"

// Decide tells whether the hub may apply the workload of p over existing (nil: it does not exist),
// an object of kind.
func Decide(kind string, existing client.Object, p Pipeline) (Decision, error) {
	if existing == nil {
		return Decision{Verdict: Absent}, nil
	}
	l := existing.GetLabels()
	switch uid, fleet := l[urutauv1alpha1.LabelHubPipelineUID]; {
	case fleet && types.UID(uid) == p.UID:
		return Decision{Verdict: Ours}, nil
	case fleet:
		return Decision{}, conflict(kind, existing, p, fmt.Sprintf("it belongs to another pipeline of the fleet (%s %s/%s, UID %s), perhaps a deleted one whose cleanup has not reached this member yet",
			urutauv1alpha1.LabelHubPipelineUID, l[urutauv1alpha1.LabelHubNamespace], l[urutauv1alpha1.LabelHubName], uid))
	}
	if v, ok := existing.GetAnnotations()[urutauv1alpha1.AnnotationAdopt]; ok {
		if v == p.String() {
			return Decision{Verdict: Adopt}, nil
		}
		return Decision{}, conflict(kind, existing, p, fmt.Sprintf("its %s annotation hands it to %q, not to this pipeline", urutauv1alpha1.AnnotationAdopt, v))
	}
	if l[urutauv1alpha1.LabelApp] == coordinatorApp && l[urutauv1alpha1.LabelPipeline] == p.Name {
		return migration(kind, existing, p)
	}
	return Decision{}, conflict(kind, existing, p, "it was not created by the fleet for this pipeline")
}

// migration checks the owners of an object that carries the single-cluster operator's selector
// labels for the same CR: it is taken over only once it has none, which is what deleting that CR
// with --cascade=orphan leaves (docs/upgrading.md, step 4). An object still owned by the CR is
// that live CR's: its operator may write it again and its deletion would delete it, so it is a
// conflict until the CR lets go of it or its owner hands it over with urutau.io/adopt.
func migration(kind string, existing client.Object, p Pipeline) (Decision, error) {
	owners := existing.GetOwnerReferences()
	if len(owners) == 0 {
		return Decision{Verdict: Migrate}, nil
	}
	for _, o := range owners {
		gv, _ := schema.ParseGroupVersion(o.APIVersion)
		if gv.Group == urutauv1alpha1.GroupVersion.Group && o.Kind == "CDCPipeline" && o.Name == p.Name {
			return Decision{}, conflict(kind, existing, p, fmt.Sprintf(
				"it is still owned by the CDCPipeline %q of the member, which the single-cluster operator may still manage: delete that CR with --cascade=orphan first (docs/upgrading.md, step 4)", p.Name))
		}
	}
	o := owners[0]
	return Decision{}, conflict(kind, existing, p, fmt.Sprintf("it carries the single-cluster operator's labels for %q but is owned by %s %s", p.Name, o.Kind, o.Name))
}

func conflict(kind string, existing client.Object, p Pipeline, why string) *Conflict {
	c := &Conflict{Object: fmt.Sprintf("%s %s/%s", kind, existing.GetNamespace(), existing.GetName()), Managers: managers(existing)}
	owners := ""
	if refs := existing.GetOwnerReferences(); len(refs) > 0 {
		var parts []string
		for _, o := range refs {
			parts = append(parts, o.Kind+"/"+o.Name)
		}
		owners = ", owners " + strings.Join(parts, ", ")
	}
	mgrs := "none recorded"
	if len(c.Managers) > 0 {
		mgrs = strings.Join(c.Managers, ", ")
	}
	c.Message = fmt.Sprintf("%s already exists and the hub will not take it over: %s (field managers: %s%s); nothing was written. "+
		"Rename the pipeline, delete the object, or, if it may be handed over, annotate it %s=%s",
		c.Object, why, mgrs, owners, urutauv1alpha1.AnnotationAdopt, p)
	return c
}

// managers are the distinct field managers of the object, sorted.
func managers(o client.Object) []string {
	var out []string
	for _, e := range o.GetManagedFields() {
		if e.Manager != "" && !slices.Contains(out, e.Manager) {
			out = append(out, e.Manager)
		}
	}
	slices.Sort(out)
	return out
}
