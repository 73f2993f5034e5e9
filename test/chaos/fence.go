package chaos

import (
	"slices"
	"sort"
	"time"

	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fence"
)

// The fence of fenced placements, simulated. kwok runs no process: a coordinator pod is an
// object, so what stops a fenced reader on a member the hub cannot reach is modelled here, with
// the fence's own decision (internal/fence, what cmd/fence carries out in the pod) fed by the
// renewals the pod could see: the versions of its fence Lease committed in its member. (A pod
// sees its member's API server in every history: a stopped or hanging member commits nothing, and
// a partition cuts only the hub's path.) A fenced pod is a reader only while that decision lets
// its command run, so its life is cut where the fence would have killed it (SIGKILL: the reader
// is taken to ignore SIGTERM) and starts again only where the fence would have started it again.
// Unfenced pods are readers for as long as they exist.

// fenceWrite is one version of a fence Lease as a fence reads it: Token changes with every
// renewal ("" when the Lease is gone or held for another pipeline), committed At.
type fenceWrite struct {
	At    Stamp
	Token string
}

// simulateFence runs the fence's decision from its first read at from until horizon, over the
// writes (sorted by At), and returns when its reader ran. It reads the Lease once when it
// starts, then just before and just after every write, as a fence whose reads are all prompt
// would: the tightest dating of each renewal, so the latest a reader can run on it.
func simulateFence(cfg fence.Config, from, horizon Stamp, writes []fenceWrite) []span {
	token := func(t Stamp) string {
		tok := ""
		for _, w := range writes {
			if w.At > t {
				break
			}
			tok = w.Token
		}
		return tok
	}
	polls := []Stamp{from}
	for _, w := range writes {
		if w.At-1 > from && w.At <= horizon {
			polls = append(polls, w.At-1, w.At)
		}
	}
	var st fence.State
	var runs []span
	runFrom, running := Stamp(0), false
	now := from
	for i := 0; ; {
		var d fence.Decision
		st, d = fence.Step(cfg, st, now)
		switch d.Action {
		case fence.Start:
			runFrom, running = now, true
		case fence.Kill:
			st = st.Exited()
			runs, running = append(runs, span{runFrom, now}), false
			// As cmd/fence does once its reader exits: decide again at once, so a renewal
			// seen while the reader was stopping starts it again without waiting for a write.
			continue
		}
		next := horizon
		if i < len(polls) {
			next = polls[i]
		}
		if d.HasWake && d.Wake > now && d.Wake < next && d.Wake <= horizon {
			now = d.Wake
			continue
		}
		if i >= len(polls) {
			break
		}
		now = next
		st = st.Observe(fence.Poll{SentAt: now, Token: token(now)})
		i++
	}
	if running {
		runs = append(runs, span{runFrom, forever})
	}
	return runs
}

// fenceWrites are the versions of fence Lease name in cluster, as the fence of pipeline uid
// reads them, with each commit dated by clock c: at the earliest moment it may have been
// committed (early) or the latest.
func fenceWrites(rec *Recording, c *clock, cluster, name, uid string, early bool) []fenceWrite {
	var out []fenceWrite
	for _, e := range rec.Events {
		if e.Kind != kindFences || e.Cluster != cluster || e.Obj.Name != name {
			continue
		}
		w := fenceWrite{At: c.before(e.RVHi)}
		if early {
			w.At = c.after(e.RVLo)
		}
		if e.Type != Deleted && e.Obj.Holder == uid {
			w.Token = e.Obj.Renew
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// fenceCut replaces every fenced pod's life by the lives of its reader: the parts of it during
// which the simulated fence let the command run. Sure is where it ran under both datings of the
// renewals (the earliest and the latest commit of each), Maybe where it ran under either.
func fenceCut(rec *Recording, clocks map[string]*clock, pipes map[string]*pipelineFacts, pods []*podLife) []*podLife {
	cfg := fence.Config{TTL: rec.Bounds.FenceTTL, Grace: rec.Bounds.FenceGrace}
	if cfg.Validate() != nil {
		return pods
	}
	horizon := rec.Settled + cfg.Bound() + time.Second
	var out []*podLife
	for _, p := range pods {
		if !p.Fenced || p.Pipeline == "" {
			out = append(out, p)
			continue
		}
		name := p.PipelineName
		if f := pipes[p.Pipeline]; f != nil {
			name = f.Name
		}
		lease, c := coordinator.FenceLeaseName(name), clocks[p.Cluster]
		early := simulateFence(cfg, max(p.Maybe.from, 0), horizon, fenceWrites(rec, c, p.Cluster, lease, p.Pipeline, true))
		late := simulateFence(cfg, max(p.Sure.from, 0), horizon, fenceWrites(rec, c, p.Cluster, lease, p.Pipeline, false))
		out = append(out, readerLives(p, early, late)...)
	}
	return out
}

// readerLives cuts pod p into one life per stretch during which its reader may have run (under
// either dating), each surely running where both datings let it run.
func readerLives(p *podLife, early, late []span) []*podLife {
	var out []*podLife
	for _, m := range mergeSpans(append(slices.Clone(early), late...)) {
		for _, piece := range surePieces(m, early, late) {
			l := *p
			l.Maybe = p.Maybe.overlap(piece.maybe)
			if l.Maybe.empty() {
				continue
			}
			l.Sure = piece.sure.overlap(p.Sure)
			l.fence = &fenceRuns{Runs: m, PodSure: p.Sure, PodMaybe: p.Maybe}
			out = append(out, &l)
		}
	}
	if len(out) == 0 {
		// The fence never let it run: a pod, no reader.
		return nil
	}
	return out
}

// readerPiece is a part of a stretch the reader may have run, with the one span in it where it
// surely ran (empty when none).
type readerPiece struct{ maybe, sure span }

// surePieces cuts stretch m into disjoint pieces, one per span where both datings let the reader
// run, so that every such span is judged as a sure reader, not only the first.
func surePieces(m span, early, late []span) []readerPiece {
	var sure []span
	for _, a := range early {
		for _, b := range late {
			if s := a.overlap(b).overlap(m); !s.empty() {
				sure = append(sure, s)
			}
		}
	}
	sure = mergeSpans(sure)
	if len(sure) == 0 {
		return []readerPiece{{maybe: m, sure: span{forever, dawn}}}
	}
	out := make([]readerPiece, len(sure))
	for i, s := range sure {
		out[i] = readerPiece{maybe: span{s.from, m.to}, sure: s}
		if i == 0 {
			out[i].maybe.from = m.from
		}
		if i+1 < len(sure) {
			out[i].maybe.to = sure[i+1].from - 1
		}
	}
	return out
}

// fenceRuns says that a life is a fenced reader's, cut by the simulated fence.
type fenceRuns struct {
	// Runs is the stretch the simulated fence may have let the reader run; PodSure and PodMaybe
	// are when the pod object surely and possibly existed.
	Runs              span
	PodSure, PodMaybe span
}
