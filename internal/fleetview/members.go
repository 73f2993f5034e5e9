package fleetview

import (
	"maps"
	"slices"
	"strings"
	"time"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// AnnotationClusterID on an inventory entry records the member's identity (its kube-system
// namespace UID) as `hub join` found it.
const AnnotationClusterID = urutauv1alpha1.AnnotationClusterID

// AnnotationCredentialsExpireAt on an inventory entry says when the token in its kubeconfig
// expires.
const AnnotationCredentialsExpireAt = urutauv1alpha1.AnnotationCredentialsExpireAt

// Condition statuses, as Kubernetes spells them.
const (
	True    = "True"
	False   = "False"
	Unknown = "Unknown"
)

// Members lists every member: each inventory entry, plus each member that pipelines' status
// names but the inventory no longer holds. Sorted by name.
func Members(f Facts) []Member {
	placements := map[string][]Placement{}
	for _, p := range f.Pipelines {
		for _, pl := range p.Placements {
			placements[pl.Member] = append(placements[pl.Member], pl)
		}
	}
	tombstones := map[string]int{}
	for _, t := range f.Tombstones {
		tombstones[t.Member]++
	}
	entries := map[string]*Entry{}
	for i := range f.Entries {
		entries[f.Entries[i].Name] = &f.Entries[i]
	}
	names := slices.Sorted(maps.Keys(placements))
	for name := range entries {
		if _, ok := placements[name]; !ok {
			names = append(names, name)
		}
	}
	for name := range tombstones {
		if _, ok := placements[name]; !ok && entries[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)

	out := make([]Member, 0, len(names))
	for _, name := range names {
		m := observe(name, entries[name], placements[name])
		m.Tombstones = tombstones[name]
		for _, pl := range placements[name] {
			if pl.Phase == string(urutauv1alpha1.ClusterDeleting) {
				continue // being removed: no longer placed there
			}
			m.Placed++
			if pl.Phase == string(urutauv1alpha1.ClusterReady) {
				m.Ready++
			}
		}
		out = append(out, m)
	}
	return out
}

// observe is where a member's identity, reachability, engagement and last answer come from: the
// hub's health record of the member when it published one (reachable, engaged, why not, since
// when, last answer, identity). Without one (a hub that never checked it, or a user who may not
// read Leases in the hub namespace) they are inferred:
//   - identity: status.clusters[].clusterID of any pipeline placed there, else the entry's
//     urutau.io/cluster-id annotation (written by `hub join`);
//   - reachable: a ClusterProfile's ControlPlaneHealthy condition when it has one, else the phase
//     of the member's most recently changed placement (Unreachable: False; Orphaned, no
//     placement: Unknown; any other: True);
//   - engaged: whether the hub's inventory holds the member (the hub engages every entry it lists);
//   - last answer: the latest change of a placement there into a phase other than Unreachable (or
//     of a healthy ClusterProfile condition).
func observe(name string, e *Entry, placements []Placement) Member {
	m := inferred(name, e, placements)
	if e == nil || e.Deleting || e.Health == nil {
		return m
	}
	h := e.Health
	m.Reachable, m.Message, m.CheckInterval.Duration = h.Reachable, h.Message, h.Interval
	if h.Engaged == False {
		m.Engaged = False
	}
	if h.Identity != "" {
		m.Identity = h.Identity
	}
	if !h.Since.IsZero() {
		since := h.Since
		m.ReachableSince = &since
	}
	m.LastAnswer = nil
	if h.Reachable != True && !h.LastAnswer.IsZero() {
		last := h.LastAnswer
		m.LastAnswer = &last
	}
	return m
}

// inferred is a member as pipelines' status and its entry show it (see observe).
func inferred(name string, e *Entry, placements []Placement) Member {
	m := Member{Name: name, Reachable: Unknown, Engaged: False, Source: "status"}
	if e != nil && !e.Deleting {
		m.Engaged = True
	}
	if e != nil {
		m.Source, m.Labels, m.Identity = e.Kind, e.Labels, e.Annotations[AnnotationClusterID]
		if at, err := time.Parse(time.RFC3339, e.Annotations[AnnotationCredentialsExpireAt]); err == nil {
			m.CredentialsExpireAt = &at
		}
	}
	var latest Placement
	for _, pl := range placements {
		if pl.ClusterID != "" {
			m.Identity = pl.ClusterID
		}
		if latest.Phase == "" || pl.LastTransition.After(latest.LastTransition) {
			latest = pl
		}
		answered := pl.Phase != string(urutauv1alpha1.ClusterUnreachable) && pl.Phase != string(urutauv1alpha1.ClusterOrphaned)
		if answered && !pl.LastTransition.IsZero() {
			m.LastAnswer = later(m.LastAnswer, pl.LastTransition)
		}
	}
	switch {
	case e != nil && e.Healthy != "":
		m.Reachable = e.Healthy
		if e.Healthy == True && !e.HealthChanged.IsZero() {
			m.LastAnswer = later(m.LastAnswer, e.HealthChanged)
		}
	case latest.Phase == string(urutauv1alpha1.ClusterUnreachable):
		m.Reachable = False
	case latest.Phase == string(urutauv1alpha1.ClusterOrphaned):
		// Out of the inventory: the hub no longer asks it anything.
	case latest.Phase != "":
		m.Reachable = True
	}
	return m
}

func later(t *time.Time, u time.Time) *time.Time {
	if t == nil || u.After(*t) {
		return &u
	}
	return t
}

// PlacementRows lists the placements of the pipelines (all of f's, or only the one named), one
// row per pipeline and member; a pipeline placed nowhere gets one row with member "" and the
// Ready condition's reason as its phase. Sorted by namespace, pipeline, member.
func PlacementRows(f Facts) []PlacementRow {
	var rows []PlacementRow
	for _, p := range f.Pipelines {
		if len(p.Placements) == 0 {
			rows = append(rows, PlacementRow{Namespace: p.Namespace, Pipeline: p.Name, Phase: orUnknown(p.ReadyReason),
				Generation: p.Generation, Message: p.ReadyMessage})
			continue
		}
		for _, pl := range p.Placements {
			row := PlacementRow{Namespace: p.Namespace, Pipeline: p.Name, Member: pl.Member, Phase: pl.Phase,
				Generation: p.Generation, ObservedGeneration: pl.ObservedGeneration, ReadyReplicas: pl.ReadyReplicas, Message: pl.Message}
			if !pl.LastTransition.IsZero() {
				row.Since = &pl.LastTransition
			}
			if pl.Member == p.FailoverMember {
				row.Failover = p.Failover
			}
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(a, b PlacementRow) int {
		return strings.Compare(a.Namespace+"/"+a.Pipeline+"/"+a.Member, b.Namespace+"/"+b.Pipeline+"/"+b.Member)
	})
	return rows
}

func orUnknown(s string) string {
	if s == "" {
		return Unknown
	}
	return s
}

// MembersHealthy is true when no member is unreachable and every member is engaged.
func MembersHealthy(members []Member) bool {
	return !slices.ContainsFunc(members, func(m Member) bool { return m.Reachable == False || m.Engaged != True })
}

// PipelinesHealthy is true when every pipeline is Ready and none is terminated.
func PipelinesHealthy(pipelines []Pipeline) bool {
	return !slices.ContainsFunc(pipelines, func(p Pipeline) bool { return p.Ready != True || p.Terminated != "" })
}
