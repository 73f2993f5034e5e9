package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/fleetview"
)

// AnnotationDraining marks an inventory entry that leave is draining: its labels are gone so no
// selector places pipelines there any more.
const AnnotationDraining = "urutau.io/draining"

// LeaveOptions of a leave.
type LeaveOptions struct {
	Name, HubNamespace string
	// Drain moves the pipelines off the member first: the entry loses its labels (selectors stop
	// matching), the member's name is removed from spec.placement.clusters, and leave waits up to
	// DrainTimeout for the hub to remove every workload from the member.
	Drain        bool
	DrainTimeout time.Duration
	// KeepSpoke leaves config/spoke, and the namespaces opened to the hub, as they are in the
	// member (the token is revoked all the same).
	KeepSpoke bool
	// Force removes the entry even with tombstones pending for the member (they would wait
	// forever: the hub replays tombstones only for members in its inventory).
	Force  bool
	DryRun bool
}

// Leave removes a member: refused while pipelines are placed there (unless Drain), then the
// entry on the hub, then the token's binding and config/spoke in the member (when member is
// not nil: a member that is gone for good cannot be cleaned).
func Leave(ctx context.Context, o LeaveOptions, hub client.Client, member *rest.Config, out io.Writer) error {
	entry := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: o.HubNamespace, Name: o.Name}, entry); err != nil {
		return fmt.Errorf("member %s: %w", o.Name, err)
	}
	placed, err := placedOn(ctx, hub, o.HubNamespace, o.Name)
	if err != nil {
		return err
	}
	if len(placed) > 0 && !o.Drain {
		return fmt.Errorf("%d pipelines are placed on %s (%s): change their placement, or leave with --drain", len(placed), o.Name, strings.Join(placed, ", "))
	}
	if o.DryRun {
		fmt.Fprintf(out, "leave (dry run): nothing is written.\nhub: %d pipelines placed on %s %v; would delete secret/%s in %s\n", len(placed), o.Name, placed, o.Name, o.HubNamespace)
		return nil
	}
	if len(placed) > 0 {
		if err := drain(ctx, hub, o, entry, out); err != nil {
			return err
		}
	}
	if err := checkTombstones(ctx, hub, o); err != nil {
		return err
	}
	if err := hub.Delete(ctx, entry); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the member's Secret: %w", err)
	}
	fmt.Fprintf(out, "hub: secret/%s deleted: %s is no longer a member\n", o.Name, o.Name)
	if member == nil {
		fmt.Fprintln(out, "member: not contacted: its token stays valid until it expires, and config/spoke stays")
		return nil
	}
	return cleanMember(ctx, member, o, out)
}

// placedOn lists the pipelines (namespace/name) that may hold objects on the member: their spec
// places them there, their status names it, or a ReaderLease entry of theirs records it (the hub
// removes that entry once the member holds nothing of the pipeline).
func placedOn(ctx context.Context, hub client.Client, hubNamespace, name string) ([]string, error) {
	l := &urutauv1alpha1.CDCPipelineList{}
	if err := hub.List(ctx, l); err != nil {
		return nil, fmt.Errorf("listing CDCPipelines: %w", err)
	}
	leases := &urutauv1alpha1.ReaderLeaseList{}
	if err := hub.List(ctx, leases, client.InNamespace(hubNamespace)); err != nil {
		return nil, fmt.Errorf("listing ReaderLeases: %w", err)
	}
	leased := map[string]bool{} // pipeline UIDs with an entry on the member
	for _, lease := range leases.Items {
		for _, e := range lease.Spec.Members {
			if e.Cluster == name {
				leased[string(e.PipelineUID)] = true
			}
		}
	}
	var out []string
	for _, p := range l.Items {
		names := slices.Clone(p.Status.Inventory)
		names = append(names, p.Spec.Placement.Clusters...)
		for _, c := range p.Status.Clusters {
			names = append(names, c.Name)
		}
		if slices.Contains(names, name) || leased[string(p.UID)] {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out, nil
}

// drain cordons the entry, takes the member out of explicit placements, and waits for the hub to
// empty it.
func drain(ctx context.Context, hub client.Client, o LeaveOptions, entry *corev1.Secret, out io.Writer) error {
	patch := client.MergeFrom(entry.DeepCopy())
	entry.Labels = map[string]string{fleetview.KubeconfigSecretLabel: "true"}
	if entry.Annotations == nil {
		entry.Annotations = map[string]string{}
	}
	entry.Annotations[AnnotationDraining] = "true"
	if err := hub.Patch(ctx, entry, patch); err != nil {
		return fmt.Errorf("removing the labels of %s so no selector places pipelines there: %w", o.Name, err)
	}
	fmt.Fprintf(out, "hub: secret/%s has no labels any more: no clusterSelector matches it\n", o.Name)
	l := &urutauv1alpha1.CDCPipelineList{}
	if err := hub.List(ctx, l); err != nil {
		return err
	}
	for i := range l.Items {
		p := &l.Items[i]
		if !slices.Contains(p.Spec.Placement.Clusters, o.Name) {
			continue
		}
		before := client.MergeFrom(p.DeepCopy())
		p.Spec.Placement.Clusters = slices.DeleteFunc(p.Spec.Placement.Clusters, func(c string) bool { return c == o.Name })
		if err := hub.Patch(ctx, p, before); err != nil {
			return fmt.Errorf("removing %s from the placement of %s/%s: %w", o.Name, p.Namespace, p.Name, err)
		}
		fmt.Fprintf(out, "hub: cdcpipeline/%s in %s: %s removed from spec.placement.clusters\n", p.Name, p.Namespace, o.Name)
	}
	return waitDrained(ctx, hub, o, out)
}

func waitDrained(ctx context.Context, hub client.Client, o LeaveOptions, out io.Writer) error {
	deadline := time.Now().Add(o.DrainTimeout)
	for {
		placed, err := placedOn(ctx, hub, o.HubNamespace, o.Name)
		if err != nil {
			return err
		}
		if len(placed) == 0 {
			fmt.Fprintf(out, "hub: no pipeline holds anything on %s any more\n", o.Name)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %d pipelines still hold objects on %s (%s); the entry stays, without labels: `kubectl urutau status` shows why",
				o.DrainTimeout, len(placed), o.Name, strings.Join(placed, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// checkTombstones refuses while the hub still has to clean deleted pipelines on the member: the
// entries of its ReaderLeases whose pipeline is gone are replayed only while the member is in
// the inventory.
func checkTombstones(ctx context.Context, hub client.Client, o LeaveOptions) error {
	leases := &urutauv1alpha1.ReaderLeaseList{}
	if err := hub.List(ctx, leases, client.InNamespace(o.HubNamespace)); err != nil {
		return fmt.Errorf("listing ReaderLeases: %w", err)
	}
	pipelines := &urutauv1alpha1.CDCPipelineList{}
	if err := hub.List(ctx, pipelines); err != nil {
		return fmt.Errorf("listing CDCPipelines: %w", err)
	}
	var live []fleetview.Pipeline
	for _, p := range pipelines.Items {
		live = append(live, fleetview.Pipeline{UID: string(p.UID)})
	}
	n := 0
	for _, t := range fleetview.Tombstones(leases.Items, live) {
		if t.Member == o.Name {
			n++
		}
	}
	if n > 0 && !o.Force {
		return fmt.Errorf("%d tombstones wait for %s to answer (deleted pipelines may still run there); they are replayed only while it is a member: wait, or --force", n, o.Name)
	}
	return nil
}

// cleanMember revokes the token, closes the namespaces opened to the fleet and removes
// config/spoke from the member.
func cleanMember(ctx context.Context, cfg *rest.Config, o LeaveOptions, out io.Writer) error {
	m, err := newMember(cfg)
	if err != nil {
		return err
	}
	var errs []error
	err = m.cs.CoreV1().Secrets(SpokeNamespace).Delete(ctx, TokenBindingSecret, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		fmt.Fprintf(out, "member: secret/%s deleted: the hub's token is revoked\n", TokenBindingSecret)
	} else {
		errs = append(errs, fmt.Errorf("revoking the hub's token (secret %s/%s): %w", SpokeNamespace, TokenBindingSecret, err))
	}
	if o.KeepSpoke {
		return errors.Join(errs...)
	}
	if err := m.closeNamespaces(ctx, out); err != nil {
		errs = append(errs, err)
	}
	objs, err := SpokeObjects(nil)
	if err != nil {
		return err
	}
	slices.Reverse(objs) // bindings before roles, the namespace last
	for _, obj := range objs {
		if err := m.c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting %s %s in the member: %w", obj.GetKind(), obj.GetName(), err))
			continue
		}
		fmt.Fprintf(out, "member: %s/%s deleted\n", strings.ToLower(obj.GetKind()), obj.GetName())
	}
	return errors.Join(errs...)
}
