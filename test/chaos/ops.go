package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Op is one operation of a history: plain data, printable, JSON-serialisable, replayable. Each
// kind is its own type; the executor (exec.go) gives each its effect on the fleet.
type Op interface {
	// Kind is the op's name in JSON ("op": "<kind>").
	Kind() string
	// String is a one-line description for reports.
	String() string
}

// Create creates pipeline Name with source Identity placed on Placement. Bypass creates it with
// the label that the fleet's webhook configuration skips: admission is only the friendly front,
// the reconciler must hold the rules on its own.
type Create struct {
	Name      string   `json:"name"`
	Identity  string   `json:"identity"`
	Placement []string `json:"placement"`
	Bypass    bool     `json:"bypass,omitempty"`
	// RetryMillis: while a pipeline of that name is still being deleted, try again for this
	// long, as a person or a GitOps tool re-creating it would.
	RetryMillis int `json:"retryMillis,omitempty"`
	// Selector places it also on the members whose inventory entry carries SelectorLabel.
	Selector bool `json:"selector,omitempty"`
	// Fenced runs its coordinators under the fence (spec.placement.fenced).
	Fenced bool `json:"fenced,omitempty"`
	// Failover, when set, makes it a failover placement (fenced) over these candidates, most
	// preferred first, instead of Placement and Selector.
	Failover *FailoverSpec `json:"failover,omitempty"`
	// Padded writes a MySQL serverId with leading zeros ("00100010"): the same server id.
	Padded bool `json:"padded,omitempty"`
}

// FailoverSpec is a failover placement: Candidates in order, then (CandidateSelector) the
// members labelled SelectorLabel; lost for ThresholdMillis before it moves.
type FailoverSpec struct {
	Candidates        []string `json:"candidates,omitempty"`
	CandidateSelector bool     `json:"candidateSelector,omitempty"`
	ThresholdMillis   int      `json:"thresholdMillis"`
}

func (f FailoverSpec) String() string {
	s := "failover over " + set(f.Candidates)
	if f.CandidateSelector {
		s += " then " + SelectorLabel
	}
	return s + fmt.Sprintf(" threshold %s", ms(f.ThresholdMillis))
}

// CreateRace creates two pipelines with one identity at the same instant (two goroutines released
// together), through the webhook or bypassing it.
type CreateRace struct {
	Names      []string   `json:"names"`
	Identity   string     `json:"identity"`
	Placements [][]string `json:"placements"`
	Bypass     bool       `json:"bypass,omitempty"`
	// Padded: the second pipeline writes the MySQL serverId with leading zeros, the first plainly.
	Padded bool `json:"padded,omitempty"`
}

// Place sets spec.placement.clusters of Name. ConfirmGone, when set, is written to the
// urutau.io/confirm-cluster-gone annotation in the same update (a person confirming members
// gone for this move); otherwise the annotation is left as it is (a person forgetting it).
type Place struct {
	Name        string   `json:"name"`
	Placement   []string `json:"placement"`
	ConfirmGone []string `json:"confirmGone,omitempty"`
	// Selector sets spec.placement.clusterSelector to SelectorLabel (the union with Placement, as
	// the hub resolves it); without it the selector is removed.
	Selector bool `json:"selector,omitempty"`
}

// Delete deletes pipeline Name (the CR; the hub's finalizer does the rest).
type Delete struct {
	Name string `json:"name"`
}

// Respec changes Name's spec.logLevel to LogLevel ("": removed): a spec change that is no
// placement change, so every member the pipeline runs on rolls its coordinator (a new pod
// template), and a termination is lifted.
type Respec struct {
	Name     string `json:"name"`
	LogLevel string `json:"logLevel,omitempty"`
}

// Terminate sets status.terminated on Name through the status subresource, as a person would.
type Terminate struct {
	Name string `json:"name"`
}

// Clear removes status.terminated from Name through the status subresource.
type Clear struct {
	Name string `json:"name"`
}

// StopMember kills the member's kube-apiserver (the member stops answering; its pods go on).
type StopMember struct {
	Member string `json:"member"`
}

// Partition cuts the path between the hub and Member only: the hub's connections are refused
// (or, Hang, accepted and never answered: a member that hangs, as the hub sees it), while the
// member, its pods and everyone else still reach its API server.
type Partition struct {
	Member string `json:"member"`
	Hang   bool   `json:"hang,omitempty"`
}

// Reconnect opens the hub's path to Member again (connections frozen by a hang are dropped).
type Reconnect struct {
	Member string `json:"member"`
}

// SlowPath slows the path between the hub and Member: every chunk either way is forwarded Millis
// late (a member that answers slowly). A round trip longer than --member-timeout makes the hub
// give up on requests that the member still receives and commits: late writes. Reconnect ends it.
type SlowPath struct {
	Member string `json:"member"`
	Millis int    `json:"millis"`
}

// SlowAdmission registers on Member a validating admission webhook that holds each create and
// update of a StatefulSet by the hub Millis before it allows it (a slow policy engine on the
// member). DropAdmission (or Heal) removes it.
type SlowAdmission struct {
	Member string `json:"member"`
	Millis int    `json:"millis"`
}

// DropAdmission removes SlowAdmission's webhook from Member.
type DropAdmission struct {
	Member string `json:"member"`
}

// StartMember starts the member's kube-apiserver again.
type StartMember struct {
	Member string `json:"member"`
}

// PauseKubelet freezes the member's kwok controller (SIGSTOP): pods neither start nor finish
// terminating, as with a node whose kubelet is slow to kill a coordinator.
type PauseKubelet struct {
	Member string `json:"member"`
}

// ResumeKubelet lets the member's kwok controller go on (SIGCONT).
type ResumeKubelet struct {
	Member string `json:"member"`
}

// KillHub SIGKILLs hub process Hub (0 or 1). When it held the leader Lease, the Lease is removed
// so that the next replica takes over at once instead of after the lease duration.
type KillHub struct {
	Hub int `json:"hub"`
}

// FreezeHub stops the leading hub process (SIGSTOP) for Millis, and until the other replica holds
// the leader Lease, then lets it go on (SIGCONT): for a moment two replicas believe they lead. The
// one that was frozen checks its lease before each member write (memberwork.LeaderFence) and
// leaves when it sees the Lease taken; a write already past that check when the process stopped
// is the fence's documented gap, bounded by the checks before a coordinator is created.
type FreezeHub struct {
	Millis int `json:"millis"`
}

// StartHub starts hub process Hub (with leader election, as every hub of the chaos fleet).
type StartHub struct {
	Hub int `json:"hub"`
}

// Failover starts the other hub process if it is not running, then kills the leader.
type Failover struct{}

// Hold adds a foreign finalizer to one object of pipeline Name in Member (Object is a kind:
// configmap, service, serviceaccount, role, statefulset), so it lingers in deletion the way a
// ScaledObject held by KEDA's finalizer does.
type Hold struct {
	Member string `json:"member"`
	Name   string `json:"name"`
	Object string `json:"object"`
}

// Release removes the foreign finalizer from every object of the history in Member (every
// member when empty).
type Release struct {
	Member string `json:"member,omitempty"`
}

// Hammer updates an annotation of Name as fast as it can for Millis, in the background, so the
// hub's writes to the pipeline meet conflicts (another writer, e.g. a GitOps tool).
type Hammer struct {
	Name   string `json:"name"`
	Millis int    `json:"millis"`
}

// Scale sets the replicas of pipeline Name's coordinator StatefulSet in Member through the scale
// subresource, as `kubectl scale` does: 2 is a second reader, 0 a pipeline stopped without a word.
type Scale struct {
	Member   string `json:"member"`
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
}

// HandPod creates in Member a pod with the coordinator's labels of pipeline Name (`kubectl run`
// with the labels copied from the running pod): a reader no StatefulSet controls.
type HandPod struct {
	Member string `json:"member"`
	Name   string `json:"name"`
}

// DeleteSTS deletes pipeline Name's coordinator StatefulSet in Member by hand; Orphan leaves its
// pods running (`kubectl delete --cascade=orphan`).
type DeleteSTS struct {
	Member string `json:"member"`
	Name   string `json:"name"`
	Orphan bool   `json:"orphan,omitempty"`
}

// Edits EditSTS makes.
const (
	// EditTemplate changes an annotation of the pod template: a rolling restart.
	EditTemplate = "template"
	// EditUnlabel removes the hub's pipeline-UID label, by which the hub finds what to delete.
	EditUnlabel = "unlabel"
)

// EditSTS edits pipeline Name's coordinator StatefulSet in Member by hand (Edit: EditTemplate or
// EditUnlabel).
type EditSTS struct {
	Member string `json:"member"`
	Name   string `json:"name"`
	Edit   string `json:"edit"`
}

// Export saves every object the hub wrote for pipeline Name in Member, as a backup or `kubectl get
// -o yaml` does (server-set fields dropped).
type Export struct {
	Member string `json:"member"`
	Name   string `json:"name"`
}

// Restore creates in Member what the last Export of Name in From saved (what is there already is
// left alone): a restore from a backup, or a re-applied export. It refuses an export of an older
// pipeline of that name (that would be an orphan, which the hub only reports).
type Restore struct {
	Member string `json:"member"`
	Name   string `json:"name"`
	From   string `json:"from"`
}

// Label sets (On) or removes SelectorLabel on Member's inventory entry (its kubeconfig Secret on
// the hub): the member gains or loses the selector placements that match it.
type Label struct {
	Member string `json:"member"`
	On     bool   `json:"on,omitempty"`
}

// Deregister deletes Member's kubeconfig Secret from the hub (the member leaves the inventory; its
// pods go on running).
type Deregister struct {
	Member string `json:"member"`
}

// Register creates Member's kubeconfig Secret again, with the labels it had.
type Register struct {
	Member string `json:"member"`
}

// Alias registers Member's cluster a second time, under AliasOf(Member) (On), or removes that
// entry: one cluster under two names, and with Deregister of Member the documented rename (the
// new entry first, the old one removed after). Heal removes every alias.
type Alias struct {
	Member string `json:"member"`
	On     bool   `json:"on,omitempty"`
}

// AliasOf is the second name Alias registers member's cluster under.
func AliasOf(member string) string { return member + "-alias" }

// clusterOf is the member (cluster) an inventory name stands for: itself, or the member an alias
// names again.
func clusterOf(name string) string {
	for _, m := range Members {
		if name == AliasOf(m) {
			return m
		}
	}
	return name
}

// SharedDB is the database Repoint names when members are to read one database.
const SharedDB = "shared"

// Repoint points the source Secret of the history's namespace in Member at database DB: "" the
// member's own (db.<member>.example), SharedDB one database every member pointed at it reads.
type Repoint struct {
	Member string `json:"member"`
	DB     string `json:"db,omitempty"`
}

// editAnnotation is the pod template annotation EditSTS changes.
const editAnnotation = "chaos.urutau.io/edited"

// Wait pauses the history.
type Wait struct {
	Millis int `json:"millis"`
}

// Conditions Await and KillHubWhen wait for.
const (
	// CondRunning: a coordinator pod of Name is Running in Member.
	CondRunning = "running"
	// CondNoPods: no coordinator pod of Name in Member (Member empty: in any member).
	CondNoPods = "no-pods"
	// CondTombstone: a tombstone of Name for Member is on the hub: a reader-lease entry of a
	// deleted Name, or one a person confirmed gone.
	CondTombstone = "tombstone"
	// CondNoTombstone: no tombstone of Name for Member is on the hub.
	CondNoTombstone = "no-tombstone"
	// CondGone: the CDCPipeline Name is gone from the hub.
	CondGone = "gone"
	// CondOneReader: Name's coordinator StatefulSet in Member asks for one replica, and exactly one
	// coordinator pod of Name is there, Running: a hand scale, pod or edit was undone.
	CondOneReader = "one-reader"
	// CondClean: nothing of Name in Member: no coordinator pod, no object the hub writes that
	// carries the live pipeline's UID.
	CondClean = "clean"
	// CondFailoverOn: the failover placement of Name runs on (or moves to) Member:
	// status.failover.member.
	CondFailoverOn = "failover-on"
)

// Await waits until Cond holds for Name (and Member), or Millis pass. Named cases use it to reach
// the window they test (Required: a case whose window was not reached fails, it proved nothing),
// or only to pace the history where a correct hub may rightly refuse what it waits for.
type Await struct {
	Cond     string `json:"cond"`
	Name     string `json:"name,omitempty"`
	Member   string `json:"member,omitempty"`
	Millis   int    `json:"millis"`
	Required bool   `json:"required,omitempty"`
}

// KillHubWhen watches for Cond (Name, Member) and SIGKILLs the leader hub the moment it holds,
// waiting at most Millis.
type KillHubWhen struct {
	Cond   string `json:"cond"`
	Name   string `json:"name,omitempty"`
	Member string `json:"member,omitempty"`
	Millis int    `json:"millis"`
}

// Heal brings the fleet back: every member API server up, every kubelet running, every member
// in the inventory (with the labels it had) and under its own name only (no Alias), every path to
// the hub open and fast, no slow admission webhook, every foreign finalizer released, hammers stopped, hub 0 running.
type Heal struct{}

// DeleteAll deletes every pipeline of the history.
type DeleteAll struct{}

func (Create) Kind() string        { return "create" }
func (CreateRace) Kind() string    { return "create-race" }
func (Place) Kind() string         { return "place" }
func (Delete) Kind() string        { return "delete" }
func (Terminate) Kind() string     { return "terminate" }
func (Respec) Kind() string        { return "respec" }
func (Clear) Kind() string         { return "clear" }
func (StopMember) Kind() string    { return "stop-member" }
func (StartMember) Kind() string   { return "start-member" }
func (Partition) Kind() string     { return "partition" }
func (Reconnect) Kind() string     { return "reconnect" }
func (SlowPath) Kind() string      { return "slow-path" }
func (SlowAdmission) Kind() string { return "slow-admission" }
func (DropAdmission) Kind() string { return "drop-admission" }
func (PauseKubelet) Kind() string  { return "pause-kubelet" }
func (ResumeKubelet) Kind() string { return "resume-kubelet" }
func (KillHub) Kind() string       { return "kill-hub" }
func (StartHub) Kind() string      { return "start-hub" }
func (FreezeHub) Kind() string     { return "freeze-hub" }
func (Failover) Kind() string      { return "failover" }
func (Hold) Kind() string          { return "hold" }
func (Release) Kind() string       { return "release" }
func (Hammer) Kind() string        { return "hammer" }
func (Scale) Kind() string         { return "scale" }
func (HandPod) Kind() string       { return "hand-pod" }
func (DeleteSTS) Kind() string     { return "delete-sts" }
func (EditSTS) Kind() string       { return "edit-sts" }
func (Export) Kind() string        { return "export" }
func (Restore) Kind() string       { return "restore" }
func (Label) Kind() string         { return "label" }
func (Deregister) Kind() string    { return "deregister" }
func (Register) Kind() string      { return "register" }
func (Repoint) Kind() string       { return "repoint" }
func (Alias) Kind() string         { return "alias" }
func (Wait) Kind() string          { return "wait" }
func (Await) Kind() string         { return "await" }
func (KillHubWhen) Kind() string   { return "kill-hub-when" }
func (Heal) Kind() string          { return "heal" }
func (DeleteAll) Kind() string     { return "delete-all" }

func (o Create) String() string {
	s := fmt.Sprintf("create %s identity=%s placement=%s%s", o.Name, o.Identity, set(o.Placement), bypass(o.Bypass))
	if o.Selector {
		s += " and selector " + SelectorLabel
	}
	if o.Failover != nil {
		s = fmt.Sprintf("create %s identity=%s %s%s", o.Name, o.Identity, o.Failover, bypass(o.Bypass))
	} else if o.Fenced {
		s += " fenced"
	}
	if o.Padded {
		s += " (serverId padded with zeros)"
	}
	if o.RetryMillis > 0 {
		s += fmt.Sprintf(" (retrying %dms while the old one is deleted)", o.RetryMillis)
	}
	return s
}

func (o CreateRace) String() string {
	var parts []string
	for i, n := range o.Names {
		var pl []string
		if i < len(o.Placements) {
			pl = o.Placements[i]
		}
		parts = append(parts, n+" on "+set(pl))
	}
	padded := ""
	if o.Padded {
		padded = " (the second's serverId padded with zeros)"
	}
	return fmt.Sprintf("create at once %s identity=%s%s%s", strings.Join(parts, " and "), o.Identity, bypass(o.Bypass), padded)
}

func (o Place) String() string {
	s := fmt.Sprintf("place %s on %s", o.Name, set(o.Placement))
	if o.Selector {
		s += " and selector " + SelectorLabel
	}
	if len(o.ConfirmGone) > 0 {
		s += " confirming gone " + set(o.ConfirmGone)
	}
	return s
}

func (o Delete) String() string    { return "delete " + o.Name }
func (o Terminate) String() string { return "terminate " + o.Name }
func (o Respec) String() string {
	return fmt.Sprintf("set spec.logLevel of %s to %q (its coordinators roll)", o.Name, o.LogLevel)
}
func (o Clear) String() string       { return "clear termination of " + o.Name }
func (o StopMember) String() string  { return "stop API server of " + o.Member }
func (o StartMember) String() string { return "start API server of " + o.Member }
func (o Reconnect) String() string   { return "reconnect the hub to " + o.Member }

func (o SlowPath) String() string {
	return fmt.Sprintf("slow the path between the hub and %s: each chunk %dms late", o.Member, o.Millis)
}
func (o SlowAdmission) String() string {
	return fmt.Sprintf("an admission webhook in %s holds the hub's StatefulSet writes %dms", o.Member, o.Millis)
}
func (o DropAdmission) String() string { return "remove the slow admission webhook of " + o.Member }

func (o Partition) String() string {
	if o.Hang {
		return "partition " + o.Member + " from the hub (its connections hang)"
	}
	return "partition " + o.Member + " from the hub (its connections refused)"
}
func (o PauseKubelet) String() string  { return "pause kubelet of " + o.Member }
func (o ResumeKubelet) String() string { return "resume kubelet of " + o.Member }
func (o KillHub) String() string       { return fmt.Sprintf("SIGKILL hub-%d", o.Hub) }
func (o StartHub) String() string      { return fmt.Sprintf("start hub-%d", o.Hub) }
func (Failover) String() string        { return "leader failover" }
func (o FreezeHub) String() string {
	return fmt.Sprintf("freeze the leading hub (SIGSTOP) for %s, past its leader Lease, then SIGCONT", ms(o.Millis))
}

func (o Hold) String() string {
	return fmt.Sprintf("foreign finalizer on the %s of %s in %s", o.Object, o.Name, o.Member)
}

func (o Release) String() string {
	if o.Member == "" {
		return "release foreign finalizers everywhere"
	}
	return "release foreign finalizers in " + o.Member
}

func (o Hammer) String() string {
	return fmt.Sprintf("hammer %s with updates for %dms", o.Name, o.Millis)
}
func (o Wait) String() string { return fmt.Sprintf("wait %dms", o.Millis) }

func (o Scale) String() string {
	return fmt.Sprintf("kubectl scale the coordinator of %s in %s to %d", o.Name, o.Member, o.Replicas)
}
func (o HandPod) String() string {
	return fmt.Sprintf("a pod made by hand with the coordinator labels of %s in %s", o.Name, o.Member)
}

func (o DeleteSTS) String() string {
	cascade := ""
	if o.Orphan {
		cascade = " --cascade=orphan"
	}
	return fmt.Sprintf("kubectl delete%s the coordinator StatefulSet of %s in %s", cascade, o.Name, o.Member)
}

func (o EditSTS) String() string {
	return fmt.Sprintf("edit (%s) the coordinator StatefulSet of %s in %s by hand", o.Edit, o.Name, o.Member)
}
func (o Export) String() string {
	return fmt.Sprintf("export the objects of %s in %s", o.Name, o.Member)
}
func (o Restore) String() string {
	return fmt.Sprintf("restore in %s the export of %s taken in %s", o.Member, o.Name, o.From)
}

func (o Label) String() string {
	if o.On {
		return fmt.Sprintf("label %s's inventory entry %s", o.Member, SelectorLabel)
	}
	return fmt.Sprintf("remove %s from %s's inventory entry", SelectorLabel, o.Member)
}
func (o Deregister) String() string { return "remove the kubeconfig Secret of " + o.Member }
func (o Register) String() string   { return "add the kubeconfig Secret of " + o.Member + " again" }
func (o Alias) String() string {
	if o.On {
		return "register " + o.Member + " a second time, as " + AliasOf(o.Member)
	}
	return "remove the kubeconfig Secret " + AliasOf(o.Member)
}
func (o Repoint) String() string {
	db := o.DB
	if db == "" {
		db = "its own"
	}
	return fmt.Sprintf("point the source Secret in %s at %s database", o.Member, db)
}

func (o Await) String() string {
	must := ""
	if o.Required {
		must = ", required"
	}
	return fmt.Sprintf("await %s %s %s (at most %dms%s)", o.Cond, o.Name, o.Member, o.Millis, must)
}

func (o KillHubWhen) String() string {
	return fmt.Sprintf("SIGKILL the leader hub when %s %s %s (at most %dms)", o.Cond, o.Name, o.Member, o.Millis)
}

func (Heal) String() string {
	return "heal: members up and registered, paths open, kubelets running, finalizers released, hub-0 up"
}
func (DeleteAll) String() string { return "delete every pipeline" }

func set(s []string) string { return "[" + strings.Join(s, ",") + "]" }

func bypass(b bool) string {
	if b {
		return " (webhook bypassed)"
	}
	return ""
}

// newOp returns an empty op of kind, for decoding.
func newOp(kind string) (Op, error) {
	for _, o := range []Op{
		&Create{}, &CreateRace{}, &Place{}, &Respec{}, &Delete{}, &Terminate{}, &Clear{}, &StopMember{}, &StartMember{},
		&PauseKubelet{}, &ResumeKubelet{}, &KillHub{}, &StartHub{}, &Failover{}, &FreezeHub{}, &Hold{}, &Release{},
		&Hammer{}, &Wait{}, &Await{}, &KillHubWhen{}, &Heal{}, &DeleteAll{},
		&Partition{}, &Reconnect{}, &SlowPath{}, &SlowAdmission{}, &DropAdmission{},
		&Scale{}, &HandPod{}, &DeleteSTS{}, &EditSTS{}, &Export{}, &Restore{}, &Label{}, &Deregister{}, &Register{}, &Repoint{}, &Alias{},
	} {
		if o.Kind() == kind {
			return o, nil
		}
	}
	return nil, fmt.Errorf("unknown op %q", kind)
}

// History is a replayable list of operations.
type History struct {
	// Name is "seed-<n>" for generated histories, the case's name for named ones.
	Name string `json:"name"`
	// Seed generated the history (0 for named cases).
	Seed uint64 `json:"seed,omitempty"`
	Ops  []Op   `json:"-"`
}

type historyJSON struct {
	Name string            `json:"name"`
	Seed uint64            `json:"seed,omitempty"`
	Ops  []json.RawMessage `json:"ops"`
}

// MarshalJSON writes each op as an object with its kind under "op".
func (h History) MarshalJSON() ([]byte, error) {
	out := historyJSON{Name: h.Name, Seed: h.Seed, Ops: []json.RawMessage{}}
	for _, o := range h.Ops {
		raw, err := marshalOp(o)
		if err != nil {
			return nil, err
		}
		out.Ops = append(out.Ops, raw)
	}
	return json.Marshal(out)
}

func marshalOp(o Op) ([]byte, error) {
	body, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	kind, _ := json.Marshal(o.Kind())
	if bytes.Equal(body, []byte("{}")) {
		return []byte(`{"op":` + string(kind) + `}`), nil
	}
	return append([]byte(`{"op":`+string(kind)+`,`), body[1:]...), nil
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown op or field is an error naming it.
func (h *History) UnmarshalJSON(raw []byte) error {
	var in historyJSON
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	h.Name, h.Seed, h.Ops = in.Name, in.Seed, nil
	for i, r := range in.Ops {
		var head struct {
			Op string `json:"op"`
		}
		if err := json.Unmarshal(r, &head); err != nil {
			return fmt.Errorf("ops[%d]: %w", i, err)
		}
		o, err := newOp(head.Op)
		if err != nil {
			return fmt.Errorf("ops[%d]: %w", i, err)
		}
		body := stripOpKey(r)
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(o); err != nil {
			return fmt.Errorf("ops[%d] (%s): %w", i, head.Op, err)
		}
		h.Ops = append(h.Ops, deref(o))
	}
	return nil
}

// stripOpKey removes the "op" key so that the rest decodes strictly into the op's type.
func stripOpKey(raw []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "op")
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// deref turns the decoding pointer back into the op value the executor switches on.
func deref(o Op) Op {
	switch v := o.(type) {
	case *Create:
		return *v
	case *CreateRace:
		return *v
	case *Place:
		return *v
	case *Delete:
		return *v
	case *Terminate:
		return *v
	case *Respec:
		return *v
	case *Clear:
		return *v
	case *StopMember:
		return *v
	case *StartMember:
		return *v
	case *PauseKubelet:
		return *v
	case *ResumeKubelet:
		return *v
	case *KillHub:
		return *v
	case *StartHub:
		return *v
	case *Failover:
		return *v
	case *FreezeHub:
		return *v
	case *Hold:
		return *v
	case *Release:
		return *v
	case *Hammer:
		return *v
	case *Wait:
		return *v
	case *Await:
		return *v
	case *KillHubWhen:
		return *v
	case *Heal:
		return *v
	case *DeleteAll:
		return *v
	}
	return derefHands(o)
}

// derefHands is deref for the ops of people's hands and the inventory.
func derefHands(o Op) Op {
	switch v := o.(type) {
	case *Scale:
		return *v
	case *HandPod:
		return *v
	case *DeleteSTS:
		return *v
	case *EditSTS:
		return *v
	case *Export:
		return *v
	case *Restore:
		return *v
	case *Label:
		return *v
	case *Deregister:
		return *v
	case *Register:
		return *v
	case *Repoint:
		return *v
	case *Alias:
		return *v
	case *Partition:
		return *v
	case *Reconnect:
		return *v
	case *SlowPath:
		return *v
	case *SlowAdmission:
		return *v
	case *DropAdmission:
		return *v
	}
	return o
}

// String prints the history one op a line, numbered as the recording numbers them.
func (h History) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "history %s (%d ops)\n", h.Name, len(h.Ops))
	for i, o := range h.Ops {
		fmt.Fprintf(&b, "  #%02d %s\n", i, o)
	}
	return b.String()
}

// Save writes the history as indented JSON to path.
func (h History) Save(path string) error {
	raw, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// LoadHistory reads a history Save wrote.
func LoadHistory(path string) (History, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return History{}, err
	}
	var h History
	if err := json.Unmarshal(raw, &h); err != nil {
		return History{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// Faults counts the fault-injection ops of the history (member, kubelet, hub and finalizer
// faults, conflicting writers, hands on members, inventory changes and repointed sources), for
// the run table.
func (h History) Faults() int {
	n := 0
	for _, o := range h.Ops {
		if isFault(o) {
			n++
		}
	}
	return n
}

func isFault(o Op) bool {
	switch o.(type) {
	case StopMember, PauseKubelet, KillHub, Failover, FreezeHub, Hold, Hammer, KillHubWhen, Partition, SlowPath, SlowAdmission,
		Scale, HandPod, DeleteSTS, EditSTS, Restore, Label, Deregister, Repoint, Alias:
		return true
	}
	return false
}

// isHand tells whether o is a person's hand on a member's objects (what the hub must undo).
func isHand(o Op) bool {
	switch o.(type) {
	case Scale, HandPod, DeleteSTS, EditSTS, Restore:
		return true
	}
	return false
}

// sortedCopy is s sorted, for placements compared as sets.
func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// ms is a duration in milliseconds as ops carry it.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
