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
	Cluster, Name, UID string
	// Owner is its StatefulSet; Pipeline the hub pipeline UID that StatefulSet carries.
	Owner, Pipeline string
	// Revisions: created in [cLo, cHi], deleted in [dLo, dHi] (dHi = maxRV: not seen deleted).
	cLo, cHi, dLo, dHi int64
	// Terminating was seen (a deletionTimestamp while it still existed).
	Terminating bool
	Phases      []string
	// Sure: it existed all along; Maybe: it may have existed at any moment of it.
	Sure, Maybe span
}

func (p *podLife) String() string {
	state := ""
	if p.Terminating {
		state = ", seen terminating"
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

// podLives derives every coordinator pod's life from the recording. ownerPipeline maps a
// StatefulSet UID to its pipeline UID.
func podLives(rec *Recording, clocks map[string]*clock, ownerPipeline map[string]string) []*podLife {
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
		p.Name = e.Obj.Name
		if e.Obj.Owner != "" {
			p.Owner = e.Obj.Owner
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
	// Absences refine both ends: a pod missing from a list was not created yet, or was deleted.
	for _, s := range rec.Samples {
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
	out := make([]*podLife, 0, len(byKey))
	for _, p := range byKey {
		c := clocks[p.Cluster]
		p.Pipeline = ownerPipeline[p.Owner]
		p.Sure = span{c.before(p.cHi), c.after(p.dLo)}
		p.Maybe = span{c.after(p.cLo), c.before(p.dHi)}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Sure.from != out[j].Sure.from {
			return out[i].Sure.from < out[j].Sure.from
		}
		return out[i].Cluster+out[i].UID < out[j].Cluster+out[j].UID
	})
	return out
}

// present records that the pod existed at revision rv.
func (p *podLife) present(rv int64) {
	p.cHi = min(p.cHi, rv)
	p.dLo = max(p.dLo, rv+1)
}

// ownerPipelines maps every StatefulSet seen in a member to the pipeline UID it carries.
func ownerPipelines(rec *Recording) map[string]string {
	out := map[string]string{}
	for _, e := range rec.Events {
		if e.Kind == "statefulsets" && e.Obj.PipelineUID != "" {
			out[e.Obj.UID] = e.Obj.PipelineUID
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
			out[uid] = &pipelineFacts{UID: uid, Name: name}
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
				f.Seen = append(f.Seen, placementChange{Op: -1, At: span{hub.after(e.RVLo), e.Recv}, Members: sortedCopy(e.Obj.Pipeline.Placement)})
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
	return out
}

// opFacts adds what op o did to pipeline f.
func opFacts(f *pipelineFacts, o *OpRecord, ref PipelineRef) {
	at := span{o.Start, o.End}
	switch o.Op.(type) {
	case Create, CreateRace:
		f.Placements = append(f.Placements, placementChange{Op: o.Index, At: at, Members: sortedCopy(ref.Placement)})
	case Place:
		if ref.SpecChanged {
			f.Placements = append(f.Placements, placementChange{Op: o.Index, At: at, Members: sortedCopy(ref.Placement)})
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
