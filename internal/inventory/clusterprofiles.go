package inventory

import (
	"context"
	"fmt"

	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The hub reads ClusterProfiles only in its provider namespace (see KubeconfigSecrets).
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,namespace=urutau-system,resources=clusterprofiles,verbs=list;watch

// ClusterProfiles lists the ClusterProfiles (sigs.k8s.io/cluster-inventory-api) in Namespace. The
// member name is the profile's name, which is what the clusterprofile provider engages; its labels
// and annotations are the profile's.
type ClusterProfiles struct {
	Client    client.Reader
	Namespace string
}

var _ Inventory = ClusterProfiles{}

// Members lists every ClusterProfile in Namespace, sorted by name.
func (c ClusterProfiles) Members(ctx context.Context) ([]Member, error) {
	var list clusterinventoryv1alpha1.ClusterProfileList
	if err := c.Client.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ClusterProfiles in %q: %w", c.Namespace, err)
	}
	members := make([]Member, 0, len(list.Items))
	for i := range list.Items {
		members = append(members, memberOf(&list.Items[i].ObjectMeta))
	}
	sortMembers(members)
	return members, nil
}

// EntryType is a ClusterProfile.
func (ClusterProfiles) EntryType() client.Object { return &clusterinventoryv1alpha1.ClusterProfile{} }

// IsEntry tells whether obj is a ClusterProfile in Namespace.
func (c ClusterProfiles) IsEntry(obj client.Object) bool {
	_, ok := obj.(*clusterinventoryv1alpha1.ClusterProfile)
	return ok && obj.GetNamespace() == c.Namespace
}
