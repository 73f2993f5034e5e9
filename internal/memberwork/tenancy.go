package memberwork

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/adopt"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/ssa"
	"github.com/urutau-io/fleet/internal/status"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// Denied is the result for member m that the boundary refuses: nothing is asked of it.
func Denied(m, id string, d *tenancy.Denial) Result {
	res := Result{Retry: true, Obs: status.MemberObservation{Name: m, ClusterID: id, Phase: urutauv1alpha1.ClusterDegraded,
		Message: "not allowed by the tenancy boundary (" + d.Reason + "): " + d.Message}}
	res.EventReason, res.EventMessage = EventPlacementDenied, res.Obs.Message
	return res
}

// namespaceCheck is an ApplyJob's check of its member namespace, made before the job's first
// write and only then (a reconcile that writes nothing asks the member nothing): the namespace
// must be opened to the fleet and enforce Pod Security (or the admin allows it not to).
type namespaceCheck struct {
	once sync.Once
	err  error
}

func (c *namespaceCheck) check(ctx context.Context, j *ApplyJob) error {
	c.once.Do(func() {
		ns, err := j.Shared.namespace(ctx, j.Conn, j.Pipeline.Namespace)
		switch {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			c.err = j.Boundary.CheckUnreadableNamespace(j.Conn.Name, j.Pipeline.Namespace, apierrors.IsForbidden(err))
		case err != nil:
			c.err = fmt.Errorf("reading namespace %q in cluster %q: %w", j.Pipeline.Namespace, j.Conn.Name, err)
		default:
			c.err = j.Boundary.CheckMemberNamespace(j.Conn.Name, ns)
			if c.err == nil {
				c.err = j.Boundary.CheckMemberPodSecurity(j.HubNS, j.Member, ns)
			}
		}
	})
	return c.err
}

// GuardAdoption is an ApplyJob's check of an object that exists before the hub writes over it:
// only this pipeline's objects, the single-cluster operator's of the same CR once that CR let go
// of them (a migration), and objects handed over with urutau.io/adopt are written; anything else
// is a conflict that names the object and its managers.
func GuardAdoption(p *urutauv1alpha1.CDCPipeline) func(kind string, existing client.Object) error {
	pipeline := adopt.Pipeline{UID: p.UID, Namespace: p.Namespace, Name: p.Name}
	return func(kind string, existing client.Object) error {
		_, err := adopt.Decide(kind, existing, pipeline)
		return err
	}
}

// errSecretMissing is a Secret the pipeline references that does not exist in the member (yet).
var errSecretMissing = errors.New("secret not found")

// secretsOpen checks that every Secret the pipeline references in the member (spec.secrets.*, the
// control plane TLS Secrets, the event log's) exists and is open to pipelines; read holds those
// read already. A missing one holds the apply (errSecretMissing), optional ones too: a pod that
// mounts a Secret created later would get it whatever its labels.
func (j *ApplyJob) secretsOpen(ctx context.Context, read map[string]*corev1.Secret) error {
	for _, ref := range tenancy.SecretRefs(&j.Pipeline.Spec) {
		s, ok := read[ref.Name]
		if !ok {
			s = &corev1.Secret{}
			if err := j.Conn.Live.Get(ctx, client.ObjectKey{Namespace: j.Pipeline.Namespace, Name: ref.Name}, s); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("%w: %s names Secret %s/%s, which does not exist in cluster %q: the coordinator starts once it exists and is open to the fleet (label %s=true)",
						errSecretMissing, ref.Field, j.Pipeline.Namespace, ref.Name, j.Conn.Name, urutauv1alpha1.LabelFleetSecret)
				}
				return fmt.Errorf("reading Secret %s/%s in cluster %q: %w", j.Pipeline.Namespace, ref.Name, j.Conn.Name, err)
			}
		}
		if err := tenancy.CheckSecret(j.Conn.Name, ref, s); err != nil {
			return err
		}
	}
	return nil
}

// stopCoordinator scales the pipeline's coordinator in the member to zero, when it runs there: a
// Secret it mounts is no longer open to it (closed, or replaced by one that never opted in), and
// the kubelet would go on refreshing the mounted copy. It starts again once the Secret is open.
// The StatefulSet is read from the member itself: the note this adds to the status says what
// runs there now, which a cache one pass behind may not show. The notes are fixed texts (no
// counts, names or errors), so that a member whose pods or answers churn does not make a new
// message, a status write and a Warning on every pass.
func (j *ApplyJob) stopCoordinator(ctx context.Context, res *Result, w *coordinator.Workload) {
	sts := &appsv1.StatefulSet{}
	err := j.Conn.Live.Get(ctx, client.ObjectKey{Namespace: j.Pipeline.Namespace, Name: coordinator.CoordinatorName(j.Pipeline.Name)}, sts)
	switch {
	case apierrors.IsNotFound(err), err == nil && sts.Labels[urutauv1alpha1.LabelHubPipelineUID] != string(j.Pipeline.UID):
		return // nothing of this pipeline's to stop
	case err != nil:
		ctrl.LoggerFrom(ctx).Info("reading the coordinator to scale it to zero failed", "error", err.Error())
		res.Obs.Message += stoppingNote + notRead
		res.EventMessage = res.Obs.Message
		return
	case sts.Spec.Replicas != nil && *sts.Spec.Replicas == 0:
		// Held by an earlier pass: every pass says what is left of it.
		res.Obs.Message += j.heldNote(ctx, sts)
		res.EventMessage = res.Obs.Message
		return
	}
	// Shallow copies: only replicas differs from what the renderer made.
	stopped, spec := *w.StatefulSet, *w.StatefulSet.Spec
	stopped.Spec = spec.WithReplicas(0)
	req, err := ssa.StatefulSet(&stopped)
	if err == nil {
		err = j.apply(ctx, res, req, j.Conn.Live)
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("scaling the coordinator to zero failed", "error", err.Error())
		res.Obs.Message += stoppingNote + notScaled
		res.EventMessage = res.Obs.Message
		return
	}
	res.Obs.Message += stoppingNote + notSeenYet
	res.EventMessage = res.Obs.Message
}

// heldNote says what is left of sts, the pipeline's coordinator StatefulSet held at zero, read
// from the member: stopped once its controller has seen the scale and no pod with the
// coordinator's or its workers' labels is left in the namespace, whoever controls it (a
// StatefulSet deleted with --cascade=orphan and made again at zero leaves its pod running). The
// pods are listed as metadata, at most podsLooked per selector: a namespace full of labelled pods
// costs the same two requests.
func (j *ApplyJob) heldNote(ctx context.Context, sts *appsv1.StatefulSet) string {
	if sts.Status.ObservedGeneration < sts.Generation {
		return stoppingNote + notSeenYet
	}
	for _, sel := range readerSelectors(j.Pipeline.Name) {
		pods := &metav1.PartialObjectMetadataList{}
		pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		err := j.Conn.Live.List(ctx, pods, client.InNamespace(j.Pipeline.Namespace), client.MatchingLabels(sel), client.Limit(podsLooked))
		switch {
		case err != nil:
			ctrl.LoggerFrom(ctx).Info("listing the coordinator's pods failed", "error", err.Error())
			return stoppingNote + notRead
		case len(pods.Items) > 0:
			return stoppingNote + podsLeft
		}
	}
	return stoppedNote
}

// podsLooked bounds the pods heldNote reads per selector: one is enough to say some are left.
const podsLooked = 1

// The notes that end the message of a member whose coordinator stopCoordinator holds at zero:
// stopped, or not yet, and why.
const (
	stoppedNote  = "; its coordinator is scaled to zero until then, and no pod with its labels is left"
	stoppingNote = "; its coordinator is being scaled to zero until then"
	notSeenYet   = ": its StatefulSet controller has not seen the scale yet"
	podsLeft     = ": pods with its labels are still there"
	notRead      = ": it could not be read from the member"
	notScaled    = ": the scale to zero failed, and is tried again"
)

// workerNamesFree refuses the Role, and so the whole apply, when a name it grants the coordinator
// get and update on (a worker group's StatefulSet and Service, derived from the tables) is taken
// by an object that is not this pipeline's worker: a table named after another team's
// StatefulSet would hand that StatefulSet to the coordinator, and a ScaledObject would scale it.
// A worker is the pipeline's when its labels say so, or a pod of its coordinator owns it.
func (j *ApplyJob) workerNamesFree(ctx context.Context, w *coordinator.Workload) error {
	names := grantedWorkerNames(w)
	if err := notOwnCoordinator(names, j.Pipeline); err != nil {
		return err
	}
	taken, err := j.namedObjects(ctx, names)
	if err != nil {
		return err
	}
	for _, name := range names {
		for _, kind := range []string{"StatefulSet", "Service"} {
			obj := taken[kind+"/"+name]
			if obj == nil || workerOf(obj, j.Pipeline.Name) {
				continue
			}
			return &adopt.Conflict{Object: fmt.Sprintf("%s %s/%s", kind, j.Pipeline.Namespace, name), Message: fmt.Sprintf(
				"worker group name %q is taken by %s %s/%s, which is not a worker of this pipeline: the coordinator's Role would grant it get and update there, and KEDA would scale it; nothing was written. Rename the table's target, or the object",
				name, kind, j.Pipeline.Namespace, name)}
		}
	}
	return nil
}

// notOwnCoordinator refuses worker group names that are the pipeline's own coordinator's (a
// table whose target is "coordinator"): its ScaledObject would scale the coordinator StatefulSet
// to the table's worker count, and its Role would let the coordinator update itself: two or more
// readers of one source. The name is free when the pipeline is first placed (the coordinator is
// created in the same pass), so it cannot wait for the member to show it taken.
func notOwnCoordinator(names []string, p *urutauv1alpha1.CDCPipeline) error {
	own := coordinator.CoordinatorName(p.Name)
	if !slices.Contains(names, own) {
		return nil
	}
	return &adopt.Conflict{Object: fmt.Sprintf("StatefulSet %s/%s", p.Namespace, own), Message: fmt.Sprintf(
		"worker group name %q is this pipeline's own coordinator's name (a table targets %q): its ScaledObject would scale the coordinator and start a second reader of the source; nothing was written. Rename the table's target",
		own, strings.TrimPrefix(own, p.Name+"-"))}
}

// scalersOf refuses to create the coordinator StatefulSet name while a ScaledObject of the
// member namespace targets it: KEDA would scale it past one pod, two readers of one source. Such
// a ScaledObject is another pipeline's worker group whose name is this coordinator's (pipeline
// "shop" with a table targeting "orders.coordinator" scales "shop-orders-coordinator"), or one
// made by hand. It is read from the member itself before the create (shared with the member's
// other creates of the moment, SharedReads): the hub caches no ScaledObjects, and a cluster
// without KEDA has none.
func (j *ApplyJob) scalersOf(ctx context.Context, name string) error {
	targets, err := j.Shared.scaleTargets(ctx, j.Conn, j.Pipeline.Namespace)
	if err != nil {
		return fmt.Errorf("listing the ScaledObjects of namespace %q before creating the coordinator: %w", j.Pipeline.Namespace, err)
	}
	for _, t := range targets {
		if t.target == name && (t.kind == "" || t.kind == "StatefulSet") {
			return &adopt.Conflict{Object: fmt.Sprintf("ScaledObject %s/%s", j.Pipeline.Namespace, t.name), Message: fmt.Sprintf(
				"ScaledObject %s/%s targets StatefulSet %s, the coordinator this pipeline would create: KEDA would scale it and start a second reader of the source; nothing was written. Remove the ScaledObject, or rename the table of the pipeline that made it",
				j.Pipeline.Namespace, t.name, name)}
		}
	}
	return nil
}

// namedObjects reads the StatefulSets and Services of the pipeline's namespace that bear one of
// names, keyed "Kind/name": from the member's cache by name, or, while that may lag, with one
// LIST per kind from the member itself. The names come from the tenant's tables: a pipeline with
// many must not cost two requests each.
func (j *ApplyJob) namedObjects(ctx context.Context, names []string) (map[string]client.Object, error) {
	out := map[string]client.Object{}
	if len(names) == 0 {
		return out, nil
	}
	if j.CacheMayLag {
		return out, j.listNamed(ctx, names, out)
	}
	for _, name := range names {
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}} {
			err := j.Conn.Cached.Get(ctx, client.ObjectKey{Namespace: j.Pipeline.Namespace, Name: name}, obj)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, fmt.Errorf("reading %s/%s in cluster %q: %w", j.Pipeline.Namespace, name, j.Conn.Name, err)
			}
			out[kindName(obj)+"/"+name] = obj
		}
	}
	return out, nil
}

// listNamed adds to out the StatefulSets and Services of the pipeline's namespace in the member
// itself whose name is one of names: their metadata only, which is all workerOf reads.
func (j *ApplyJob) listNamed(ctx context.Context, names []string, out map[string]client.Object) error {
	want := sets.New(names...)
	for _, gvk := range []schema.GroupVersionKind{appsv1.SchemeGroupVersion.WithKind("StatefulSetList"), corev1.SchemeGroupVersion.WithKind("ServiceList")} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk)
		if err := j.Conn.Live.List(ctx, list, client.InNamespace(j.Pipeline.Namespace)); err != nil {
			return fmt.Errorf("listing %ss in namespace %q of cluster %q: %w", strings.TrimSuffix(gvk.Kind, "List"), j.Pipeline.Namespace, j.Conn.Name, err)
		}
		for i := range list.Items {
			if want.Has(list.Items[i].Name) {
				out[strings.TrimSuffix(gvk.Kind, "List")+"/"+list.Items[i].Name] = &list.Items[i]
			}
		}
	}
	return nil
}

// kindName is the kind of a StatefulSet or a Service.
func kindName(obj client.Object) string {
	if _, svc := obj.(*corev1.Service); svc {
		return "Service"
	}
	return "StatefulSet"
}

// grantedWorkerNames are the names the coordinator's Role grants get and update on (the worker
// groups), read from the Role the renderer made.
func grantedWorkerNames(w *coordinator.Workload) []string {
	var out []string
	for _, r := range w.Role.Rules {
		if len(r.ResourceNames) > 0 && slices.Contains(r.Verbs, "update") {
			out = append(out, r.ResourceNames...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// workerOf tells whether obj is a worker of pipeline cr: the coordinator labels its workers, and
// owns them from its pod (<cr>-coordinator-<n>).
func workerOf(obj client.Object, cr string) bool {
	l := obj.GetLabels()
	if l[urutauv1alpha1.LabelApp] == coordinator.AppWorker && l[urutauv1alpha1.LabelPipeline] == cr {
		return true
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "Pod" && strings.HasPrefix(ref.Name, coordinator.CoordinatorName(cr)+"-") {
			return true
		}
	}
	return false
}
