package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Stamp is a moment of the recording: the time since it started, read from Go's monotonic clock,
// so stamps of different goroutines compare exactly.
type Stamp = time.Duration

// Recording is everything a history run did and saw: the checker's only input.
type Recording struct {
	History History
	// Namespace is where the history ran (hub and members); Namespaces all of them, when it ran
	// in more than one (recordings made before that have only Namespace).
	Namespace  string
	Namespaces []string `json:",omitempty"`
	Ops        []OpRecord
	Samples    []Sample
	Events     []Event
	// Final is the state read after the history settled.
	Final Final
	// Settled is when the final state was read.
	Settled Stamp
	// Bounds are the fleet's timing settings the invariants depend on.
	Bounds Bounds
}

// Bounds are the hub settings of the run and the slack the checker allows.
type Bounds struct {
	TombstoneGrace time.Duration
	MemberTimeout  time.Duration
	// DeleteSlack is I4's bound beyond the grace (docs/reliability.md derives it).
	DeleteSlack time.Duration
	// StopBound is I5's: a hand-made reader, or one in a member its placement left, is gone
	// within it (the time the hub cannot act there not counted).
	StopBound time.Duration
	// RepointBound is how long two readers of one pipeline may share a database from the moment
	// a repointed Secret made them share it.
	RepointBound time.Duration
	// MemberRecover is how long after a member answers or joins again the hub may take to act
	// there.
	MemberRecover time.Duration
	// FenceTTL, FenceGrace and FenceMargin are the hub's fence settings: a fenced reader runs
	// until FenceTTL+FenceGrace after the last renewal it could see.
	FenceTTL, FenceGrace, FenceMargin time.Duration
	// FailoverSlack is I6's bound beyond a failover placement's threshold and the fence's bound.
	FailoverSlack time.Duration
}

// OpRecord is one executed op with when it ran and what it did.
type OpRecord struct {
	Index int
	Op    Op
	Start Stamp
	End   Stamp
	// Err is what the op met (a refused create, a member that did not answer, ...); an op that
	// failed is recorded, never retried silently.
	Err string
	// Pipelines are the CDCPipelines the op created, changed, terminated or deleted, as they were
	// when it returned.
	Pipelines []PipelineRef
	// HubsBefore and HubsAfter are the hub processes running around the op.
	HubsBefore, HubsAfter [2]bool
	// Touched are the UIDs of the member objects a hand op created or wrote (a pod made by hand,
	// a restored object, the StatefulSet scaled, edited or deleted): those writes are a person's,
	// not the hub's.
	Touched []string
}

// PipelineRef is a pipeline an op touched.
type PipelineRef struct {
	Name      string
	UID       string
	Identity  string
	Placement []string
	// Generation and resourceVersion after the op; SpecChanged when the op moved the generation.
	Generation  int64
	RV          int64
	SpecChanged bool
	// ConfirmGone is the confirm-cluster-gone list this op wrote.
	ConfirmGone []string
	// Selector: spec.placement.clusterSelector selects SelectorLabel.
	Selector bool `json:",omitempty"`
	// Fenced: spec.placement.fenced; Failover: its failover placement.
	Fenced   bool          `json:",omitempty"`
	Failover *FailoverSpec `json:",omitempty"`
}

// Sample is one poll of a cluster: a consistent list of Kind sent at Start, answered at End, at
// the cluster's revision RV. Present holds the UIDs listed. Samples are the clocks of the
// checker: a revision above RV was committed after Start, one at or below RV before End.
type Sample struct {
	Cluster string
	Kind    string
	Start   Stamp
	End     Stamp
	RV      int64
	Present []string
}

// Event types.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
)

// Event is one version of an object seen by a watch, or a change found by a relist after the
// watch broke (then RVLo < RVHi: the change happened somewhere in that range of revisions).
type Event struct {
	Cluster string
	Kind    string
	Type    string
	Recv    Stamp
	RVLo    int64
	RVHi    int64
	Obj     ObjInfo
	// HubWrite: this version is a write by the hub (created, its content or the hub's managed
	// fields changed, or its deletion started), not a status update or our own finalizer.
	HubWrite bool
}

// ObjInfo is what the checker needs of one object version.
type ObjInfo struct {
	// Kind is the resource (set on the final reads).
	Kind      string
	UID       string
	Namespace string
	Name      string
	RV        int64
	// PipelineUID is the urutau.io/hub-pipeline-uid label (member objects).
	PipelineUID string
	// Owner is the UID of the first owner reference (a pod's StatefulSet).
	Owner string
	// PipelineName is a pod's urutau.io/pipeline label: the pipeline's name, which ties a pod no
	// StatefulSet owns to it.
	PipelineName string `json:",omitempty"`
	Deleting     bool
	// Phase of a pod.
	Phase string
	// Sig digests what a write by the hub changes (content and the hub's managed fields).
	Sig string
	// Pipeline is set for CDCPipelines.
	Pipeline *PipelineInfo
	// Fenced: a pod whose coordinator runs under the fence; Command is then its first
	// container's command line (command, then args): the fence's own settings.
	Fenced  bool     `json:",omitempty"`
	Command []string `json:",omitempty"`
	// Renew is a fence Lease's renewTime, as a token (never read as a time).
	Renew string `json:",omitempty"`
	// Holder and Entries of a reader lease; Holder of a fence Lease is its holderIdentity.
	Holder  string
	Entries []LeaseEntry
	// Mentions are the string values of a reader lease (to find the pipeline UIDs it names).
	Mentions []string
}

// LeaseEntry is one member entry of a reader lease.
type LeaseEntry struct {
	Lease, Cluster, PipelineUID, PipelineNamespace, PipelineName, State string
}

// PipelineInfo is a CDCPipeline version as the hub stored it.
type PipelineInfo struct {
	Generation  int64
	Identity    string
	Placement   []string
	ConfirmGone string
	// Terminated is set while status.terminated is; TermGeneration is its observedGeneration
	// (set by the hub when it acknowledges a person's termination).
	Terminated     bool
	TermGeneration int64
	Inventory      []string
	// FailoverMember is status.failover.member: where a failover placement runs or moves to.
	FailoverMember string `json:",omitempty"`
}

// Final is the state of the fleet once the history settled.
type Final struct {
	// MemberObjects are the hub-written objects left in each member's namespace.
	MemberObjects map[string][]ObjInfo
	// Pods are the coordinator pods left in each member's namespace.
	Pods map[string][]ObjInfo
	// Pipelines left on the hub.
	Pipelines []ObjInfo
	// Tombstones are the entries the reader leases keep for pipelines of the history's
	// namespace whose CR is gone.
	Tombstones []LeaseEntry
	// Leases are the reader leases on the hub (none where the CRD is not installed).
	Leases []ObjInfo
	// Unreachable members at the time (I2 only judges members that answered).
	Unreachable []string
}

// opRecordJSON is an OpRecord with its op in the history's JSON form.
type opRecordJSON struct {
	Index                 int
	Op                    json.RawMessage
	Start, End            Stamp
	Err                   string `json:",omitempty"`
	Pipelines             []PipelineRef
	HubsBefore, HubsAfter [2]bool
	Touched               []string `json:",omitempty"`
}

// MarshalJSON writes the op as histories do.
func (o OpRecord) MarshalJSON() ([]byte, error) {
	op, err := marshalOp(o.Op)
	if err != nil {
		return nil, err
	}
	return json.Marshal(opRecordJSON{o.Index, op, o.Start, o.End, o.Err, o.Pipelines, o.HubsBefore, o.HubsAfter, o.Touched})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *OpRecord) UnmarshalJSON(raw []byte) error {
	var in opRecordJSON
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	var h History
	if err := json.Unmarshal([]byte(`{"ops":[`+string(in.Op)+`]}`), &h); err != nil {
		return err
	}
	*o = OpRecord{Index: in.Index, Op: h.Ops[0], Start: in.Start, End: in.End, Err: in.Err, Pipelines: in.Pipelines,
		HubsBefore: in.HubsBefore, HubsAfter: in.HubsAfter, Touched: in.Touched}
	return nil
}

// LoadRecording reads a recording Save wrote, for Check to judge again.
func LoadRecording(path string) (*Recording, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rec := &Recording{}
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// recorder collects samples and events from many goroutines.
type recorder struct {
	start   time.Time
	mu      sync.Mutex
	samples []Sample
	events  []Event
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) now() Stamp { return time.Since(r.start) }

func (r *recorder) sample(s Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, s)
}

func (r *recorder) event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// snapshot copies what was recorded so far.
func (r *recorder) snapshot() ([]Sample, []Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Sample(nil), r.samples...), append([]Event(nil), r.events...)
}

// namespaces are the namespaces the history ran in.
func (r *Recording) namespaces() []string {
	if len(r.Namespaces) > 0 {
		return r.Namespaces
	}
	return []string{r.Namespace}
}
