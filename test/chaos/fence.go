package chaos

import (
	"cmp"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/urutau-io/fleet/internal/coordinator"
	"github.com/urutau-io/fleet/internal/fence"
)

// The fence of fenced placements, simulated. kwok runs no process: a coordinator pod is an
// object, so what stops a fenced reader on a member the hub cannot reach is modelled here, with
// the fence's own decision (internal/fence, what cmd/fence carries out in the pod) run with the
// pod's own fence arguments (its command line: ttl, grace, Lease, holder; a pod made by hand or
// by another hub need not have the suite's) over the renewals the pod could see: the versions of
// that Lease committed in its member, those its --holder counts. (A pod sees its member's API
// server in every history: a stopped or hanging member commits nothing, and a partition cuts only
// the hub's path.) A fenced pod is a reader only while that decision lets its command run, so its
// life is cut where the fence would have killed it (SIGKILL: the reader is taken to ignore
// SIGTERM) and starts again only where the fence would have started it again. Unfenced pods are
// readers for as long as they exist.

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

// fenceWrites are the versions of the Lease fence cl reads in cluster (every recorded Lease is
// in one of the recording's namespaces), as it reads them, with each commit dated by clock c: at the
// earliest moment it may have been committed (early) or the latest.
func fenceWrites(rec *Recording, c *clock, cluster string, cl fence.CommandLine, early bool) []fenceWrite {
	var out []fenceWrite
	for _, e := range rec.Events {
		if e.Kind != kindFences || e.Cluster != cluster || e.Obj.Name != cl.Name || (e.Obj.Namespace != "" && e.Obj.Namespace != cl.Namespace) {
			continue
		}
		w := fenceWrite{At: c.before(e.RVHi)}
		if early {
			w.At = c.after(e.RVLo)
		}
		if e.Type != Deleted && cl.Counts(e.Obj.Holder) {
			w.Token = e.Obj.Renew
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// fenceCut replaces every fenced pod's life by the lives of its reader: the parts of it during
// which the simulated fence let the command run.
func fenceCut(rec *Recording, clocks map[string]*clock, pipes map[string]*pipelineFacts, pods []*podLife) []*podLife {
	var out []*podLife
	for _, p := range pods {
		if !p.Fenced || p.Pipeline == "" {
			out = append(out, p)
			continue
		}
		out = append(out, fencedReader(rec, clocks[p.Cluster], pipes, p)...)
	}
	return out
}

// fencedReader cuts fenced pod p by its own fence: the command line the pod was created with.
func fencedReader(rec *Recording, c *clock, pipes map[string]*pipelineFacts, p *podLife) []*podLife {
	if p.Command == nil {
		// Recorded before pods' command lines were: the suite's settings on the hub's Lease.
		cl := fence.CommandLine{Namespace: cmp.Or(p.Namespace, rec.Namespace), Name: coordinator.FenceLeaseName(p.PipelineName), Holder: p.Pipeline,
			Config: fence.Config{TTL: rec.Bounds.FenceTTL, Grace: rec.Bounds.FenceGrace}}
		if f := pipes[p.Pipeline]; f != nil {
			cl.Name = coordinator.FenceLeaseName(f.Name)
		}
		if cl.Config.Validate() != nil {
			return []*podLife{p}
		}
		return cutByFence(rec, c, p, cl)
	}
	cl, err := fence.ParseCommandLine(p.Command[1:], io.Discard)
	switch {
	case err != nil:
		return nil // the fence refuses its command line and exits: no reader ever runs
	case !slices.Contains(rec.namespaces(), cl.Namespace) || cl.Kubeconfig != "":
		return []*podLife{p} // it reads a Lease the recorder does not see: nothing cuts the reader
	}
	return cutByFence(rec, c, p, cl)
}

// cutByFence runs fence cl over the recorded versions of its Lease. Sure is where the reader ran
// under both datings of the writes (the earliest and the latest commit of each), Maybe where it
// ran under either.
func cutByFence(rec *Recording, c *clock, p *podLife, cl fence.CommandLine) []*podLife {
	horizon := rec.Settled + cl.Config.Bound() + time.Second
	early := simulateFence(cl.Config, max(p.Maybe.from, 0), horizon, fenceWrites(rec, c, p.Cluster, cl, true))
	late := simulateFence(cl.Config, max(p.Sure.from, 0), horizon, fenceWrites(rec, c, p.Cluster, cl, false))
	return readerLives(p, early, late)
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
