package members

import (
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// engagedCluster is the little of a cluster object that ClientsFor reads: each value is a new
// engagement of a member (the provider builds a new one when the kubeconfig changes).
type engagedCluster struct {
	cluster.Cluster
	host string
}

func (c *engagedCluster) GetConfig() *rest.Config        { return &rest.Config{Host: c.host} }
func (c *engagedCluster) GetHTTPClient() *http.Client    { return http.DefaultClient }
func (c *engagedCluster) GetScheme() *runtime.Scheme     { return runtime.NewScheme() }
func (c *engagedCluster) GetRESTMapper() meta.RESTMapper { return meta.NewDefaultRESTMapper(nil) }
func (c *engagedCluster) GetCache() cache.Cache          { return nil }

// An entry pointed at another cluster is engaged again as a new cluster object, which starts
// with no identity read. The health check that reads the other cluster's identity must still
// report a change: it is what brings back the pipelines placed there (a reconcile that ran
// before the new engagement saw the old cluster and will not run again by itself). A check that
// read through the old cluster object while the new one was engaged reports what it read, but
// does not vouch for the new cluster object.
func TestSetIdentityChangeAcrossEngagements(t *testing.T) {
	s := &Set{}
	var current cluster.Cluster
	steps := []struct {
		engage      string // a new cluster object for the member, "" to keep the current one
		stale       bool   // the check read through the cluster object before the current one
		id          string
		wantChanged bool
		wantKnown   string
	}{
		{engage: "https://one", id: "uid-1", wantKnown: "uid-1"}, // the first read is no change
		{id: "uid-1", wantKnown: "uid-1"},
		{engage: "https://one-again", id: "uid-1", wantKnown: "uid-1"},                         // a new kubeconfig, same cluster
		{engage: "https://two", id: "uid-2", wantChanged: true, wantKnown: "uid-2"},            // the entry now reaches another cluster
		{id: "uid-2", wantKnown: "uid-2"},                                                      // nothing new
		{id: "uid-1", wantChanged: true, wantKnown: "uid-1"},                                   // and back, on the same cluster object
		{engage: "https://three", stale: true, id: "uid-1", wantChanged: false, wantKnown: ""}, // read through "two"'s object
		{id: "uid-3", wantChanged: true, wantKnown: "uid-3"},
	}
	var previous cluster.Cluster
	for i, st := range steps {
		if st.engage != "" {
			previous, current = current, &engagedCluster{host: st.engage}
			if _, err := s.ClientsFor("m", current); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if got := s.KnownIdentity("m"); got != "" {
				t.Fatalf("step %d: a new cluster object kept the identity %q of the one before", i, got)
			}
		}
		through := current
		if st.stale {
			through = previous
		}
		if got := s.SetIdentity("m", through, st.id); got != st.wantChanged {
			t.Errorf("step %d (%s): SetIdentity changed = %v, want %v", i, st.id, got, st.wantChanged)
		}
		if got := s.KnownIdentity("m"); got != st.wantKnown {
			t.Errorf("step %d: KnownIdentity = %q, want %q", i, got, st.wantKnown)
		}
	}
}
