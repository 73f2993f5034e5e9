package join

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/fleetview"
	"github.com/urutau-io/fleet/internal/tenancy"
)

// Annotations join writes on the member's inventory entry.
const (
	// AnnotationClusterID is the member's identity (its kube-system namespace UID).
	AnnotationClusterID = fleetview.AnnotationClusterID
	// AnnotationCredentialsExpireAt is when the hub's token for the member expires (RFC 3339):
	// run join again before then. `hub member-secret` writes the same annotation.
	AnnotationCredentialsExpireAt = fleetview.AnnotationCredentialsExpireAt
	// FieldManager owns what join writes, on the hub and in the member.
	FieldManager = "urutau-fleet-join"
)

// Options of a join.
type Options struct {
	// Name is the member's name on the hub: the Secret's name, what spec.placement.clusters lists.
	Name string
	// Labels (what clusterSelector matches) and Annotations (per-member settings) of the entry.
	Labels, Annotations map[string]string
	// HubNamespace is the hub's --cluster-provider-namespace.
	HubNamespace string
	// MemberServer and MemberCAFile override the address and CA in the member's kubeconfig.
	MemberServer, MemberCAFile string
	// Namespaces are the member's namespaces that run pipelines. Each must exist and be no system
	// namespace; join opens it to the hub (config/spoke/pipeline-namespace's RoleBinding and the
	// label urutau.io/fleet-managed=true) and checks the hub's access there.
	Namespaces []string
	// Policy is what the hub allows in member credentials (its --member-* flags): join refuses a
	// kubeconfig the hub would refuse.
	Policy credentials.Policy
	// TokenTTL is how long the hub's token is valid.
	TokenTTL time.Duration
	// DryRun prints what join would do and writes nothing.
	DryRun bool
	// Force takes over an entry of that name that records another cluster, or joins a cluster
	// already joined under another name.
	Force bool
}

// Clusters are the two clusters join talks to, with the credentials of the person running it.
type Clusters struct {
	Hub    client.Client
	Member *rest.Config
}

func (o Options) validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(o.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("member name %q: %s", o.Name, strings.Join(msgs, "; ")))
	}
	for _, k := range slices.Sorted(maps.Keys(o.Labels)) {
		for _, m := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(o.Labels[k])...) {
			errs = append(errs, fmt.Errorf("--labels %s=%s: %s", k, o.Labels[k], m))
		}
	}
	if o.TokenTTL < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--token-ttl %s: must be at least 10m (the API server's minimum)", o.TokenTTL))
	}
	if o.HubNamespace == "" {
		errs = append(errs, errors.New("--hub-namespace must not be empty"))
	}
	for _, ns := range o.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespaces %q: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

// Join makes the member a member of the fleet; it writes what it does to out.
func Join(ctx context.Context, o Options, c Clusters, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	member, err := newMember(c.Member)
	if err != nil {
		return err
	}
	id, err := member.identity(ctx)
	if err != nil {
		return err
	}
	if err := checkInventory(ctx, c.Hub, o, id); err != nil {
		return err
	}
	if err := member.checkNamespaces(ctx, o.Namespaces, o.HubNamespace); err != nil {
		return err
	}
	objs, err := SpokeObjects(o.Namespaces)
	if err != nil {
		return err
	}
	required, err := RequiredAccess(objs)
	if err != nil {
		return err
	}
	ep, err := memberEndpoint(c.Member, o.MemberServer, o.MemberCAFile)
	if err != nil {
		return err
	}
	if o.DryRun {
		printPlan(out, o, id, ep, objs, required)
		return nil
	}
	if err := member.install(ctx, objs, o.Namespaces, out); err != nil {
		return err
	}
	token, expires, err := member.token(ctx, o.TokenTTL)
	if err != nil {
		return err
	}
	kubeconfig, err := hubKubeconfig(o.Name, ep, token)
	if err != nil {
		return err
	}
	if err := screen(kubeconfig, o.Policy); err != nil {
		return err
	}
	if err := verifyWithRetry(ctx, kubeconfig, required); err != nil {
		return err
	}
	fmt.Fprintf(out, "member: the hub's identity may do all %d things config/spoke grants\n", len(required))
	if err := writeEntry(ctx, c.Hub, o, id, expires, kubeconfig); err != nil {
		return err
	}
	fmt.Fprintf(out, "hub: secret/%s written in %s: %s is a member (identity %s, token valid until %s)\n",
		o.Name, o.HubNamespace, o.Name, id, expires.Format(time.RFC3339))
	reportPlacement(ctx, c.Hub, o, out)
	return nil
}

// install applies config/spoke's objects (with the RoleBindings of the opened namespaces) and
// labels those namespaces open to the fleet.
func (m *member) install(ctx context.Context, objs []*unstructured.Unstructured, namespaces []string, out io.Writer) error {
	for _, obj := range objs {
		if err := m.apply(ctx, obj); err != nil {
			return err
		}
		fmt.Fprintf(out, "member: %s/%s applied%s\n", strings.ToLower(obj.GetKind()), obj.GetName(), in(obj.GetNamespace()))
	}
	for _, ns := range namespaces {
		note, err := m.openNamespace(ctx, ns)
		if err != nil {
			return err
		}
		if note == "" {
			fmt.Fprintf(out, "member: namespace/%s labelled %s=true and %s=%s: open to the fleet\n", ns, urutauv1alpha1.LabelFleetManaged,
				tenancy.LabelPodSecurityEnforce, tenancy.PodSecurityRestricted)
			continue
		}
		fmt.Fprintf(out, "member: namespace/%s labelled %s=true: open to the fleet\nnote: %s\n", ns, urutauv1alpha1.LabelFleetManaged, note)
	}
	return nil
}

// in is " in NS" for a namespaced object, "" otherwise.
func in(namespace string) string {
	if namespace == "" {
		return ""
	}
	return " in " + namespace
}

// checkInventory refuses to repoint an entry at another cluster, or to join one cluster twice:
// a member's identity is what the hub keeps everything about it under.
func checkInventory(ctx context.Context, hub client.Client, o Options, id string) error {
	l := &corev1.SecretList{}
	if err := hub.List(ctx, l, client.InNamespace(o.HubNamespace), client.MatchingLabels{fleetview.KubeconfigSecretLabel: "true"}); err != nil {
		return fmt.Errorf("reading the hub's members in %s: %w", o.HubNamespace, err)
	}
	for _, s := range l.Items {
		recorded := s.Annotations[AnnotationClusterID]
		switch {
		case o.Force || recorded == "":
		case s.Name == o.Name && recorded != id:
			return fmt.Errorf("member %s is another cluster (identity %s, this one is %s): leave it first, pick another name, or --force", o.Name, recorded, id)
		case s.Name != o.Name && recorded == id:
			return fmt.Errorf("this cluster is already the member %s: run join with --name %s to update it, or --force", s.Name, s.Name)
		}
	}
	return nil
}

// verifyWithRetry checks the access as the new identity, waiting a little for the bindings just
// applied to reach the member's authorizer.
func verifyWithRetry(ctx context.Context, kubeconfig []byte, required []Access) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err = VerifyAccess(ctx, cs, required)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// writeEntry server-side applies the member's kubeconfig Secret on the hub.
func writeEntry(ctx context.Context, hub client.Client, o Options, id string, expires time.Time, kubeconfig []byte) error {
	labels := map[string]any{fleetview.KubeconfigSecretLabel: "true"}
	for k, v := range o.Labels {
		labels[k] = v
	}
	annotations := map[string]any{AnnotationClusterID: id, AnnotationCredentialsExpireAt: expires.UTC().Format(time.RFC3339)}
	for k, v := range o.Annotations {
		annotations[k] = v
	}
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": o.Name, "namespace": o.HubNamespace, "labels": labels, "annotations": annotations},
		"data":     map[string]any{"kubeconfig": base64.StdEncoding.EncodeToString(kubeconfig)},
	}}
	if err := hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(s), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing the member's Secret %s/%s on the hub: %w", o.HubNamespace, o.Name, err)
	}
	return nil
}

func printPlan(out io.Writer, o Options, id string, ep endpoint, objs []*unstructured.Unstructured, required []Access) {
	fmt.Fprintf(out, "join (dry run): nothing is written.\nmember: cluster identity %s, reached by the hub at %s\n", id, ep.Server)
	for _, obj := range objs {
		fmt.Fprintf(out, "member: would apply %s/%s%s\n", strings.ToLower(obj.GetKind()), obj.GetName(), in(obj.GetNamespace()))
	}
	for _, ns := range o.Namespaces {
		fmt.Fprintf(out, "member: would label namespace/%s %s=true: open to the fleet, and %s=%s unless it enforces a level already\n",
			ns, urutauv1alpha1.LabelFleetManaged, tenancy.LabelPodSecurityEnforce, tenancy.PodSecurityRestricted)
	}
	fmt.Fprintf(out, "member: would create secret/%s in %s and a token of serviceaccount/%s bound to it, valid %s\n",
		TokenBindingSecret, SpokeNamespace, SpokeServiceAccount, o.TokenTTL)
	fmt.Fprintf(out, "member: would check %d permissions with SelfSubjectAccessReviews as that identity\n", len(required))
	fmt.Fprintf(out, "hub: would write secret/%s in %s (labels %v, annotation %s=%s)\n", o.Name, o.HubNamespace, o.Labels, AnnotationClusterID, id)
}

// member is the member cluster, as the person running join.
type member struct {
	cs kubernetes.Interface
	c  client.Client
}

func newMember(cfg *rest.Config) (*member, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the member: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("connecting to the member: %w", err)
	}
	return &member{cs: cs, c: c}, nil
}

// identity is the member's kube-system namespace UID.
func (m *member) identity(ctx context.Context) (string, error) {
	ns, err := m.cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the member's identity (namespace kube-system): %w", err)
	}
	return string(ns.UID), nil
}

func (m *member) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	if err := m.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s to the member: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// token asks the member for a token of the hub's ServiceAccount, bound to a Secret join creates:
// deleting that Secret (leave does) revokes the token before it expires.
func (m *member) token(ctx context.Context, ttl time.Duration) (string, time.Time, error) {
	binding := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: TokenBindingSecret, Namespace: SpokeNamespace,
		Labels: map[string]string{"app.kubernetes.io/managed-by": FieldManager}}}
	b, err := m.cs.CoreV1().Secrets(SpokeNamespace).Create(ctx, binding, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		b, err = m.cs.CoreV1().Secrets(SpokeNamespace).Get(ctx, TokenBindingSecret, metav1.GetOptions{})
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("creating the token's binding secret %s/%s in the member: %w", SpokeNamespace, TokenBindingSecret, err)
	}
	seconds := int64(ttl.Seconds())
	tr, err := m.cs.CoreV1().ServiceAccounts(SpokeNamespace).CreateToken(ctx, SpokeServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &seconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: b.Name, UID: b.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("requesting a token for %s/%s in the member: %w", SpokeNamespace, SpokeServiceAccount, err)
	}
	return tr.Status.Token, tr.Status.ExpirationTimestamp.Time, nil
}
