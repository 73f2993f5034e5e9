package cli

import (
	"encoding/json"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/urutau-io/fleet/internal/fleetview"
)

// ViewGroupVersion is the apiVersion of the objects members and status print with -o
// json|yaml|name|jsonpath|custom-columns: views the plugin computes from what the hub publishes
// (docs/kubectl-urutau.md). No API server serves them.
var ViewGroupVersion = schema.GroupVersion{Group: "view.urutau.io", Version: "v1alpha1"}

// Kinds of the views.
const (
	KindMember    = "Member"
	KindPlacement = "Placement"
)

type viewMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// memberView is one member, as `members -o yaml` prints it.
type memberView struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   viewMeta     `json:"metadata"`
	Status     memberStatus `json:"status"`
}

type memberStatus struct {
	Identity            string `json:"identity,omitempty"`
	Reachable           string `json:"reachable"`
	Engaged             string `json:"engaged"`
	LastAnswer          string `json:"lastAnswer,omitempty"`
	ReachableSince      string `json:"reachableSince,omitempty"`
	CheckInterval       string `json:"checkInterval,omitempty"`
	Message             string `json:"message,omitempty"`
	PipelinesPlaced     int    `json:"pipelinesPlaced"`
	PipelinesReady      int    `json:"pipelinesReady"`
	TombstonesPending   int    `json:"tombstonesPending"`
	CredentialsExpireAt string `json:"credentialsExpireAt,omitempty"`
	Source              string `json:"source"`
}

// placementView is one pipeline on one member, as `status -o yaml` prints it.
type placementView struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   viewMeta        `json:"metadata"`
	Spec       placementSpec   `json:"spec"`
	Status     placementStatus `json:"status"`
}

type placementSpec struct {
	Pipeline string `json:"pipeline"`
	// Member is empty for a pipeline placed nowhere.
	Member string `json:"member,omitempty"`
}

type placementStatus struct {
	Phase              string `json:"phase"`
	Generation         int64  `json:"generation"`
	ObservedGeneration int64  `json:"observedGeneration"`
	ReadyReplicas      int64  `json:"readyReplicas"`
	Message            string `json:"message,omitempty"`
	Since              string `json:"since,omitempty"`
}

// memberObject is m as an object of the List -o prints.
func memberObject(m fleetview.Member) map[string]any {
	interval := ""
	if m.CheckInterval.Duration > 0 {
		interval = m.CheckInterval.Duration.String()
	}
	return toMap(memberView{
		APIVersion: ViewGroupVersion.String(), Kind: KindMember,
		Metadata: viewMeta{Name: m.Name, Labels: memberLabels(m.Labels)},
		Status: memberStatus{Identity: m.Identity, Reachable: m.Reachable, Engaged: m.Engaged,
			LastAnswer: rfc3339(m.LastAnswer), ReachableSince: rfc3339(m.ReachableSince), CheckInterval: interval,
			Message: m.Message, PipelinesPlaced: m.Placed, PipelinesReady: m.Ready, TombstonesPending: m.Tombstones,
			CredentialsExpireAt: rfc3339(m.CredentialsExpireAt), Source: m.Source},
	})
}

// placementObject is r as an object of the List -o prints. Its name is PIPELINE.MEMBER, so that
// -o name tells the rows of one pipeline apart; PIPELINE alone when it is placed nowhere.
func placementObject(r fleetview.PlacementRow) map[string]any {
	name := r.Pipeline
	if r.Member != "" {
		name += "." + r.Member
	}
	return toMap(placementView{
		APIVersion: ViewGroupVersion.String(), Kind: KindPlacement,
		Metadata: viewMeta{Name: name, Namespace: r.Namespace},
		Spec:     placementSpec{Pipeline: r.Pipeline, Member: r.Member},
		Status: placementStatus{Phase: r.Phase, Generation: r.Generation, ObservedGeneration: r.ObservedGeneration,
			ReadyReplicas: r.ReadyReplicas, Message: r.Message, Since: rfc3339(r.Since)},
	})
}

// memberLabels are a member's labels without the inventory's own marker.
func memberLabels(l map[string]string) map[string]string {
	out := maps.Clone(l)
	delete(out, fleetview.KubeconfigSecretLabel)
	if len(out) == 0 {
		return nil
	}
	return out
}

// rfc3339 formats t as the API does (UTC, to the second); "" for no time.
func rfc3339(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// toMap turns a view into the JSON object the printers take. The views hold only strings,
// numbers and maps of strings, which always marshal.
func toMap[V memberView | placementView](v V) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(err)
	}
	return m
}
