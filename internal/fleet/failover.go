package fleet

import (
	"slices"
	"strings"
	"time"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/failover"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/lease"
	"github.com/urutau-io/fleet/internal/members"
	"github.com/urutau-io/fleet/internal/memberwork"
)

// observeFailover resolves a failover placement to the one member it runs on (w.selected), from
// the inventory (listed) and what the health checks found of each member (health).
func observeFailover(p *urutauv1alpha1.CDCPipeline, listed []inventory.Member, health func(member string) members.Health, w *world) error {
	fo := p.Spec.Placement.Failover
	candidates, err := failover.Candidates(p, listed)
	if err != nil {
		return err
	}
	in := failover.Input{Candidates: candidates, Requested: strings.TrimSpace(p.Annotations[urutauv1alpha1.AnnotationFailoverTo]),
		Health: map[string]failover.Health{}, Threshold: failover.Threshold(fo), Now: time.Now()}
	if st := p.Status.Failover; st != nil && st.Member != "" {
		in.Current = st.Member
	}
	if in.Current == "" {
		in.Current = activeCandidate(w.lease, p, candidates)
	}
	for _, m := range candidates {
		h := health(m)
		in.Health[m] = failover.Health{Known: h.Checked, Up: h.Up, LostSince: h.LostSince()}
	}
	d := failover.Choose(in)
	w.failover = &failover.View{Decision: d, Current: in.Current, Requested: in.Requested}
	w.selected = nil
	if d.Target != "" {
		w.selected = []string{d.Target}
	}
	return nil
}

// activeCandidate is the most preferred candidate on which the pipeline's lease entry is Active.
func activeCandidate(l *urutauv1alpha1.ReaderLease, p *urutauv1alpha1.CDCPipeline, candidates []string) string {
	for _, m := range candidates {
		if slices.ContainsFunc(lease.OwnEntries(l, p.UID), func(e urutauv1alpha1.LeaseMember) bool {
			return e.Cluster == m && e.State == urutauv1alpha1.LeaseMemberActive
		}) {
			return m
		}
	}
	return ""
}

// reportFailover sets status.failover and the FailingOver condition (failover.Report). results
// are this reconcile's member results.
func reportFailover(emit emitFunc, p, orig *urutauv1alpha1.CDCPipeline, w *world, results map[string]memberwork.Result) {
	ready := w.failover != nil && w.failover.Decision.Target != "" && results[w.failover.Decision.Target].Obs.Phase == urutauv1alpha1.ClusterReady
	failover.Report(failover.Emit(emit), p, orig, w.failover, ready)
}
