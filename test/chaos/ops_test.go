package chaos

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// every op kind, with every field set, so that a round trip proves nothing is lost.
func everyOp() []Op {
	return []Op{
		Create{Name: "p0", Identity: "s0", Placement: []string{"member-a"}, Bypass: true, RetryMillis: 3000},
		CreateRace{Names: []string{"p1", "p2"}, Identity: "s1", Placements: [][]string{{"member-a"}, {"member-b", "member-c"}}, Bypass: true},
		Place{Name: "p0", Placement: []string{}, ConfirmGone: []string{"member-a"}},
		Delete{Name: "p0"}, Terminate{Name: "p1"}, Clear{Name: "p1"},
		StopMember{Member: "member-b"}, StartMember{Member: "member-b"},
		PauseKubelet{Member: "member-c"}, ResumeKubelet{Member: "member-c"},
		KillHub{Hub: 1}, StartHub{Hub: 1}, Failover{},
		Hold{Member: "member-a", Name: "p0", Object: "configmap"}, Release{Member: "member-a"}, Release{},
		Hammer{Name: "p0", Millis: 1500}, Wait{Millis: 10},
		Await{Cond: CondRunning, Name: "p0", Member: "member-a", Millis: 1000},
		KillHubWhen{Cond: CondNoTombstone, Name: "p0", Member: "member-b", Millis: 500},
		Heal{}, DeleteAll{},
	}
}

func TestHistoryJSONRoundTrip(t *testing.T) {
	h := History{Name: "every-op", Seed: 7, Ops: everyOp()}
	path := filepath.Join(t.TempDir(), "h.json")
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("round trip changed the history:\n got %#v\nwant %#v", got, h)
	}
	kinds := map[string]bool{}
	for _, o := range h.Ops {
		kinds[o.Kind()] = true
	}
	for _, k := range []string{"create", "create-race", "place", "delete", "terminate", "clear", "stop-member", "start-member",
		"pause-kubelet", "resume-kubelet", "kill-hub", "start-hub", "failover", "hold", "release", "hammer", "wait", "await",
		"kill-hub-when", "heal", "delete-all"} {
		if !kinds[k] {
			t.Errorf("op kind %q is not in the round trip", k)
		}
		if _, err := newOp(k); err != nil {
			t.Errorf("newOp(%q): %v", k, err)
		}
	}
}

func TestHistoryJSONErrorsNameTheOp(t *testing.T) {
	for name, tc := range map[string]struct{ raw, want string }{
		"unknown op":    {`{"name":"x","ops":[{"op":"explode"}]}`, `ops[0]: unknown op "explode"`},
		"unknown field": {`{"name":"x","ops":[{"op":"wait","millis":1},{"op":"delete","nam":"p0"}]}`, `ops[1] (delete): json: unknown field "nam"`},
		"wrong type":    {`{"name":"x","ops":[{"op":"kill-hub","hub":"one"}]}`, `ops[0] (kill-hub)`},
	} {
		t.Run(name, func(t *testing.T) {
			var h History
			err := json.Unmarshal([]byte(tc.raw), &h)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestGenerateIsDeterministicAndWellFormed(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		a, b := Generate(seed, 18), Generate(seed, 18)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("seed %d: two generations differ", seed)
		}
		n := len(a.Ops)
		if n < 18 || !reflect.DeepEqual(a.Ops[n-3:], []Op{Heal{}, Wait{Millis: 2000}, DeleteAll{}}) {
			t.Fatalf("seed %d: %d ops, not closed by heal, wait, delete-all:\n%s", seed, n, a)
		}
		for i, o := range a.Ops {
			if err := wellFormed(o); err != "" {
				t.Fatalf("seed %d op #%d %s: %s", seed, i, o, err)
			}
		}
	}
	if j1, j2 := mustJSON(t, Generate(1, 18)), mustJSON(t, Generate(2, 18)); j1 == j2 {
		t.Fatal("seeds 1 and 2 generate the same history")
	}
}

// wellFormed checks that an op only names the universe.
func wellFormed(o Op) string {
	names := func(ns ...string) string {
		for _, n := range ns {
			if !slices.Contains(PipelineNames, n) {
				return "unknown pipeline " + n
			}
		}
		return ""
	}
	members := func(ms ...string) string {
		for _, m := range ms {
			if !slices.Contains(Members, m) {
				return "unknown member " + m
			}
		}
		return ""
	}
	switch o := o.(type) {
	case Create:
		return names(o.Name) + members(o.Placement...)
	case CreateRace:
		if len(o.Names) != 2 || len(o.Placements) != 2 || o.Names[0] == o.Names[1] {
			return "a race is two distinct creates"
		}
		return names(o.Names...) + members(slices.Concat(o.Placements...)...)
	case Place:
		return names(o.Name) + members(o.Placement...) + members(o.ConfirmGone...)
	case StopMember:
		return members(o.Member)
	case Hold:
		return names(o.Name) + members(o.Member)
	case KillHub:
		if o.Hub != 0 && o.Hub != 1 {
			return "no such hub"
		}
	}
	return ""
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestGenerateCoversTheFaults(t *testing.T) {
	kinds := map[string]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		for _, o := range Generate(seed, 18).Ops {
			kinds[o.Kind()]++
			if p, ok := o.(Place); ok && len(p.ConfirmGone) > 0 {
				kinds["place+confirm"]++
			}
			if c, ok := o.(Create); ok && c.Bypass {
				kinds["create+bypass"]++
			}
		}
	}
	for _, k := range []string{"create", "create-race", "place", "place+confirm", "delete", "terminate", "clear", "stop-member",
		"start-member", "pause-kubelet", "resume-kubelet", "kill-hub", "start-hub", "failover", "hold", "release", "hammer", "create+bypass"} {
		if kinds[k] == 0 {
			t.Errorf("200 seeds never generate %s (%v)", k, kinds)
		}
	}
}

func TestIdentityOf(t *testing.T) {
	for name, tc := range map[string]struct{ inline, want string }{
		"template":             {string(inlineDefinition("p0", "100010")), "mysql:100010"},
		"serverId with a zero": {`{"pipeline":"p","source":{"kind":"mysql","uri":"mysql://u@h/db","serverId":"042"},"sink":{"uri":"http://x","namespace":"raw"},"tables":[{"source":"db.t","target":"raw.t","primaryKey":["id"]}]}`, "mysql:42"},
		"serverId unset":       {`{"pipeline":"p","source":{"kind":"mysql","uri":"mysql://u@h/db"},"sink":{"uri":"http://x","namespace":"raw"},"tables":[{"source":"db.t","target":"raw.t","primaryKey":["id"]}]}`, "mysql:1101"},
		"postgres slotName":    {`{"pipeline":"p","source":{"kind":"postgres","uri":"postgres://u@h/db","slotName":"s2"},"sink":{"uri":"http://x","namespace":"raw"},"tables":[{"source":"public.t","target":"raw.t","primaryKey":["id"]}]}`, "postgres:s2"},
		"serverId number":      {`{"pipeline":"p","source":{"kind":"mysql","uri":"mysql://u@h/db","serverId":42},"sink":{"uri":"http://x","namespace":"raw"},"tables":[{"source":"db.t","target":"raw.t","primaryKey":["id"]}]}`, ""},
		"does not parse":       {`{"pipeline":"p","source":{"kind":"postgres"}}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := identityOf([]byte(tc.inline)); got != tc.want {
				t.Fatalf("identityOf = %q, want %q", got, tc.want)
			}
		})
	}
	if serverID(3, "s0") == serverID(4, "s0") || serverID(3, "s0") == serverID(3, "s1") {
		t.Fatal("serverIDs collide across histories or identities")
	}
}
