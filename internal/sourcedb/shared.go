package sourcedb

import "fmt"

// Read is what reading one member's source endpoint found: its Endpoint, or Why not; None when
// the pipeline names no source at all there (no Secret, no inline URI or host): its coordinator
// has nothing to connect to, so it reads no database.
type Read struct {
	Endpoint *Endpoint
	Why      string
	None     bool
}

// ReadOf is the Read of an endpoint parsed with err.
func ReadOf(e *Endpoint, err error) Read {
	if err != nil {
		return Read{Why: err.Error()}
	}
	return Read{Endpoint: e}
}

// Hold returns the members that must not run because another member reads the same database,
// each with why. running are the members whose coordinator runs already, oldest first; waiting
// the others, in the order they may start. Running members keep running unless a running one
// before them is known to read the same database (both endpoints read, and equal: a member is
// stopped only on evidence); a waiting one starts only where no kept member may read the same
// database (an unknown endpoint may be any). source names the reader identity in the messages.
func Hold(running, waiting []string, reads map[string]Read, source string) map[string]string {
	held := map[string]string{}
	var kept []string
	keep := func(m string, evidence bool) {
		for _, k := range kept {
			a, b := reads[k].Endpoint, reads[m].Endpoint
			if reads[k].None || reads[m].None || (evidence && (a == nil || b == nil)) {
				continue
			}
			if Same(a, b) {
				held[m] = heldMessage(reads, source, m, k)
				return
			}
		}
		kept = append(kept, m)
	}
	for _, m := range running {
		keep(m, true)
	}
	for _, m := range waiting {
		keep(m, false)
	}
	return held
}

// heldMessage says why member m waits for k. Endpoints print without credentials.
func heldMessage(reads map[string]Read, source, m, k string) string {
	mine, theirs := reads[m], reads[k]
	switch {
	case mine.Endpoint == nil:
		return fmt.Sprintf("not started: the hub cannot tell which database the source reads here (%s), so it may be the one cluster %q reads with %s; one reader per source", mine.Why, k, source)
	case theirs.Endpoint == nil:
		return fmt.Sprintf("not started: the hub cannot tell which database cluster %q reads (%s), so it may be this one (%s) with %s; one reader per source", k, theirs.Why, mine.Endpoint, source)
	}
	return fmt.Sprintf("not started: reads the same database as cluster %q (%s) with %s, and one source has one reader: narrow the placement to one of them, or point each member's source Secret at its own database",
		k, mine.Endpoint, source)
}
