package lease

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// OwnEntries are the entries of pipeline uid in lease l.
func OwnEntries(l *urutauv1alpha1.ReaderLease, uid types.UID) []urutauv1alpha1.LeaseMember {
	if l == nil {
		return nil
	}
	var out []urutauv1alpha1.LeaseMember
	for _, e := range l.Spec.Members {
		if e.PipelineUID == uid {
			out = append(out, e)
		}
	}
	return out
}

// OwnIdentity is the identity of the cluster an Active or Drained entry of pipeline uid names
// member by, "" when there is none.
func OwnIdentity(l *urutauv1alpha1.ReaderLease, uid types.UID, member string) string {
	for _, e := range OwnEntries(l, uid) {
		if e.Cluster == member && e.State != urutauv1alpha1.LeaseMemberGone {
			return e.ClusterID
		}
	}
	return ""
}

// Records tells whether lease l still records something of pipeline uid: an entry, or the
// holder's claim.
func Records(l *urutauv1alpha1.ReaderLease, uid types.UID) bool {
	return l.Spec.Holder.UID == uid || slices.ContainsFunc(l.Spec.Members, func(e urutauv1alpha1.LeaseMember) bool { return e.PipelineUID == uid })
}

// DepartedEntries are the entries of pipeline uid on members it no longer runs on.
func DepartedEntries(l *urutauv1alpha1.ReaderLease, uid types.UID, targets map[string]string) []urutauv1alpha1.LeaseMember {
	var out []urutauv1alpha1.LeaseMember
	for _, e := range OwnEntries(l, uid) {
		if targets[e.Cluster] != e.ClusterID {
			out = append(out, e)
		}
	}
	return out
}

// FollowRenames returns l with every entry moved to the name its cluster is registered under now
// (a renamed inventory entry: the same cluster), or l itself when none moved. An entry goes to
// the target of that identity when the pipeline has one (one cluster, one set of objects, whatever
// its names), else to the one registered name with that identity; two entries that become one
// keep the state that counts more (Active over Drained over Gone). accepted are names whose new
// identity a person accepted: their entries of the old identity follow it to where it is
// registered now, to be emptied there. unknown are registered names whose identity is not known
// (they have not answered since this hub started): their entries stay where they are.
func FollowRenames(l *urutauv1alpha1.ReaderLease, targets, ids map[string]string, unknown, accepted sets.Set[string]) *urutauv1alpha1.ReaderLease {
	if l == nil {
		return nil
	}
	next := l.DeepCopy()
	moved := false
	for i, e := range next.Spec.Members {
		if name := renamedTo(e, targets, ids, unknown.Has(e.Cluster), accepted.Has(e.Cluster)); name != "" && name != e.Cluster {
			next.Spec.Members[i].Cluster, moved = name, true
		}
	}
	if !moved {
		return l
	}
	next.Spec.Members = mergeEntries(next.Spec.Members)
	return next
}

// renamedTo is the name entry e's cluster goes by now, "" when it cannot be told. A live
// pipeline (targets set) follows its cluster only to a member it is placed on: an entry whose
// name left the inventory is never moved to another registration of that cluster the pipeline is
// not placed on, where it would be emptied (removing an inventory entry never deletes anything).
// A gone pipeline's entries (targets nil) follow their cluster to its one registered name, to be
// emptied there, and so do the entries of a name whose new identity a person accepted (replaced):
// accepting a new cluster under that name means leaving the old one, and the old one answers
// under its other name.
//
// An entry never leaves a registered name whose identity is unknown (it has not answered since
// this hub started): an identity is what a member's API server says, and a member that answers
// with another's while that other cannot be asked is not told apart from an impostor. Moving the
// entry there would have the impostor emptied in its stead and free the source while the real
// cluster may still run a reader. (Both names answering with one identity is the documented
// rename, new entry first and old one deleted after: the entry follows the target, so the
// cluster is neither emptied nor restarted.)
func renamedTo(e urutauv1alpha1.LeaseMember, targets, ids map[string]string, unknown, replaced bool) string {
	if unknown && !replaced {
		return e.Cluster
	}
	for _, t := range sortedKeys(targets) {
		if targets[t] == e.ClusterID {
			return t
		}
	}
	if (targets != nil && !replaced) || ids[e.Cluster] == e.ClusterID {
		return e.Cluster
	}
	if names := AnsweringAs(ids, e.ClusterID); len(names) == 1 {
		return names[0]
	}
	return ""
}

// mergeEntries keeps one entry per key, the one whose state counts more.
func mergeEntries(entries []urutauv1alpha1.LeaseMember) []urutauv1alpha1.LeaseMember {
	rank := map[urutauv1alpha1.LeaseMemberState]int{urutauv1alpha1.LeaseMemberActive: 3, urutauv1alpha1.LeaseMemberDrained: 2, urutauv1alpha1.LeaseMemberGone: 1}
	at := map[Key]int{}
	var out []urutauv1alpha1.LeaseMember
	for _, e := range entries {
		if i, dup := at[KeyOf(e)]; dup {
			if rank[e.State] > rank[out[i].State] {
				out[i] = e
			}
			continue
		}
		at[KeyOf(e)] = len(out)
		out = append(out, e)
	}
	return out
}

// AnsweringAs are the registered names answering with identity id, sorted.
func AnsweringAs(ids map[string]string, id string) []string {
	var out []string
	for _, n := range sortedKeys(ids) {
		if ids[n] == id {
			out = append(out, n)
		}
	}
	return out
}

// AcceptedGone are the names of accepted (a new identity accepted under that name) whose old
// clusters count as gone for this pipeline, whose entries are own: accepting a new cluster under
// a name says nothing of the old one when it still answers under other registered names, where
// FollowRenames could not take the entry (more than one such name). Such an Active entry keeps
// holding the move: the old cluster may still run a reader. Entries in other states, or of other
// pipelines, are not settled by a confirmation (Plan) and change nothing here.
func AcceptedGone(accepted sets.Set[string], own []urutauv1alpha1.LeaseMember, ids map[string]string) sets.Set[string] {
	out := accepted.Clone()
	for _, e := range own {
		if e.State == urutauv1alpha1.LeaseMemberActive && out.Has(e.Cluster) && ids[e.Cluster] != e.ClusterID && len(AnsweringAs(ids, e.ClusterID)) > 0 {
			out.Delete(e.Cluster)
		}
	}
	return out
}

// IdentityMoved says why an entry whose name reaches another cluster (identity id) now is not
// emptied: its own cluster answers under no registered name, or under names this pipeline is not
// placed on. With one such name the entry follows its cluster there once a platform admin
// accepts the new identity of its name while the placement selects it (renamedTo); with more,
// nothing tells which to empty. ids are the identities answering, by name.
func IdentityMoved(e urutauv1alpha1.LeaseMember, id string, ids map[string]string) string {
	msg := fmt.Sprintf("cluster %q now answers as identity %s; this pipeline's objects went to identity %s", e.Cluster, id, e.ClusterID)
	names := AnsweringAs(ids, e.ClusterID)
	switch len(names) {
	case 0:
		return msg + ", which the hub cannot reach"
	case 1:
		return msg + fmt.Sprintf(", which answers as cluster %q, where this pipeline is not placed: they are left as they are, and the move waits, until a platform admin accepts the new identity of %q (annotate its inventory entry %s=%s) while the placement selects %q; they are removed from %q then",
			names[0], e.Cluster, urutauv1alpha1.AnnotationClusterID, id, e.Cluster, names[0])
	}
	return msg + fmt.Sprintf(", which answers as clusters %s, where this pipeline is not placed: the hub cannot tell which of them to empty, and the move waits; remove them from that cluster by hand (objects labelled %s=%s, and pods labelled %s=%s: wait until none is left), then confirm %q gone (%s)",
		quoted(names), urutauv1alpha1.LabelHubPipelineUID, e.PipelineUID, urutauv1alpha1.LabelPipeline, e.PipelineName, e.Cluster, urutauv1alpha1.AnnotationConfirmGone)
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// WithEntry is current with entry added, or a new lease of that name held by holder with it; nil
// when an entry with entry's key is there already.
func WithEntry(current *urutauv1alpha1.ReaderLease, name string, source *urutauv1alpha1.SourceIdentity, holder urutauv1alpha1.PipelineRef, entry urutauv1alpha1.LeaseMember) *urutauv1alpha1.ReaderLease {
	next := current.DeepCopy()
	if next == nil {
		next = &urutauv1alpha1.ReaderLease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       urutauv1alpha1.ReaderLeaseSpec{Source: source.DeepCopy(), Holder: holder},
		}
	}
	for _, e := range next.Spec.Members {
		if KeyOf(e) == KeyOf(entry) {
			return nil
		}
	}
	next.Spec.Members = append(next.Spec.Members, entry)
	SortEntries(next.Spec.Members)
	return next
}
