package chaos

import (
	"fmt"
	"time"
)

// What the checker makes of slow members (SlowPath, SlowAdmission): nothing for I1 and I2,
// which hold whatever the speed; for I3, a write the hub sent to a slow member before it knew of
// a termination may be committed that much later there; for I5 and I6, the hub is not held to
// its bounds on a member whose requests may outlast --member-timeout.

const (
	// webhookMaxHold is the longest a member holds a request for an admission webhook (its
	// timeoutSeconds cannot exceed 30 s).
	webhookMaxHold = 30 * time.Second
	// webhookConfigLag is how long a member may still call a webhook after its configuration
	// was deleted (the API server's informer of webhook configurations).
	webhookConfigLag = 2 * time.Second
	// requestOverhead is what a request costs beyond the delays a slow member adds: whether a
	// request may outlast --member-timeout is judged with it.
	requestOverhead = 500 * time.Millisecond
)

// slowSpan is a stretch during which the hub's writes to Member (of Kind, a memberObjectKinds
// key; "" any) may be committed up to Late after they were sent.
type slowSpan struct {
	Member string
	Kind   string
	In     span
	Late   time.Duration
	// Trip is what the slowness adds to a round trip: whether the hub's requests may time out.
	Trip time.Duration
	// Op is the index of the op that made the member slow.
	Op int
}

// slowSpans are the stretches the ops made members slow, each from the start of the op that
// slowed the member (failed or not) to the end of the op that ended it (a Reconnect, a
// Partition, which replaces a slow path, a DropAdmission that did not fail, or a Heal), forever
// when none did. A slow path delays every request both ways; an admission webhook holds the
// hub's writes of StatefulSets (and so the writes after them), and may be called for a moment
// after it is removed.
func slowSpans(ops []OpRecord) []slowSpan {
	var out []slowSpan
	open := map[string]int{}
	begin := func(key string, o OpRecord, s slowSpan) {
		if i, ok := open[key]; ok {
			out[i].Late, out[i].Trip = max(out[i].Late, s.Late), max(out[i].Trip, s.Trip)
			return
		}
		open[key] = len(out)
		s.In, s.Op = span{o.Start, forever}, o.Index
		out = append(out, s)
	}
	end := func(key string, at Stamp) {
		if i, ok := open[key]; ok {
			out[i].In.to = at
			delete(open, key)
		}
	}
	for _, o := range ops {
		switch op := o.Op.(type) {
		case SlowPath:
			begin("path/"+op.Member, o, slowSpan{Member: op.Member, Late: ms(op.Millis), Trip: 2 * ms(op.Millis)})
		case SlowAdmission:
			// Every kind: the writes the hub makes after a held one in the same job are sent
			// that much later.
			begin("admission/"+op.Member, o, slowSpan{Member: op.Member, Late: ms(op.Millis), Trip: ms(op.Millis)})
		case Reconnect:
			end("path/"+op.Member, o.End)
		case Partition:
			end("path/"+op.Member, o.End)
		case DropAdmission:
			if o.Err == "" { // not removed (its member down): held until Heal
				end("admission/"+op.Member, o.End+webhookConfigLag)
			}
		case Heal:
			for _, m := range Members {
				end("path/"+m, o.End)
				end("admission/"+m, o.End+webhookConfigLag)
			}
		}
	}
	return out
}

// mayTimeOut tells whether the slowness op o makes may have a request outlast timeout.
func mayTimeOut(o Op, timeout time.Duration) bool {
	switch o := o.(type) {
	case SlowPath:
		return 2*ms(o.Millis)+requestOverhead >= timeout
	case SlowAdmission:
		return ms(o.Millis)+requestOverhead >= timeout
	}
	return false
}

// lateStart is where a slow member opens a terminal window later, for writes of Kind ("" any)
// to Cluster.
type lateStart struct {
	Cluster, Kind string
	From          Stamp
	Why           string
}

// lateTerminal records in terminal window w (of the termination made by op term) the writes a
// slow member may commit late: one sent until the window would otherwise have opened (at the
// latest), while the member was slow, lands up to Late after.
func lateTerminal(w *terminalWindow, term *OpRecord, slow []slowSpan, b Bounds) {
	sent := max(term.End+b.MemberTimeout, w.In.from)
	for _, s := range slow {
		if s.In.from >= sent {
			continue
		}
		if from := min(s.In.to, sent) + s.Late; from > w.In.from {
			w.Late = append(w.Late, lateStart{Cluster: s.Member, Kind: s.Kind, From: from,
				Why: fmt.Sprintf("a write sent to %s by %s, while it was slow (op #%02d), may be committed %s later", s.Member, stampString(min(s.In.to, sent)), s.Op, s.Late)})
		}
	}
}

// at is the window for writes of kind to cluster, and how its start was set.
func (w terminalWindow) at(cluster, kind string) (span, string) {
	in, why := w.In, w.Why
	for _, l := range w.Late {
		if l.Cluster == cluster && (l.Kind == "" || l.Kind == kind) && l.From > in.from {
			in.from, why = l.From, l.Why
		}
	}
	return in, why
}

// slowDuring tells whether any of members was slow during win enough for a request to outlast
// timeout.
func slowDuring(slow []slowSpan, members []string, win span, timeout time.Duration) bool {
	for _, s := range slow {
		if s.Trip+requestOverhead < timeout || s.In.overlap(win).empty() {
			continue
		}
		for _, m := range members {
			if s.Member == m {
				return true
			}
		}
	}
	return false
}
