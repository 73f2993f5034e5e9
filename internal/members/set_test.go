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
// before the new engagement saw the old cluster and will not run again by itself).
func TestSetIdentityChangeAcrossEngagements(t *testing.T) {
	s := &Set{}
	steps := []struct {
		engage      string // a new cluster object for the member, "" to keep the current one
		id          string
		wantChanged bool
	}{
		{engage: "https://one", id: "uid-1", wantChanged: false}, // the first read is no change
		{id: "uid-1", wantChanged: false},
		{engage: "https://one-again", id: "uid-1", wantChanged: false}, // a new kubeconfig, same cluster
		{engage: "https://two", id: "uid-2", wantChanged: true},        // the entry now reaches another cluster
		{id: "uid-2", wantChanged: false},
		{id: "uid-1", wantChanged: true}, // and back, on the same cluster object
	}
	for i, st := range steps {
		if st.engage != "" {
			if _, err := s.ClientsFor("m", &engagedCluster{host: st.engage}); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if got := s.KnownIdentity("m"); got != "" {
				t.Fatalf("step %d: a new cluster object kept the identity %q of the one before", i, got)
			}
		}
		if got := s.SetIdentity("m", st.id); got != st.wantChanged {
			t.Errorf("step %d (%s): SetIdentity changed = %v, want %v", i, st.id, got, st.wantChanged)
		}
		if got := s.KnownIdentity("m"); got != st.id {
			t.Errorf("step %d: KnownIdentity = %q, want %q", i, got, st.id)
		}
	}
}
