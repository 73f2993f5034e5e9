package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/localfleet"
)

// People's hands on members and on the inventory: what a platform engineer, a backup tool or an
// attacker with kubectl does beside the hub. The hub must undo what makes a second reader, in
// bounded time (docs/reliability.md, I5).

// handFieldManager is the field manager of the hand edits, as kubectl names its own.
const handFieldManager = "kubectl-edit"

// doHand runs the ops of people's hands and of the inventory.
func (x *executor) doHand(ctx context.Context, o Op) (bool, error) {
	switch o := o.(type) {
	case Scale:
		return true, x.scale(ctx, o)
	case HandPod:
		return true, x.handPod(ctx, o)
	case DeleteSTS:
		return true, x.deleteSTS(ctx, o)
	case EditSTS:
		return true, x.editSTS(ctx, o)
	case Export:
		return true, x.export(ctx, o)
	case Restore:
		return true, x.restore(ctx, o)
	case Label:
		return true, x.env.label(ctx, o.Member, o.On)
	case Deregister:
		return true, x.env.deregister(ctx, o.Member)
	case Register:
		return true, x.env.register(ctx, o.Member)
	case Repoint:
		return true, x.repoint(ctx, o)
	case Alias:
		return true, x.env.alias(ctx, o.Member, o.On)
	}
	return false, nil
}

// coordinatorSTS is pipeline name's coordinator StatefulSet in member, found by the live
// pipeline's UID label as the hub finds it.
func (x *executor) coordinatorSTS(ctx context.Context, member, name string) (*unstructured.Unstructured, error) {
	return x.memberObject(ctx, member, name, "statefulset")
}

// scale writes the scale subresource, as `kubectl scale` does.
func (x *executor) scale(ctx context.Context, o Scale) error {
	sts, err := x.coordinatorSTS(ctx, o.Member, o.Name)
	if err != nil {
		return err
	}
	x.touched = append(x.touched, string(sts.GetUID()))
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, o.Replicas)
	_, err = x.env.dyn[o.Member].Resource(memberObjectKinds["statefulsets"]).Namespace(sts.GetNamespace()).
		Patch(ctx, sts.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-scale"}, "scale")
	return err
}

// handPod creates a pod with the coordinator's selector labels of the live pipeline (whose
// objects need not be in the member), on the member's node: a reader no StatefulSet controls. A
// pipeline that does not exist has no labels to copy: the op fails.
func (x *executor) handPod(ctx context.Context, o HandPod) error {
	if _, err := x.get(ctx, o.Name); err != nil {
		return fmt.Errorf("copying the labels of %s: %w", o.Name, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: x.ns(o.Name), GenerateName: coordinator.CoordinatorName(o.Name) + "-by-hand-",
			Labels: coordinator.SelectorLabels(o.Name)},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "coordinator", Image: image}},
			AutomountServiceAccountToken:  utilptr.To(false),
			TerminationGracePeriodSeconds: utilptr.To(int64(coordinator.TerminationGracePeriodSeconds)),
		},
	}
	if err := x.env.members[o.Member].Create(ctx, pod, client.FieldOwner(handFieldManager)); err != nil {
		return err
	}
	x.touched = append(x.touched, string(pod.UID))
	return nil
}

// deleteSTS deletes the coordinator StatefulSet, leaving its pods with o.Orphan.
func (x *executor) deleteSTS(ctx context.Context, o DeleteSTS) error {
	sts, err := x.coordinatorSTS(ctx, o.Member, o.Name)
	if err != nil {
		return err
	}
	x.touched = append(x.touched, string(sts.GetUID()))
	policy := metav1.DeletePropagationBackground
	if o.Orphan {
		policy = metav1.DeletePropagationOrphan
	}
	uid := sts.GetUID()
	return x.env.dyn[o.Member].Resource(memberObjectKinds["statefulsets"]).Namespace(sts.GetNamespace()).Delete(ctx, sts.GetName(),
		metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
}

// editSTS changes the coordinator StatefulSet by hand.
func (x *executor) editSTS(ctx context.Context, o EditSTS) error {
	sts, err := x.coordinatorSTS(ctx, o.Member, o.Name)
	if err != nil {
		return err
	}
	x.touched = append(x.touched, string(sts.GetUID()))
	var patch string
	switch o.Edit {
	case EditTemplate:
		x.edits++
		patch = fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:"%d"}}}}}`, editAnnotation, x.edits)
	case EditUnlabel:
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, urutauv1alpha1.LabelHubPipelineUID)
	default:
		return fmt.Errorf("edit-sts: unknown edit %q (want %q or %q)", o.Edit, EditTemplate, EditUnlabel)
	}
	_, err = x.env.dyn[o.Member].Resource(memberObjectKinds["statefulsets"]).Namespace(sts.GetNamespace()).
		Patch(ctx, sts.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: handFieldManager})
	return err
}

// exportKey names an export.
func exportKey(member, name string) string { return member + "/" + name }

// export saves the live pipeline's objects in the member, without what the server sets.
func (x *executor) export(ctx context.Context, o Export) error {
	p, err := x.get(ctx, o.Name)
	if err != nil {
		return err
	}
	var saved []unstructured.Unstructured
	for _, kind := range sortedKinds() {
		list, err := x.env.dyn[o.Member].Resource(memberObjectKinds[kind]).Namespace(p.Namespace).List(ctx, listOpts(urutauv1alpha1.LabelHubPipelineUID+"="+string(p.UID)))
		if err != nil {
			return err
		}
		for i := range list.Items {
			saved = append(saved, exported(&list.Items[i]))
		}
	}
	if len(saved) == 0 {
		return fmt.Errorf("nothing of %s in %s to export", o.Name, o.Member)
	}
	x.exports[exportKey(o.Member, o.Name)] = exportedSet{uid: string(p.UID), objects: saved}
	return nil
}

// exportedSet is one Export: the pipeline UID the objects carry, and the objects.
type exportedSet struct {
	uid     string
	objects []unstructured.Unstructured
}

// exported is u as a backup keeps it: no server-set metadata, no status, no allocated IPs, no
// finalizers (the suite's own Hold is no part of a backup).
func exported(u *unstructured.Unstructured) unstructured.Unstructured {
	c := u.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation",
		"deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "finalizers", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	if c.GetKind() == "Service" {
		unstructured.RemoveNestedField(c.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(c.Object, "spec", "clusterIPs")
	}
	return *c
}

// restore creates, in o.Member, the objects of the last export of o.Name in o.From that are not
// there; it refuses an export of a pipeline that is not the live one of that name.
func (x *executor) restore(ctx context.Context, o Restore) error {
	set, ok := x.exports[exportKey(o.From, o.Name)]
	if !ok {
		return fmt.Errorf("no export of %s taken in %s", o.Name, o.From)
	}
	p, err := x.get(ctx, o.Name)
	if err != nil {
		return err
	}
	if string(p.UID) != set.uid {
		return fmt.Errorf("the export of %s is of uid %s, the live pipeline is %s: restoring it would make orphans", o.Name, short(set.uid), short(string(p.UID)))
	}
	var errs []error
	for i := range set.objects {
		u := set.objects[i].DeepCopy()
		res := x.env.dyn[o.Member].Resource(memberObjectKinds[resourceOf(u.GetKind())]).Namespace(u.GetNamespace())
		made, err := res.Create(ctx, u, metav1.CreateOptions{FieldManager: handFieldManager})
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err))
		default:
			x.touched = append(x.touched, string(made.GetUID()))
		}
	}
	return errors.Join(errs...)
}

// resourceOf is the memberObjectKinds key of a kind the hub writes.
func resourceOf(kind string) string { return strings.ToLower(kind) + "s" }

// repoint points the member's source Secrets of the history (one per namespace) at a database:
// the database a member reads does not depend on the namespace.
func (x *executor) repoint(ctx context.Context, o Repoint) error {
	c := x.env.members[o.Member]
	for _, ns := range x.nss {
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: sourceSecret}, s); err != nil {
			return err
		}
		s.Data = map[string][]byte{"uri": []byte(sourceURI(o.Member, o.DB))}
		if err := c.Update(ctx, s, client.FieldOwner(handFieldManager)); err != nil {
			return err
		}
	}
	return nil
}

// inventorySecret is the key of member's kubeconfig Secret on the hub.
func inventorySecret(member string) client.ObjectKey {
	return client.ObjectKey{Namespace: localfleet.HubNamespace, Name: member}
}

// label sets or removes the selector label on the member's inventory entry.
func (e *env) label(ctx context.Context, member string, on bool) error {
	value := "null"
	if on {
		value = strconv.Quote(selectorValue)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: localfleet.HubNamespace, Name: member}}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, selectorKey, value)
	return e.hub.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(handFieldManager))
}

// deregister removes the member's kubeconfig Secret, keeping it (with its labels) to add again.
func (e *env) deregister(ctx context.Context, member string) error {
	s := &corev1.Secret{}
	if err := e.hub.Get(ctx, inventorySecret(member), s); err != nil {
		return err
	}
	e.entries[member] = s.DeepCopy()
	uid := s.UID
	return e.hub.Delete(ctx, s, client.Preconditions{UID: &uid})
}

// register adds the member's kubeconfig Secret again, as it was when it was removed.
func (e *env) register(ctx context.Context, member string) error {
	kept := e.entries[member]
	if kept == nil {
		return fmt.Errorf("no kubeconfig Secret of %s kept", member)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kept.Namespace, Name: kept.Name, Labels: kept.Labels,
		Annotations: kept.Annotations}, Data: kept.Data, Type: kept.Type}
	return e.hub.Create(ctx, s, client.FieldOwner(handFieldManager))
}

// alias registers member's cluster under AliasOf(member) too (on): its kubeconfig Secret as the
// fleet made it, under the second name, without the selector label; or removes that entry.
func (e *env) alias(ctx context.Context, member string, on bool) error {
	key := inventorySecret(AliasOf(member))
	if !on {
		return e.hub.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	}
	kept := e.entries[member]
	if kept == nil {
		return fmt.Errorf("no kubeconfig Secret of %s kept", member)
	}
	labels := maps.Clone(kept.Labels)
	delete(labels, selectorKey)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: labels,
		Annotations: kept.Annotations}, Data: kept.Data, Type: kept.Type}
	return e.hub.Create(ctx, s, client.FieldOwner(handFieldManager))
}

// aliasesGone removes every alias entry (Heal, and before each history).
func (e *env) aliasesGone(ctx context.Context) []error {
	var errs []error
	for _, m := range Members {
		if err := e.alias(ctx, m, false); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing %s: %w", AliasOf(m), err))
		}
	}
	return errs
}

// inventoryBack registers every member that is not, and removes the selector label from every
// entry when clear: the state every history starts from (clear) and heal brings back (not
// clear: a selector placement keeps what it selects).
func (e *env) inventoryBack(ctx context.Context, clear bool) []error {
	var errs []error
	for _, m := range Members {
		err := e.hub.Get(ctx, inventorySecret(m), &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			err = e.register(ctx, m)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("registering %s: %w", m, err))
			continue
		}
		if clear {
			if err := e.label(ctx, m, false); err != nil {
				errs = append(errs, fmt.Errorf("unlabelling %s: %w", m, err))
			}
		}
	}
	return errs
}
