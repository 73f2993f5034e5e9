package sourcedb

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// Hold is the identity rule of a multi-member placement: members that read one database with one
// serverId or slot are one reader.
func TestHold(t *testing.T) {
	db := func(host, cluster string) Read {
		return ReadOf(FromURI("mysql", "mysql://u:p@"+host+"/shop", cluster))
	}
	unknown := Read{Why: "Secret shop/src: not found"}
	none := Read{None: true, Why: "no source"}
	for _, tc := range []struct {
		name             string
		running, waiting []string
		reads            map[string]Read
		held             string // held members, sorted, with the one they wait for: "b<a c<a"
	}{
		{"[A]->[A,B], one database: B waits for A", []string{"a"}, []string{"b"},
			map[string]Read{"a": db("db.example.com", "A"), "b": db("DB.example.com:3306", "B")}, "b<a"},
		{"[A]->[A,B], two databases: both run", []string{"a"}, []string{"b"},
			map[string]Read{"a": db("db-a.example.com", "A"), "b": db("db-b.example.com", "B")}, ""},
		{"a new pipeline on three members, two share a database: the first runs", nil, []string{"a", "b", "c"},
			map[string]Read{"a": db("db-x.example.com", "A"), "b": db("db-y.example.com", "B"), "c": db("db-x.example.com", "C")}, "c<a"},
		{"a Service name in each cluster is a database each", nil, []string{"a", "b"},
			map[string]Read{"a": db("mysql.shop.svc", "A"), "b": db("mysql.shop.svc", "B")}, ""},
		{"a new member whose database cannot be told waits", []string{"a"}, []string{"b"},
			map[string]Read{"a": db("db-a.example.com", "A"), "b": unknown}, "b<a"},
		{"a new member waits for a running one whose database cannot be told", []string{"a"}, []string{"b"},
			map[string]Read{"a": unknown, "b": db("db-b.example.com", "B")}, "b<a"},
		{"two running members, one database (a Secret repointed): the later one stops", []string{"b", "a"}, nil,
			map[string]Read{"a": db("db.example.com", "A"), "b": db("db.example.com", "B")}, "a<b"},
		{"two running members, one unreadable for now: neither is stopped on no evidence", []string{"a", "b"}, nil,
			map[string]Read{"a": db("db.example.com", "A"), "b": unknown}, ""},
		{"no source named anywhere: nothing is read, nothing waits", nil, []string{"a", "b"},
			map[string]Read{"a": none, "b": none}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := Hold(tc.running, tc.waiting, tc.reads, "MySQL serverId 42")
			all := append(slices.Clone(tc.running), tc.waiting...)
			var got []string
			for _, m := range slices.Sorted(maps.Keys(held)) {
				for _, k := range all {
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
				if !strings.Contains(msg, "MySQL serverId 42") {
					t.Errorf("message for %s does not name the reader identity: %s", m, msg)
				}
			}
		})
	}
}
