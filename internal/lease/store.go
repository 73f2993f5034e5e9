package lease

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// IndexPipelines indexes ReaderLeases by the UID of every pipeline they record, so a
// pipeline finds its entries wherever they are (a lease of another identity included).
const IndexPipelines = "urutau.io/lease-pipelines"

// PipelineUIDs is the index function of IndexPipelines.
func PipelineUIDs(o client.Object) []string {
	l, ok := o.(*urutauv1alpha1.ReaderLease)
	if !ok {
		return nil
	}
	uids := []string{string(l.Spec.Holder.UID)}
	for _, e := range l.Spec.Members {
		uids = append(uids, string(e.PipelineUID))
	}
	return sortedUnique(uids)
}

// ErrChanged is a lease write that lost a race with another: the reconcile starts over with
// what the other wrote.
var ErrChanged = errors.New("the reader lease changed since it was read")

// Store reads and writes ReaderLeases on the hub. Reads come from the hub's cache; every
// write carries the resourceVersion read (create: none may exist), so a decision taken on a stale
// read never lands.
type Store struct {
	// client reads through the cache and writes to the hub; live reads the API server.
	Client    client.Client
	Live      client.Reader
	Namespace string
	Owner     string
}

// get returns the lease name, or nil when there is none.
func (s *Store) Get(ctx context.Context, name string) (*urutauv1alpha1.ReaderLease, error) {
	return getLease(ctx, s.Client, s.Namespace, name)
}

// getLive is get from the API server itself: a quorum read, for the decisions a stale cache
// must not take.
func (s *Store) GetLive(ctx context.Context, name string) (*urutauv1alpha1.ReaderLease, error) {
	return getLease(ctx, s.Live, s.Namespace, name)
}

func getLease(ctx context.Context, r client.Reader, ns, name string) (*urutauv1alpha1.ReaderLease, error) {
	l := &urutauv1alpha1.ReaderLease{}
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, l)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ReaderLease %s/%s: %w", ns, name, err)
	}
	return l, nil
}

// of lists the leases that record pipeline uid (as holder or in an entry).
func (s *Store) Of(ctx context.Context, uid types.UID) ([]urutauv1alpha1.ReaderLease, error) {
	list := &urutauv1alpha1.ReaderLeaseList{}
	if err := s.Client.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingFields{IndexPipelines: string(uid)}); err != nil {
		return nil, fmt.Errorf("listing the ReaderLeases of pipeline %s: %w", uid, err)
	}
	return list.Items, nil
}

// write records next, which was planned from current (nil: there was none). It returns the
// lease as written. A lost race is ErrChanged.
func (s *Store) Write(ctx context.Context, current, next *urutauv1alpha1.ReaderLease) (*urutauv1alpha1.ReaderLease, error) {
	out := next.DeepCopy()
	out.Namespace = s.Namespace
	var err error
	if current == nil {
		out.ResourceVersion = ""
		out.Labels = map[string]string{urutauv1alpha1.LabelManagedBy: urutauv1alpha1.ManagedByFleet}
		err = s.Client.Create(ctx, out, client.FieldOwner(s.Owner))
	} else {
		out.ObjectMeta = *current.ObjectMeta.DeepCopy()
		err = s.Client.Update(ctx, out, client.FieldOwner(s.Owner))
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("%w: %s/%s: %w", ErrChanged, s.Namespace, next.Name, err)
	case err != nil:
		return nil, fmt.Errorf("writing ReaderLease %s/%s: %w", s.Namespace, next.Name, err)
	}
	return out, nil
}

// remove deletes current, if it has not changed since it was read.
func (s *Store) Remove(ctx context.Context, current *urutauv1alpha1.ReaderLease) error {
	uid, rv := current.UID, current.ResourceVersion
	err := s.Client.Delete(ctx, current, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %s/%s: %w", ErrChanged, s.Namespace, current.Name, err)
	case err != nil:
		return fmt.Errorf("deleting ReaderLease %s/%s: %w", s.Namespace, current.Name, err)
	}
	return nil
}

// MayCreateCoordinator confirms, with a quorum read, that the lease name lets pipeline uid run a
// reader in member cluster (identity id): it holds the lease and the entry is Active. Creating a
// coordinator StatefulSet starts a reader where none ran, so it never relies on the cache alone
// (a reconcile that did not write the lease may have read an old one).
func (s *Store) MayCreateCoordinator(ctx context.Context, name string, uid types.UID, cluster, id string) error {
	l, err := s.GetLive(ctx, name)
	if err != nil {
		return err
	}
	if l == nil || l.Spec.Holder.UID != uid {
		return fmt.Errorf("%w: the pipeline does not hold ReaderLease %s/%s", ErrChanged, s.Namespace, name)
	}
	for _, e := range l.Spec.Members {
		if e.PipelineUID == uid && e.Cluster == cluster && e.ClusterID == id && e.State == urutauv1alpha1.LeaseMemberActive {
			return nil
		}
	}
	return fmt.Errorf("%w: ReaderLease %s/%s has no active entry for cluster %q", ErrChanged, s.Namespace, name, cluster)
}
