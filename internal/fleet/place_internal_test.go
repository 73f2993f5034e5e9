package fleet

import (
	"strings"
	"testing"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// An entry whose name reaches another cluster now says where its own cluster answers, if it
// does; and the way out it names for one such name (accept the new identity of the entry's name)
// is the one that moves the entry there to be emptied (renamedTo).
func TestIdentityMoved(t *testing.T) {
	e := urutauv1alpha1.LeaseMember{Cluster: "a", ClusterID: "id-old"}
	for _, tc := range []struct {
		name       string
		ids        map[string]string
		want, not  string
		acceptedTo string
	}{
		{name: "its cluster answers nowhere", ids: map[string]string{"a": "id-new"},
			want: `cluster "a" now answers as identity id-new; this pipeline's objects went to identity id-old, which the hub cannot reach`},
		{name: "its cluster answers as b", ids: map[string]string{"a": "id-new", "b": "id-old", "c": "id-c"},
			want: `which answers as cluster "b", where this pipeline is not placed: they are left as they are until a person accepts the new identity of "a" (annotate its inventory entry ` +
				urutauv1alpha1.AnnotationClusterID + `=id-new); they are removed from "b" then`,
			not: "cannot reach", acceptedTo: "b"},
		{name: "its cluster answers under two names", ids: map[string]string{"a": "id-new", "b": "id-old", "c": "id-old"},
			want: `which answers as clusters "b", "c", where this pipeline is not placed: the hub cannot tell which of them to empty`, not: "cannot reach"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := identityMoved(e, tc.ids["a"], tc.ids)
			if !strings.Contains(got, tc.want) || (tc.not != "" && strings.Contains(got, tc.not)) {
				t.Errorf("message %q\nwant it to contain %q and not %q", got, tc.want, tc.not)
			}
			if tc.acceptedTo == "" {
				return
			}
			targets := map[string]string{"c": "id-c"}
			if to := renamedTo(e, targets, tc.ids, false, false); to != "a" {
				t.Errorf("not accepted: the entry went to %q, want it kept at a", to)
			}
			if to := renamedTo(e, targets, tc.ids, false, true); to != tc.acceptedTo {
				t.Errorf("accepted: the entry went to %q, want %q as the message says", to, tc.acceptedTo)
			}
		})
	}
}
