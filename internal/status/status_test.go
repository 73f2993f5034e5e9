package status

import (
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

func TestComputeStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	ready := func(n string) MemberObservation {
		return MemberObservation{Name: n, Phase: urutauv1alpha1.ClusterReady, ReadyReplicas: 1, AppliedGeneration: 3}
	}
	applied := func(n string) MemberObservation {
		return MemberObservation{Name: n, Phase: urutauv1alpha1.ClusterApplied, AppliedGeneration: 3}
	}
	type want struct {
		ready, readyReason string
		reconciling        bool
		stalled            bool
		moveBlocked        bool
		placed             metav1.ConditionStatus
		observedGeneration int64
		readyClusters      string
	}
	tests := []struct {
		name string
		prev urutauv1alpha1.CDCPipelineStatus
		obs  Observation
		want want
	}{
		{
			name: "all ready",
			obs:  Observation{Generation: 3, Now: t0, Selected: []string{"a", "b"}, Members: []MemberObservation{ready("a"), ready("b")}},
			want: want{ready: "True", readyReason: ReasonReady, placed: metav1.ConditionTrue, observedGeneration: 3, readyClusters: "2/2"},
		},
		{
			name: "applied, coordinator not ready yet: reconciling, generation observed",
			obs:  Observation{Generation: 3, Now: t0, Selected: []string{"a", "b"}, Members: []MemberObservation{ready("a"), applied("b")}},
			want: want{ready: "False", readyReason: ReasonWaitingForCoordinator, reconciling: true, placed: metav1.ConditionTrue, observedGeneration: 3, readyClusters: "1/2"},
		},
		{
			name: "unreachable member: generation not observed",
			prev: urutauv1alpha1.CDCPipelineStatus{ObservedGeneration: 2},
			obs: Observation{Generation: 3, Now: t0, Selected: []string{"a", "b"}, Members: []MemberObservation{ready("a"),
				{Name: "b", Phase: urutauv1alpha1.ClusterUnreachable, Message: "down"}}},
			want: want{ready: "False", readyReason: ReasonMemberFailures, reconciling: true, placed: metav1.ConditionTrue, observedGeneration: 2, readyClusters: "1/2"},
		},
		{
			name: "placed nowhere",
			obs:  Observation{Generation: 3, Now: t0},
			want: want{ready: "False", readyReason: ReasonNoClustersSelected, placed: metav1.ConditionFalse, observedGeneration: 3},
		},
		{
			name: "move blocked on an unreachable departed member: stalled at this generation",
			prev: urutauv1alpha1.CDCPipelineStatus{ObservedGeneration: 2},
			obs: Observation{Generation: 3, Now: t0, Selected: []string{"b"}, BlockedBy: []string{"a"}, Waiting: []string{"b"},
				Members: []MemberObservation{{Name: "a", Phase: urutauv1alpha1.ClusterUnreachable}, {Name: "b", Phase: urutauv1alpha1.ClusterPending}}},
			want: want{ready: "False", readyReason: ReasonWaitingForDepartedCluster, stalled: true, moveBlocked: true, placed: metav1.ConditionTrue, observedGeneration: 3, readyClusters: "0/1"},
		},
		{
			name: "terminated: stalled, and the generation is recorded so readers see Failed",
			prev: urutauv1alpha1.CDCPipelineStatus{ObservedGeneration: 2},
			obs: Observation{Generation: 3, Now: t0, Selected: []string{"a"}, Terminated: &urutauv1alpha1.Terminated{Reason: "manual stop!", ObservedGeneration: 3},
				Members: []MemberObservation{{Name: "a", Phase: urutauv1alpha1.ClusterTerminated}}},
			want: want{ready: "False", readyReason: ReasonTerminated, stalled: true, placed: metav1.ConditionTrue, observedGeneration: 3, readyClusters: "0/1"},
		},
		{
			name: "removing from a departed member while the new one waits",
			obs: Observation{Generation: 3, Now: t0, Selected: []string{"b"}, Removing: []string{"a"}, Waiting: []string{"b"},
				Members: []MemberObservation{{Name: "a", Phase: urutauv1alpha1.ClusterDeleting}, {Name: "b", Phase: urutauv1alpha1.ClusterPending}}},
			want: want{ready: "False", readyReason: ReasonRemoving, reconciling: true, placed: metav1.ConditionTrue, readyClusters: "0/1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Compute(tt.prev, tt.obs)
			c := meta.FindStatusCondition(st.Conditions, urutauv1alpha1.ConditionReady)
			if c == nil || string(c.Status) != tt.want.ready || c.Reason != tt.want.readyReason {
				t.Fatalf("Ready = %+v, want %s/%s", c, tt.want.ready, tt.want.readyReason)
			}
			for _, x := range st.Conditions {
				if x.ObservedGeneration != tt.obs.Generation {
					t.Errorf("condition %s observedGeneration = %d", x.Type, x.ObservedGeneration)
				}
			}
			present := func(typ string) bool {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c != nil && c.Status != metav1.ConditionTrue {
					t.Errorf("%s present but not True", typ)
				}
				return c != nil
			}
			if got := present(urutauv1alpha1.ConditionReconciling); got != tt.want.reconciling {
				t.Errorf("Reconciling present = %v, want %v", got, tt.want.reconciling)
			}
			if got := present(urutauv1alpha1.ConditionStalled); got != tt.want.stalled {
				t.Errorf("Stalled present = %v, want %v", got, tt.want.stalled)
			}
			if got := present(ConditionMoveBlocked); got != tt.want.moveBlocked {
				t.Errorf("MoveBlocked present = %v, want %v", got, tt.want.moveBlocked)
			}
			if p := meta.FindStatusCondition(st.Conditions, urutauv1alpha1.ConditionPlaced); p == nil || p.Status != tt.want.placed {
				t.Errorf("Placed = %+v, want %s", p, tt.want.placed)
			}
			if st.ObservedGeneration != tt.want.observedGeneration {
				t.Errorf("observedGeneration = %d, want %d", st.ObservedGeneration, tt.want.observedGeneration)
			}
			if st.ReadyClusters != tt.want.readyClusters {
				t.Errorf("readyClusters = %q, want %q", st.ReadyClusters, tt.want.readyClusters)
			}
		})
	}

	t.Run("same observation, same status: idle writes nothing", func(t *testing.T) {
		obs := Observation{Generation: 3, Now: t0, Selected: []string{"a"}, Inventory: []string{"a"}, Members: []MemberObservation{ready("a")}}
		first := Compute(urutauv1alpha1.CDCPipelineStatus{}, obs)
		obs.Now = t1
		second := Compute(first, obs)
		if !equalStatus(first, second) {
			t.Fatalf("status changed without a change in the world:\n%+v\n%+v", first, second)
		}
	})

	t.Run("lastTransitionTime moves only with the phase; phase and runId are kept", func(t *testing.T) {
		prev := urutauv1alpha1.CDCPipelineStatus{Phase: "Running", RunID: "r1", Clusters: []urutauv1alpha1.ClusterStatus{
			{Name: "a", Phase: urutauv1alpha1.ClusterApplied, LastTransitionTime: t0, ObservedGeneration: 2},
			{Name: "b", Phase: urutauv1alpha1.ClusterApplied, LastTransitionTime: t0, ObservedGeneration: 2},
		}}
		st := Compute(prev, Observation{Generation: 3, Now: t1, Selected: []string{"a", "b"}, Members: []MemberObservation{
			{Name: "a", Phase: urutauv1alpha1.ClusterApplied}, ready("b"),
		}})
		if st.Phase != "Running" || st.RunID != "r1" {
			t.Errorf("coordinator fields lost: %q %q", st.Phase, st.RunID)
		}
		if a := st.Clusters[0]; !a.LastTransitionTime.Equal(&t0) || a.ObservedGeneration != 2 {
			t.Errorf("a = %+v, want transition t0 and generation 2 kept", a)
		}
		if b := st.Clusters[1]; !b.LastTransitionTime.Equal(&t1) || b.ObservedGeneration != 3 {
			t.Errorf("b = %+v, want transition t1 and generation 3", b)
		}
	})
}

func equalStatus(a, b urutauv1alpha1.CDCPipelineStatus) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}
