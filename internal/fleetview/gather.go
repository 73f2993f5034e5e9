package fleetview

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// Where the hub keeps what Gather reads. They match the hub's defaults and internal/fleet.
const (
	DefaultHubNamespace   = "urutau-system"
	KubeconfigSecretLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"
	// LeaderElectionID names the Lease the hub's replicas elect their leader with; only the
	// leader checks members and writes their health records.
	LeaderElectionID = "urutau-fleet-hub-lock"
)

var clusterProfileGVK = schema.GroupVersionKind{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Kind: "ClusterProfileList"}

// GatherOptions say where to read.
type GatherOptions struct {
	// Namespace of the pipelines; empty means every namespace.
	Namespace string
	// Pipeline, when set, reads only that pipeline (in Namespace).
	Pipeline string
	// HubNamespace holds the inventory entries and tombstones (the hub's
	// --cluster-provider-namespace).
	HubNamespace string
}

// Gather reads the hub. The pipelines must be readable; entries and tombstones the user may not
// read (RBAC) or that do not exist (no ClusterProfile CRD) become warnings. Tombstones are read
// only when every pipeline is (no Namespace, no Pipeline): a tombstone is an entry of a pipeline
// that no longer exists.
func Gather(ctx context.Context, c client.Reader, o GatherOptions) (Facts, error) {
	var f Facts
	pipelines, err := readPipelines(ctx, c, o)
	if err != nil {
		return f, err
	}
	f.Pipelines = pipelines
	reads := []func(context.Context, client.Reader, string, *Facts) error{readSecrets, readClusterProfiles, readHealthRecords}
	if o.Namespace == "" && o.Pipeline == "" {
		reads = append(reads, readTombstones)
	}
	for _, read := range reads {
		if err := read(ctx, c, o.HubNamespace, &f); err != nil {
			if !apierrors.IsForbidden(err) && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
				return f, err
			}
			if apierrors.IsForbidden(err) {
				f.Warnings = append(f.Warnings, err.Error())
			}
		}
	}
	return f, nil
}

func readPipelines(ctx context.Context, c client.Reader, o GatherOptions) ([]Pipeline, error) {
	gvk := urutauv1alpha1.GroupVersion.WithKind("CDCPipeline")
	var items []unstructured.Unstructured
	if o.Pipeline != "" {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Pipeline}, u); err != nil {
			return nil, fmt.Errorf("reading CDCPipeline %s/%s: %w", o.Namespace, o.Pipeline, err)
		}
		items = append(items, *u)
	} else {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind("CDCPipelineList"))
		if err := c.List(ctx, l, client.InNamespace(o.Namespace)); err != nil {
			return nil, fmt.Errorf("listing CDCPipelines: %w", err)
		}
		items = l.Items
	}
	out := make([]Pipeline, 0, len(items))
	for i := range items {
		out = append(out, PipelineFrom(&items[i]))
	}
	return out, nil
}

// PipelineFrom reads a CDCPipeline's summary, tolerating any field that is missing.
func PipelineFrom(u *unstructured.Unstructured) Pipeline {
	p := Pipeline{Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), Generation: number(u.Object, "metadata", "generation"), Ready: Unknown}
	p.Observed = number(u.Object, "status", "observedGeneration")
	p.Terminated, _, _ = unstructured.NestedString(u.Object, "status", "terminated", "reason")
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] == urutauv1alpha1.ConditionReady {
			p.Ready, p.ReadyReason, p.ReadyMessage = str(cond, "status"), str(cond, "reason"), str(cond, "message")
		}
	}
	clusters, _, _ := unstructured.NestedSlice(u.Object, "status", "clusters")
	for _, c := range clusters {
		cl, _ := c.(map[string]any)
		pl := Placement{Namespace: p.Namespace, Pipeline: p.Name, Generation: p.Generation, Member: str(cl, "name"),
			Phase: str(cl, "phase"), ClusterID: str(cl, "clusterID"), Message: str(cl, "message")}
		pl.ObservedGeneration = number(cl, "observedGeneration")
		pl.ReadyReplicas = number(cl, "coordinatorReadyReplicas")
		pl.LastTransition = parseTime(str(cl, "lastTransitionTime"))
		p.Placements = append(p.Placements, pl)
	}
	p.FailoverMember, _, _ = unstructured.NestedString(u.Object, "status", "failover", "member")
	if last, ok, _ := unstructured.NestedMap(u.Object, "status", "failover", "last"); ok {
		p.Failover = failoverSummary(last)
	}
	return p
}

// failoverSummary says a failover placement's last move: from where, why, and how long the
// pipeline had no reader (or that the move is in progress).
func failoverSummary(last map[string]any) string {
	s := fmt.Sprintf("moved from %s (%s)", orUnknown(str(last, "from")), str(last, "reason"))
	if str(last, "readyAt") == "" {
		return s + ", not ready yet"
	}
	return s + fmt.Sprintf(", no reader for %ds", number(last, "readerGapSeconds"))
}

// number reads an integer field whether it was decoded as an int64 (the API client) or a float64
// (YAML and plain JSON); 0 when absent or not a number.
func number(m map[string]any, fields ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(m, fields...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// readSecrets reads only the metadata of kubeconfig Secrets: never the credentials.
func readSecrets(ctx context.Context, c client.Reader, ns string, f *Facts) error {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{KubeconfigSecretLabel: "true"}); err != nil {
		return fmt.Errorf("listing kubeconfig Secrets in %s: %w", ns, err)
	}
	for _, s := range l.Items {
		f.Entries = append(f.Entries, Entry{Name: s.Name, Kind: "Secret", Labels: s.Labels, Annotations: s.Annotations,
			Created: s.CreationTimestamp.Time, Deleting: s.DeletionTimestamp != nil})
	}
	return nil
}

func readClusterProfiles(ctx context.Context, c client.Reader, ns string, f *Facts) error {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(clusterProfileGVK)
	if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing ClusterProfiles in %s: %w", ns, err)
	}
	for _, u := range l.Items {
		e := Entry{Name: u.GetName(), Kind: "ClusterProfile", Labels: u.GetLabels(), Annotations: u.GetAnnotations(),
			Created: u.GetCreationTimestamp().Time, Deleting: u.GetDeletionTimestamp() != nil}
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conditions {
			cond, _ := c.(map[string]any)
			if cond["type"] == "ControlPlaneHealthy" {
				e.Healthy, e.HealthChanged = str(cond, "status"), parseTime(str(cond, "lastTransitionTime"))
			}
		}
		f.Entries = append(f.Entries, e)
	}
	return nil
}

// readHealthRecords attaches to each entry what the hub last recorded about its member: the
// Leases the hub's health checks write (api/v1alpha1 MemberHealthPrefix).
func readHealthRecords(ctx context.Context, c client.Reader, ns string, f *Facts) error {
	l := &coordinationv1.LeaseList{}
	if err := c.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{urutauv1alpha1.LabelMemberHealth: "true"}); err != nil {
		return fmt.Errorf("listing the hub's member health records (Leases) in %s: %w", ns, err)
	}
	byMember := map[string]*HealthRecord{}
	for i := range l.Items {
		rec := HealthRecordFrom(&l.Items[i])
		byMember[l.Items[i].Annotations[urutauv1alpha1.AnnotationMember]] = &rec
	}
	for i := range f.Entries {
		f.Entries[i].Health = byMember[f.Entries[i].Name]
	}
	if len(l.Items) > 0 {
		if w := staleLeader(ctx, c, ns, time.Now()); w != "" {
			f.Warnings = append(f.Warnings, w)
		}
	}
	return nil
}

// staleLeader warns when no hub replica has renewed the leader Lease within its duration: the
// health records then say what the hub found when it last ran. Without the Lease (a hub run with
// --leader-elect=false) there is nothing to tell.
func staleLeader(ctx context.Context, c client.Reader, ns string, now time.Time) string {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: LeaderElectionID}, l); err != nil {
		return ""
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return ""
	}
	expired := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	if now.Before(expired) {
		return ""
	}
	return fmt.Sprintf("no hub replica has held the leader Lease %s/%s since %s: REACHABLE and LAST ANSWER are what the hub recorded when it last ran",
		ns, LeaderElectionID, l.Spec.RenewTime.UTC().Format(time.RFC3339))
}

// HealthRecordFrom reads a member health record, tolerating any field that is missing.
func HealthRecordFrom(l *coordinationv1.Lease) HealthRecord {
	a := l.Annotations
	h := HealthRecord{Reachable: orUnknown(a[urutauv1alpha1.AnnotationReachable]), Engaged: orUnknown(a[urutauv1alpha1.AnnotationEngaged]),
		Message: a[urutauv1alpha1.AnnotationHealthMessage], Identity: a[urutauv1alpha1.AnnotationClusterID]}
	h.Interval, _ = time.ParseDuration(a[urutauv1alpha1.AnnotationHealthInterval])
	if l.Spec.AcquireTime != nil {
		h.Since = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		h.LastAnswer = l.Spec.RenewTime.Time
	}
	return h
}

// readTombstones reads the hub's ReaderLeases: an entry whose pipeline no longer exists is a
// tombstone, replayed by the hub when its member answers (internal/lease).
func readTombstones(ctx context.Context, c client.Reader, ns string, f *Facts) error {
	l := &urutauv1alpha1.ReaderLeaseList{}
	if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing ReaderLeases in %s: %w", ns, err)
	}
	f.Tombstones = Tombstones(l.Items, f.Pipelines)
	return nil
}

// Tombstones are the ReaderLease entries of pipelines that no longer exist.
func Tombstones(leases []urutauv1alpha1.ReaderLease, pipelines []Pipeline) []Tombstone {
	live := map[string]bool{}
	for _, p := range pipelines {
		live[p.UID] = true
	}
	var out []Tombstone
	for _, l := range leases {
		for _, e := range l.Spec.Members {
			if !live[string(e.PipelineUID)] {
				out = append(out, Tombstone{Member: e.Cluster, Namespace: e.PipelineNamespace, Pipeline: e.PipelineName,
					Reason: e.Reason, Created: e.Since.Time})
			}
		}
	}
	return out
}
