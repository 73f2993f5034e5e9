package inventory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"
)

// The hub reads kubeconfig Secrets only in its provider namespace (urutau-system by default; a
// different --cluster-provider-namespace needs the generated Role moved there).
// +kubebuilder:rbac:groups="",namespace=urutau-system,resources=secrets,verbs=list;watch

// Kubeconfig Secret contract, shared with multicluster-runtime's kubeconfig provider (its exported
// defaults, so the two can never disagree).
const (
	// KubeconfigSecretLabel marks a Secret as a member's kubeconfig; its value must be "true".
	KubeconfigSecretLabel = kubeconfig.DefaultKubeconfigSecretLabel
	// KubeconfigSecretKey is the Secret data key holding the kubeconfig.
	KubeconfigSecretKey = kubeconfig.DefaultKubeconfigSecretKey
)

// KubeconfigSecrets lists the members of multicluster-runtime's kubeconfig provider: the Secrets in
// Namespace labelled KubeconfigSecretLabel=true. The member name is the Secret's name; its labels
// and annotations are the Secret's.
type KubeconfigSecrets struct {
	Client    client.Reader
	Namespace string
}

var _ Inventory = KubeconfigSecrets{}

// Members lists every kubeconfig Secret, sorted by name.
func (k KubeconfigSecrets) Members(ctx context.Context) ([]Member, error) {
	var list corev1.SecretList
	if err := k.Client.List(ctx, &list, client.InNamespace(k.Namespace),
		client.MatchingLabels{KubeconfigSecretLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing kubeconfig Secrets in %q: %w", k.Namespace, err)
	}
	members := make([]Member, 0, len(list.Items))
	for i := range list.Items {
		members = append(members, memberOf(&list.Items[i].ObjectMeta))
	}
	sortMembers(members)
	return members, nil
}

// EntryType is a Secret.
func (KubeconfigSecrets) EntryType() client.Object { return &corev1.Secret{} }

// IsEntry tells whether obj is a kubeconfig Secret in Namespace.
func (k KubeconfigSecrets) IsEntry(obj client.Object) bool {
	_, ok := obj.(*corev1.Secret)
	return ok && obj.GetNamespace() == k.Namespace && obj.GetLabels()[KubeconfigSecretLabel] == "true"
}

// NewKubeconfigSecret is the Secret that makes a member named name known to the kubeconfig provider
// (and to KubeconfigSecrets) in namespace. labels are the member's inventory labels (what
// clusterSelector matches); annotations carry per-member settings such as
// KEDAPrometheusAddressKey.
func NewKubeconfigSecret(namespace, name string, kubeconfig []byte, labels, annotations map[string]string) *corev1.Secret {
	l := maps.Clone(labels)
	if l == nil {
		l = map[string]string{}
	}
	l[KubeconfigSecretLabel] = "true"
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        name,
			Labels:      l,
			Annotations: maps.Clone(annotations),
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KubeconfigSecretKey: kubeconfig},
	}
}

func memberOf(meta *metav1.ObjectMeta) Member {
	return Member{Name: meta.Name, Labels: meta.Labels, Annotations: meta.Annotations, Namespace: meta.Namespace, UID: meta.UID}
}

func sortMembers(members []Member) {
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
}
