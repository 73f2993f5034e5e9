package fleet

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/sourcedb"
)

// holdShared is the identity rule of a multi-member placement: members that read one database
// with one serverId or slot are one reader.
func TestHoldShared(t *testing.T) {
	db := func(host, cluster string) endpointResult {
		e, err := sourcedb.FromURI("mysql", "mysql://u:p@"+host+"/shop", cluster)
		if err != nil {
			t.Fatal(err)
		}
		return endpointResult{endpoint: e}
	}
	unknown := endpointResult{why: "Secret shop/src: not found"}
	none := endpointResult{none: true, why: "no source"}
	running := func(m string, since time.Duration) urutauv1alpha1.LeaseMember {
		e := entry(selfP, m, urutauv1alpha1.LeaseMemberActive)
		e.Since = metav1.NewTime(t0.Add(since))
		return e
	}
	for _, tc := range []struct {
		name      string
		entries   []urutauv1alpha1.LeaseMember
		targets   []string
		endpoints map[string]endpointResult
		held      string // held members, sorted, with the one they wait for: "b<a c<a"
	}{
		{"[A]->[A,B], one database: B waits for A",
			[]urutauv1alpha1.LeaseMember{running("a", 0)}, []string{"a", "b"},
			map[string]endpointResult{"a": db("db.example.com", "A"), "b": db("DB.example.com:3306", "B")}, "b<a"},
		{"[A]->[A,B], two databases: both run",
			[]urutauv1alpha1.LeaseMember{running("a", 0)}, []string{"a", "b"},
			map[string]endpointResult{"a": db("db-a.example.com", "A"), "b": db("db-b.example.com", "B")}, ""},
		{"a new pipeline on three members, two share a database: the first by name runs",
			nil, []string{"a", "b", "c"},
			map[string]endpointResult{"a": db("db-x.example.com", "A"), "b": db("db-y.example.com", "B"), "c": db("db-x.example.com", "C")}, "c<a"},
		{"a Service name in each cluster is a database each",
			nil, []string{"a", "b"},
			map[string]endpointResult{"a": db("mysql.shop.svc", "A"), "b": db("mysql.shop.svc", "B")}, ""},
		{"a new member whose database cannot be told waits",
			[]urutauv1alpha1.LeaseMember{running("a", 0)}, []string{"a", "b"},
			map[string]endpointResult{"a": db("db-a.example.com", "A"), "b": unknown}, "b<a"},
		{"a new member waits for a running one whose database cannot be told",
			[]urutauv1alpha1.LeaseMember{running("a", 0)}, []string{"a", "b"},
			map[string]endpointResult{"a": unknown, "b": db("db-b.example.com", "B")}, "b<a"},
		{"two running members, one database (a Secret repointed): the later one stops",
			[]urutauv1alpha1.LeaseMember{running("a", time.Minute), running("b", 0)}, []string{"a", "b"},
			map[string]endpointResult{"a": db("db.example.com", "A"), "b": db("db.example.com", "B")}, "a<b"},
		{"two running members, one unreadable for now: neither is stopped on no evidence",
			[]urutauv1alpha1.LeaseMember{running("a", 0), running("b", time.Minute)}, []string{"a", "b"},
			map[string]endpointResult{"a": db("db.example.com", "A"), "b": unknown}, ""},
		{"no source named anywhere: nothing is read, nothing waits",
			nil, []string{"a", "b"}, map[string]endpointResult{"a": none, "b": none}, ""},
		{"a drained entry is not running: it waits like a new one",
			[]urutauv1alpha1.LeaseMember{running("a", 0), entry(selfP, "b", urutauv1alpha1.LeaseMemberDrained)}, []string{"a", "b"},
			map[string]endpointResult{"a": db("db.example.com", "A"), "b": db("db.example.com", "B")}, "b<a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := holdShared(sharedInput{Self: selfP, Source: src, Current: leaseOf(selfP, tc.entries...), Targets: targets(tc.targets...), Endpoints: tc.endpoints})
			var got []string
			for _, m := range sortedKeys(held) {
				for _, k := range tc.targets {
					if strings.Contains(held[m], "cluster \""+k+"\"") {
						got = append(got, m+"<"+k)
					}
				}
			}
			if s := strings.Join(got, " "); s != tc.held {
				t.Errorf("held %q, want %q (messages: %v)", s, tc.held, held)
			}
			for m, msg := range held {
				if strings.Contains(msg, ":p@") || strings.Contains(msg, "u:p") {
					t.Errorf("message for %s carries a credential: %s", m, msg)
				}
			}
		})
	}
}
