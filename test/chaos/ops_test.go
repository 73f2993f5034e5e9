package chaos

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urutau-io/fleet/internal/spec"
)

// every op kind, with every field set, so that a round trip proves nothing is lost.
func everyOp() []Op {
	return []Op{
		Create{Name: "p0", Identity: "s0", Placement: []string{"member-a"}, Bypass: true, RetryMillis: 3000, Selector: true, Padded: true},
		CreateRace{Names: []string{"p1", "p2"}, Identity: "s1", Placements: [][]string{{"member-a"}, {"member-b", "member-c"}}, Bypass: true, Padded: true},
		FreezeHub{Millis: 20000},
		Place{Name: "p0", Placement: []string{}, ConfirmGone: []string{"member-a"}, Selector: true},
		Delete{Name: "p0"}, Terminate{Name: "p1"}, Clear{Name: "p1"},
		StopMember{Member: "member-b"}, StartMember{Member: "member-b"},
		PauseKubelet{Member: "member-c"}, ResumeKubelet{Member: "member-c"},
		KillHub{Hub: 1}, StartHub{Hub: 1}, Failover{},
		Hold{Member: "member-a", Name: "p0", Object: "configmap"}, Release{Member: "member-a"}, Release{},
		Hammer{Name: "p0", Millis: 1500}, Wait{Millis: 10},
		Await{Cond: CondRunning, Name: "p0", Member: "member-a", Millis: 1000},
		KillHubWhen{Cond: CondNoTombstone, Name: "p0", Member: "member-b", Millis: 500},
		Heal{}, DeleteAll{},
		Scale{Member: "member-a", Name: "p0", Replicas: 2}, HandPod{Member: "member-b", Name: "p1"},
		DeleteSTS{Member: "member-a", Name: "p0", Orphan: true}, EditSTS{Member: "member-a", Name: "p0", Edit: EditUnlabel},
		Export{Member: "member-a", Name: "p0"}, Restore{Member: "member-c", Name: "p0", From: "member-a"},
		Label{Member: "member-b", On: true}, Deregister{Member: "member-c"}, Register{Member: "member-c"},
		Repoint{Member: "member-a", DB: SharedDB},
		Create{Name: "p3", Identity: "s1", Failover: &FailoverSpec{Candidates: []string{"member-b", "member-a"}, CandidateSelector: true, ThresholdMillis: 12000}},
		Create{Name: "p2", Identity: "s0", Placement: []string{"member-c"}, Fenced: true},
		Partition{Member: "member-a", Hang: true}, Reconnect{Member: "member-a"},
		SlowPath{Member: "member-b", Millis: 1500}, Reconnect{Member: "member-b"},
		SlowAdmission{Member: "member-c", Millis: 6000}, DropAdmission{Member: "member-c"},
		Alias{Member: "member-b", On: true}, Alias{Member: "member-b"},
		Respec{Name: "p1", LogLevel: "debug"}, Respec{Name: "p1"},
		Await{Cond: CondFailoverOn, Name: "p3", Member: "member-b", Millis: 1000, Required: true},
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
		"kill-hub-when", "heal", "delete-all", "scale", "hand-pod", "delete-sts", "edit-sts", "export", "restore", "label",
		"deregister", "register", "repoint", "partition", "reconnect", "freeze-hub", "slow-path", "slow-admission", "drop-admission", "alias", "respec"} {
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
	// placed are the names a placement may use: members and their aliases.
	placed := func(ms ...string) string {
		for _, m := range ms {
			if !slices.Contains(Members, clusterOf(m)) {
				return "unknown member " + m
			}
		}
		return ""
	}
	switch o := o.(type) {
	case Create:
		return names(o.Name) + placed(o.Placement...)
	case CreateRace:
		if len(o.Names) != 2 || len(o.Placements) != 2 || o.Names[0] == o.Names[1] {
			return "a race is two distinct creates"
		}
		return names(o.Names...) + placed(slices.Concat(o.Placements...)...)
	case Place:
		return names(o.Name) + placed(o.Placement...) + members(o.ConfirmGone...)
	case StopMember:
		return members(o.Member)
	case Hold, Scale, HandPod, DeleteSTS, Export:
		return handWellFormed(o, names, members)
	case EditSTS:
		if o.Edit != EditTemplate && o.Edit != EditUnlabel {
			return "unknown edit " + o.Edit
		}
		return names(o.Name) + members(o.Member)
	case Restore:
		return names(o.Name) + members(o.Member, o.From)
	case Label:
		return members(o.Member)
	case Deregister:
		return members(o.Member)
	case Register:
		return members(o.Member)
	case Alias:
		return members(o.Member)
	case Respec:
		if !slices.Contains(logLevels, o.LogLevel) {
			return "unknown log level " + o.LogLevel
		}
		return names(o.Name)
	case SlowPath:
		if o.Millis <= 0 {
			return "a slow path without a delay"
		}
		return members(o.Member)
	case SlowAdmission:
		if o.Millis <= 0 || ms(o.Millis) >= webhookMaxHold {
			return "a webhook hold outside (0, 30 s)"
		}
		return members(o.Member)
	case Repoint:
		if o.DB != "" && o.DB != SharedDB {
			return "unknown database " + o.DB
		}
		return members(o.Member)
	case KillHub:
		if o.Hub != 0 && o.Hub != 1 {
			return "no such hub"
		}
	}
	return ""
}

// handWellFormed checks the ops that name one pipeline in one member.
func handWellFormed(o Op, names, members func(...string) string) string {
	var name, member string
	switch o := o.(type) {
	case Hold:
		name, member = o.Name, o.Member
	case Scale:
		if o.Replicas != 0 && o.Replicas != 2 {
			return "a hand scale is to 0 or 2"
		}
		name, member = o.Name, o.Member
	case HandPod:
		name, member = o.Name, o.Member
	case DeleteSTS:
		name, member = o.Name, o.Member
	case Export:
		name, member = o.Name, o.Member
	}
	return names(name) + members(member)
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
			if c, ok := o.(Create); ok && c.Padded {
				kinds["create+padded"]++
			}
			if c, ok := o.(Create); ok && !isMySQL(c.Identity) {
				kinds["create+postgres"]++
			}
			if c, ok := o.(CreateRace); ok && c.Padded {
				kinds["create-race+padded"]++
			}
			if c, ok := o.(Create); ok && c.Bypass {
				kinds["create+bypass"]++
			}
			if c, ok := o.(Create); ok && c.Selector {
				kinds["create+selector"]++
			}
			if p, ok := o.(Place); ok && p.Selector {
				kinds["place+selector"]++
			}
			if s, ok := o.(Scale); ok {
				kinds[fmt.Sprintf("scale+%d", s.Replicas)]++
			}
			if d, ok := o.(DeleteSTS); ok && d.Orphan {
				kinds["delete-sts+orphan"]++
			}
			if e, ok := o.(EditSTS); ok {
				kinds["edit-sts+"+e.Edit]++
			}
			if r, ok := o.(Restore); ok && r.Member != r.From {
				kinds["restore+elsewhere"]++
			}
			if r, ok := o.(Repoint); ok {
				kinds["repoint+"+r.DB]++
			}
			aliasKinds(o, kinds)
			failoverKinds(o, kinds)
		}
	}
	for _, k := range []string{"create", "create-race", "place", "place+confirm", "delete", "terminate", "clear", "stop-member",
		"start-member", "pause-kubelet", "resume-kubelet", "kill-hub", "start-hub", "failover", "hold", "release", "hammer", "create+bypass",
		"create+selector", "place+selector", "scale+0", "scale+2", "hand-pod", "delete-sts", "delete-sts+orphan", "edit-sts+template",
		"edit-sts+unlabel", "export", "restore", "restore+elsewhere", "label", "deregister", "register", "repoint+shared", "repoint+",
		"freeze-hub", "create+padded", "create+postgres", "create-race+padded", "create+failover", "create+failover+3", "create+failover+selector", "create+fenced", "partition", "partition+hang", "reconnect",
		"wait+failover", "slow-path", "slow-path+late", "slow-admission", "slow-admission+late", "drop-admission", "alias+on", "alias+off", "place+alias", "place+alias+twice", "respec"} {
		if kinds[k] == 0 {
			t.Errorf("200 seeds never generate %s (%v)", k, kinds)
		}
	}
}

func TestIdentityOf(t *testing.T) {
	for name, tc := range map[string]struct{ inline, want string }{
		"template":              {string(inlineDefinition("p0", "mysql", "100010")), "mysql:100010"},
		"template, padded":      {string(inlineDefinition("p0", "mysql", "00100010")), "mysql:100010"},
		"template, postgres":    {string(inlineDefinition("p0", "postgres", "chaos_3_p0")), "postgres:chaos_3_p0"},
		"serverId not a number": {`{"source":{"kind":"mysql","serverId":"x42"}}`, ""},
		"serverId with a zero":  {`{"pipeline":"p","source":{"kind":"mysql","uri":"mysql://u@h/db","serverId":"042"},"sink":{"uri":"http://x","namespace":"raw"},"tables":[{"source":"db.t","target":"raw.t","primaryKey":["id"]}]}`, "mysql:42"},
		"serverId unset":        {`{"pipeline":"p","source":{"kind":"mysql","uri":"mysql://u@h/db"},"sink":{"uri":"http://x","namespace":"raw"},"tables":[{"source":"db.t","target":"raw.t","primaryKey":["id"]}]}`, "mysql:1101"},
		"postgres slotName":     {`{"pipeline":"p","source":{"kind":"postgres","uri":"postgres://u@h/db","slotName":"s2"},"sink":{"uri":"http://x","namespace":"raw"},"tables":[{"source":"public.t","target":"raw.t","primaryKey":["id"]}]}`, "postgres:s2"},
		"serverId number":       {`{"pipeline":"p","source":{"kind":"mysql","uri":"mysql://u@h/db","serverId":42},"sink":{"uri":"http://x","namespace":"raw"},"tables":[{"source":"db.t","target":"raw.t","primaryKey":["id"]}]}`, ""},
		"does not parse":        {`{"pipeline":"p","source":{"kind":"postgres"}}`, ""},
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

// failoverKinds counts the failover variants of o.
func failoverKinds(o Op, kinds map[string]int) {
	switch o := o.(type) {
	case Create:
		switch {
		case o.Failover != nil:
			kinds["create+failover"]++
			if len(o.Failover.Candidates) == 3 {
				kinds["create+failover+3"]++
			}
			if o.Failover.CandidateSelector {
				kinds["create+failover+selector"]++
			}
		case o.Fenced:
			kinds["create+fenced"]++
		}
	case Partition:
		if o.Hang {
			kinds["partition+hang"]++
		}
	case SlowPath:
		if 2*ms(o.Millis) > memberTimeout {
			kinds["slow-path+late"]++
		}
	case SlowAdmission:
		if ms(o.Millis) > memberTimeout {
			kinds["slow-admission+late"]++
		}
	case Wait:
		if o.Millis >= int((10*time.Second+fenceTTL+fenceGrace+fenceMargin+failoverSlack)/time.Millisecond) {
			kinds["wait+failover"]++
		}
	}
}

// Every definition a history submits is one the fleet accepts, with the identity the checker
// reads: otherwise every create would be refused and the spellings would test nothing.
func TestTemplatesParse(t *testing.T) {
	for _, id := range Identities {
		for _, padded := range []bool{false, true} {
			kind, value := sourceOf(1, id, padded)
			raw := inlineDefinition("p0", kind, value)
			in, errs := spec.Parse(raw)
			if len(errs) > 0 {
				t.Fatalf("%s (padded %v): the fleet refuses %s: %v", id, padded, raw, errs)
			}
			got, ok := in.Identity()
			if want := identityOf(raw); !ok || got.Kind+":"+got.Value != want || want == "" {
				t.Errorf("%s (padded %v): the fleet reads %v, the checker %q", id, padded, got, want)
			}
		}
	}
	if _, a := sourceOf(1, "s0", false); a == func() string { _, b := sourceOf(1, "s0", true); return b }() {
		t.Error("a padded serverId is written as the plain one")
	}
}

// aliasKinds counts the alias variants of o: an alias added or removed, a placement naming a
// member by its alias, and one naming a member twice.
func aliasKinds(o Op, kinds map[string]int) {
	switch o := o.(type) {
	case Alias:
		if o.On {
			kinds["alias+on"]++
		} else {
			kinds["alias+off"]++
		}
	case Place:
		for _, n := range o.Placement {
			if clusterOf(n) != n {
				kinds["place+alias"]++
				if slices.Contains(o.Placement, clusterOf(n)) {
					kinds["place+alias+twice"]++
				}
			}
		}
	}
}
