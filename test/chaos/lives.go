package chaos

import (
	"fmt"
	"slices"
	"sort"
)

// podLife is what the recording proves about one coordinator pod: the revisions of its
// cluster between which it was created and deleted, and from them (through the cluster's
// clock) when it surely existed and when it may have existed. A pod is a reader in every phase,
// Pending and Terminating included.
type podLife struct {
	Cluster, Namespace, Name, UID string
	// Owner is its StatefulSet; Pipeline the hub pipeline UID that StatefulSet carries.
	Owner, Pipeline string
	// Revisions: created in [cLo, cHi], deleted in [dLo, dHi] (dHi = maxRV: not seen deleted).
	cLo, cHi, dLo, dHi int64
	// PipelineName is its urutau.io/pipeline label.
	PipelineName string
	// Terminating was seen (a deletionTimestamp while it still existed).
	Terminating bool
	Phases      []string
	// Sure: it existed all along; Maybe: it may have existed at any moment of it.
	Sure, Maybe span
	// hand is set when a person's op made this reader (nil: the hub's, as far as the checker
	// knows).
	hand *handMark
	// Fenced: the pod runs its coordinator under the fence; fence is set once its life was cut
	// to where the simulated fence let the reader run (fence.go). Command is its command line
	// (nil in recordings made before it was recorded).
	Fenced  bool
	Command []string
	fence   *fenceRuns
}

// judged is the part of Sure the invariants judge: a reader a person made is the hub's to stop
// by its deadline, not to prevent, so its overlaps count from then on.
func (p *podLife) judged() span {
	if p.hand == nil {
		return p.Sure
	}
	return span{max(p.Sure.from, p.hand.Deadline), p.Sure.to}
}

// judgedMaybe is Maybe cut as judged cuts Sure.
func (p *podLife) judgedMaybe() span {
	if p.hand == nil {
		return p.Maybe
	}
	return span{max(p.Maybe.from, p.hand.Deadline), p.Maybe.to}
}

func (p *podLife) String() string {
	state := ""
	if p.Terminating {
		state = ", seen terminating"
	}
	if p.fence != nil {
		state += fmt.Sprintf(", fenced: the pod surely existed %s, possibly %s; as a reader, cut by the simulated fence", p.fence.PodSure, p.fence.PodMaybe)
	}
	if p.hand != nil {
		state += fmt.Sprintf(", made by hand by op #%02d (%s), the hub's to stop by %s", p.hand.Op, p.hand.Kind, stampString(p.hand.Deadline))
	}
	return fmt.Sprintf("pod %s in %s (uid %s, phases %v%s): surely existed %s, possibly %s; created at revision %s, deleted at %s",
		p.Name, p.Cluster, short(p.UID), p.Phases, state, p.Sure, p.Maybe, rvRange(p.cLo, p.cHi), rvRange(p.dLo, p.dHi))
}

func rvRange(lo, hi int64) string {
	switch {
	case hi >= maxRV:
		return fmt.Sprintf("> %d (not seen deleted)", lo-1)
	case lo == hi:
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

func short(uid string) string {
	if len(uid) > 8 {
		return uid[:8]
	}
	return uid
}

// podLives derives every coordinator pod's life from the recording, one life per pipeline the
// pod belonged to (see splitByOwner). A pod whose StatefulSet never carried a pipeline (none owns
// it: made by hand, or left by a StatefulSet deleted with --cascade=orphan before the recorder saw
// it) is tied to a pipeline by its name label (tie).
func podLives(rec *Recording, clocks map[string]*clock, owners map[string][]labelVersion, tie func(name string, at Stamp) string) []*podLife {
	byKey := map[string]*podLife{}
	get := func(cluster, uid string) *podLife {
		k := cluster + "/" + uid
		if byKey[k] == nil {
			byKey[k] = &podLife{Cluster: cluster, UID: uid, cLo: 0, cHi: maxRV, dLo: 0, dHi: maxRV}
		}
		return byKey[k]
	}
	for _, e := range rec.Events {
		if e.Kind != kindPods {
			continue
		}
		p := get(e.Cluster, e.Obj.UID)
		p.Name, p.Namespace = e.Obj.Name, e.Obj.Namespace
		if e.Obj.Owner != "" {
			p.Owner = e.Obj.Owner
		}
		if e.Obj.PipelineName != "" {
			p.PipelineName = e.Obj.PipelineName
		}
		p.Fenced = p.Fenced || e.Obj.Fenced
		if e.Obj.Command != nil {
			p.Command = e.Obj.Command
		}
		p.Terminating = p.Terminating || (e.Obj.Deleting && e.Type != Deleted)
		if e.Obj.Phase != "" && !slices.Contains(p.Phases, e.Obj.Phase) {
			p.Phases = append(p.Phases, e.Obj.Phase)
		}
		switch e.Type {
		case Added:
			p.cLo = max(p.cLo, e.RVLo)
			p.present(e.Obj.RV)
		case Modified:
			p.present(e.Obj.RV)
		case Deleted:
			p.dLo, p.dHi = max(p.dLo, e.RVLo), min(p.dHi, e.RVHi)
		}
	}
	for _, s := range rec.Samples {
		if s.Kind != kindPods || s.Cluster == hubCluster {
			continue
		}
		for _, uid := range s.Present {
			get(s.Cluster, uid).present(s.RV)
		}
	}
	refineByAbsence(rec.Samples, byKey)
	out := make([]*podLife, 0, len(byKey))
	for _, p := range byKey {
		c := clocks[p.Cluster]
		p.Sure = span{c.before(p.cHi), c.after(p.dLo)}
		p.Maybe = span{c.after(p.cLo), c.before(p.dHi)}
		lives := splitByOwner(p, owners[p.Owner], c)
		for _, l := range lives {
			if l.Pipeline == "" && l.PipelineName != "" && tie != nil {
				l.Pipeline = tie(l.PipelineName, l.Maybe.from)
			}
		}
		out = append(out, lives...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Sure.from != out[j].Sure.from {
			return out[i].Sure.from < out[j].Sure.from
		}
		return out[i].Cluster+out[i].UID < out[j].Cluster+out[j].UID
	})
	return out
}

// refineByAbsence narrows both ends of every life: a pod missing from a list was not created yet
// (the list is older than a revision it was seen at), or was deleted.
func refineByAbsence(samples []Sample, byKey map[string]*podLife) {
	for _, s := range samples {
		if s.Kind != kindPods || s.Cluster == hubCluster {
			continue
		}
		for _, p := range byKey {
			if p.Cluster != s.Cluster || slices.Contains(s.Present, p.UID) || p.cHi == maxRV {
				continue
			}
			if s.RV < p.cHi {
				p.cLo = max(p.cLo, s.RV+1)
			} else {
				p.dHi = min(p.dHi, s.RV)
			}
		}
	}
}

// present records that the pod existed at revision rv.
func (p *podLife) present(rv int64) {
	p.cHi = min(p.cHi, rv)
	p.dLo = max(p.dLo, rv+1)
}

// labelVersion is a pipeline UID a StatefulSet carried from a revision in [rvLo, rvHi] on.
type labelVersion struct {
	rvLo, rvHi int64
	uid        string
}

// ownerPipelines is, for every StatefulSet seen in a member, the pipeline UIDs it carried in
// revision order. A StatefulSet changes pipeline when a re-created pipeline of the same name
// applies over the old one's (then its running pod changes pipeline with it).
func ownerPipelines(rec *Recording) map[string][]labelVersion {
	out := map[string][]labelVersion{}
	for _, e := range rec.Events {
		if e.Kind == "statefulsets" && e.Type != Deleted && e.Obj.PipelineUID != "" {
			out[e.Obj.UID] = append(out[e.Obj.UID], labelVersion{e.RVLo, e.RVHi, e.Obj.PipelineUID})
		}
	}
	for k, vs := range out {
		sort.SliceStable(vs, func(i, j int) bool { return vs[i].rvHi < vs[j].rvHi })
		var merged []labelVersion
		for _, v := range vs {
			if len(merged) > 0 && merged[len(merged)-1].uid == v.uid {
				continue
			}
			merged = append(merged, v)
		}
		out[k] = merged
	}
	return out
}

// lastOwner is the pipeline a StatefulSet carried last.
func lastOwner(vs []labelVersion) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1].uid
}

// splitByOwner cuts a pod's life where its StatefulSet changed pipeline: the part while the
// StatefulSet surely carried a pipeline is that pipeline's for sure, the part while it may have
// is that pipeline's maybe.
func splitByOwner(p *podLife, vs []labelVersion, c *clock) []*podLife {
	if len(vs) <= 1 {
		p.Pipeline = lastOwner(vs)
		return []*podLife{p}
	}
	var out []*podLife
	for i, v := range vs {
		seg := *p
		seg.Pipeline = v.uid
		if i > 0 {
			seg.Sure.from = max(seg.Sure.from, c.before(v.rvHi))
			seg.Maybe.from = max(seg.Maybe.from, c.after(v.rvLo))
		}
		if i+1 < len(vs) {
			seg.Sure.to = min(seg.Sure.to, c.after(vs[i+1].rvLo))
			seg.Maybe.to = min(seg.Maybe.to, c.before(vs[i+1].rvHi))
		}
		if !seg.Maybe.empty() {
			out = append(out, &seg)
		}
	}
	return out
}

// pipelineFacts is what the recording says of one pipeline UID.
type pipelineFacts struct {
	UID, Name, Identity string
	// Placements in time order: each change an op made and when.
	Placements []placementChange
	// Seen are the placements the hub stored, each from the earliest moment its version may
	// have been committed (for pipelines whose ops did not return).
	Seen []placementChange
	// DeleteAt is when its deletion was requested (op), if it was.
	DeleteOp *OpRecord
	// Excused are members a person confirmed gone, and when.
	Confirms []confirm
	// specs are the changes ops made to spec.placement; resolvePlacements turns them and the
	// inventory into Placements.
	specs []specChange
	// Created is when the op that created it began (forever when no op of the history did).
	Created Stamp
	// Failover is its failover placement, nil for others.
	Failover *FailoverSpec
}

type placementChange struct {
	Op      int
	At      span // the op's start and end: the change was committed in between
	Members []string
}

type confirm struct {
	Member string
	At     Stamp
}

// pipelines gathers the facts of every pipeline UID from the ops and the hub's events.
func pipelines(rec *Recording, hub *clock) map[string]*pipelineFacts {
	out := map[string]*pipelineFacts{}
	get := func(uid, name string) *pipelineFacts {
		if out[uid] == nil {
			out[uid] = &pipelineFacts{UID: uid, Name: name, Created: forever}
		}
		return out[uid]
	}
	for _, e := range rec.Events {
		if e.Kind == kindPipelines && e.Obj.Pipeline != nil {
			f := get(e.Obj.UID, e.Obj.Name)
			if f.Identity == "" {
				f.Identity = e.Obj.Pipeline.Identity
			}
			if e.Type != Deleted {
				f.Seen = append(f.Seen, placementChange{Op: -1, At: span{hub.after(e.RVLo), e.Recv}, Members: clustersOf(e.Obj.Pipeline.Placement)})
			}
		}
	}
	for i := range rec.Ops {
		o := &rec.Ops[i]
		for _, ref := range o.Pipelines {
			if ref.UID == "" {
				continue
			}
			f := get(ref.UID, ref.Name)
			if f.Identity == "" {
				f.Identity = ref.Identity
			}
			opFacts(f, o, ref)
		}
	}
	resolvePlacements(rec.Ops, out)
	return out
}

// opFacts adds what op o did to pipeline f.
func opFacts(f *pipelineFacts, o *OpRecord, ref PipelineRef) {
	switch o.Op.(type) {
	case Create, CreateRace:
		f.specs = append(f.specs, specChange{Op: o.Index, Clusters: sortedCopy(ref.Placement), Selector: ref.Selector, Create: true})
		f.Failover = ref.Failover
		f.Created = min(f.Created, o.Start)
	case Place:
		if ref.SpecChanged {
			f.specs = append(f.specs, specChange{Op: o.Index, Clusters: sortedCopy(ref.Placement), Selector: ref.Selector})
		}
		for _, m := range ref.ConfirmGone {
			f.Confirms = append(f.Confirms, confirm{Member: m, At: o.End})
		}
	case Delete, DeleteAll:
		if f.DeleteOp == nil {
			f.DeleteOp = o
		}
	}
}

// excused tells whether pod p was declared dead by a person: its member was confirmed gone for
// its pipeline while the pod may already have existed.
func excused(p *podLife, f *pipelineFacts) bool {
	if f == nil {
		return false
	}
	for _, c := range f.Confirms {
		if c.Member == p.Cluster && p.Maybe.from <= c.At {
			return true
		}
	}
	return false
}

// pipelineByName ties a pod that no StatefulSet of the recording owns to a pipeline by its name
// label: the pipeline of that name created last before at (the one whose objects a person copied
// the labels from), else the first of that name.
func pipelineByName(pipes map[string]*pipelineFacts) func(name string, at Stamp) string {
	return func(name string, at Stamp) string {
		var best, first *pipelineFacts
		for _, f := range sortedPipes(pipes) {
			if f.Name != name {
				continue
			}
			if first == nil || f.Created < first.Created {
				first = f
			}
			if f.Created <= at && (best == nil || f.Created > best.Created) {
				best = f
			}
		}
		switch {
		case best != nil:
			return best.UID
		case first != nil:
			return first.UID
		}
		return ""
	}
}
