package chaos

import (
	"fmt"
	"time"
)

// What the checker makes of slow members (SlowPath, SlowAdmission): nothing for I1 and I2,
// which hold whatever the speed; for I3, a write the hub sent before it knew of a termination
// may be committed that much later; for I5 and I6, the hub is not held to its bounds on a slow
// member, whose writes may time out.

// webhookMaxHold is the longest a member holds a request for an admission webhook (its
// timeoutSeconds cannot exceed 30 s).
const webhookMaxHold = 30 * time.Second

// slowSpan is a stretch during which the hub's writes to Member may be committed up to Late
// after they were sent.
type slowSpan struct {
	Member string
	In     span
	Late   time.Duration
	// Op is the index of the op that made the member slow.
	Op int
}

// slowSpans are the stretches the ops made members slow, each from the start of the op that
// slowed the member (failed or not) to the end of the op that ended it (a Reconnect, a
// Partition, which replaces a slow path, a DropAdmission that did not fail, or a Heal), forever
// when none did.
func slowSpans(ops []OpRecord) []slowSpan {
	var out []slowSpan
	open := map[string]int{}
	begin := func(key string, o OpRecord, m string, late time.Duration) {
		if _, ok := open[key]; ok {
			out[open[key]].Late = max(out[open[key]].Late, late)
			return
		}
		open[key] = len(out)
		out = append(out, slowSpan{Member: m, In: span{o.Start, forever}, Late: late, Op: o.Index})
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
			begin("path/"+op.Member, o, op.Member, ms(op.Millis))
		case SlowAdmission:
			begin("admission/"+op.Member, o, op.Member, ms(op.Millis))
		case Reconnect:
			end("path/"+op.Member, o.End)
		case Partition:
			end("path/"+op.Member, o.End)
		case DropAdmission:
			if o.Err == "" { // not removed (its member down): held until Heal
				end("admission/"+op.Member, o.End)
			}
		case Heal:
			for _, m := range Members {
				end("path/"+m, o.End)
				end("admission/"+m, o.End)
			}
		}
	}
	return out
}

// lateTerminal moves the start of terminal window w (of the termination made by op term) past
// the writes a slow member may commit late: a write sent until the window would have opened
// lands up to Late after.
func lateTerminal(w *terminalWindow, term *OpRecord, slow []slowSpan, b Bounds) {
	for _, s := range slow {
		sent := term.End + b.MemberTimeout
		if s.In.from >= sent || s.In.to < term.Start {
			continue
		}
		if from := sent + s.Late; from > w.In.from {
			w.In.from = from
			w.Why = fmt.Sprintf("termination written at %s + --member-timeout %s + %s, how late %s commits a write (op #%02d)",
				stampString(term.End), b.MemberTimeout, s.Late, s.Member, s.Op)
		}
	}
}

// slowDuring tells whether any of members was slow during win.
func slowDuring(slow []slowSpan, members []string, win span) bool {
	for _, s := range slow {
		for _, m := range members {
			if s.Member == m && !s.In.overlap(win).empty() {
				return true
			}
		}
	}
	return false
}
