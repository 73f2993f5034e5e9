package members

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// A health record moves its "since" (acquireTime) only when reachability flips, keeps the last
// answer of a member that went down, and is the same record when only the writer or the time
// of the check differs: a new leader, or a check that found nothing new, writes nothing.
func TestHealthRecord(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	up := Health{Checked: true, Up: true, Engaged: true, LastAnswer: t0}
	first := healthRecord("urutau-system", "eu-1", up, "uid-1", "hub-a", 30*time.Second, nil, t0)
	if first.Name != "urutau-member-eu-1" || first.Namespace != "urutau-system" || first.Labels[urutauv1alpha1.LabelMemberHealth] != "true" {
		t.Fatalf("record %s/%s labels %v", first.Namespace, first.Name, first.Labels)
	}
	want := map[string]string{urutauv1alpha1.AnnotationMember: "eu-1", urutauv1alpha1.AnnotationReachable: "True",
		urutauv1alpha1.AnnotationEngaged: "True", urutauv1alpha1.AnnotationHealthMessage: "",
		urutauv1alpha1.AnnotationHealthInterval: "30s", urutauv1alpha1.AnnotationClusterID: "uid-1"}
	for k, v := range want {
		if first.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, first.Annotations[k], v)
		}
	}
	if !first.Spec.AcquireTime.Time.Equal(t0) || !first.Spec.RenewTime.Time.Equal(t0) || *first.Spec.HolderIdentity != "hub-a" {
		t.Fatalf("since %v, last answer %v, holder %v", first.Spec.AcquireTime, first.Spec.RenewTime, *first.Spec.HolderIdentity)
	}

	// Another leader checks a minute later and finds the same: nothing to write.
	again := healthRecord("urutau-system", "eu-1", Health{Checked: true, Up: true, Engaged: true, LastAnswer: t0.Add(time.Minute)},
		"uid-1", "hub-b", 30*time.Second, first, t0.Add(time.Minute))
	if !sameRecord(first, again) {
		t.Error("a check that found nothing new would write the record")
	}

	// The member stops answering: False since now, the last answer kept (setHealth keeps it),
	// the identity kept though the failed check read none.
	t1 := t0.Add(10 * time.Minute)
	down := healthRecord("urutau-system", "eu-1", Health{Checked: true, Engaged: true, Message: "timed out", LastAnswer: t0},
		"", "hub-a", 30*time.Second, first, t1)
	if sameRecord(first, down) {
		t.Fatal("going down is not a change")
	}
	if down.Annotations[urutauv1alpha1.AnnotationReachable] != "False" || down.Annotations[urutauv1alpha1.AnnotationHealthMessage] != "timed out" ||
		down.Annotations[urutauv1alpha1.AnnotationClusterID] != "uid-1" {
		t.Errorf("down record annotations %v", down.Annotations)
	}
	if !down.Spec.AcquireTime.Time.Equal(t1) || !down.Spec.RenewTime.Time.Equal(t0) {
		t.Errorf("down since %v (want %v), last answer %v (want %v)", down.Spec.AcquireTime.Time, t1, down.Spec.RenewTime.Time, t0)
	}

	// Still down, another reason: the message changes, "since" does not.
	other := healthRecord("urutau-system", "eu-1", Health{Checked: true, Message: "no connection", LastAnswer: t0},
		"", "hub-a", 30*time.Second, down, t1.Add(time.Minute))
	if sameRecord(down, other) || !other.Spec.AcquireTime.Equal(down.Spec.AcquireTime) || other.Annotations[urutauv1alpha1.AnnotationEngaged] != "False" {
		t.Errorf("a new reason while down: since %v (want %v), engaged %q", other.Spec.AcquireTime, down.Spec.AcquireTime, other.Annotations[urutauv1alpha1.AnnotationEngaged])
	}
	if first.Annotations[urutauv1alpha1.AnnotationReachable] != "True" {
		t.Error("healthRecord changed the record it was given")
	}
}

// A check that ends after its member left the inventory (its record removed then) does not
// bring the record back: publishing while the member is present writes it, and a member found
// gone before or after the write has none left.
func TestPublishWhilePresent(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	rec := Records{Client: c, Live: c, Namespace: "urutau-system", Holder: "hub-a", Interval: time.Second}
	up := Health{Checked: true, Up: true, Engaged: true, LastAnswer: time.Now()}
	key := client.ObjectKey{Namespace: "urutau-system", Name: urutauv1alpha1.MemberHealthPrefix + "eu-1"}
	exists := func() bool {
		err := c.Get(ctx, key, &coordinationv1.Lease{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	answers := func(seq ...bool) func(context.Context) bool {
		return func(context.Context) bool { v := seq[0]; seq = seq[1:]; return v }
	}

	for _, tc := range []struct {
		name    string
		present []bool
		want    bool
	}{
		{"present both times", []bool{true, true}, true},
		{"gone before the write", []bool{false}, false},
		{"gone during the write", []bool{true, false}, false},
	} {
		stays, err := rec.PublishWhile(ctx, "eu-1", up, "uid-1", answers(tc.present...))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if stays != tc.want || exists() != tc.want {
			t.Errorf("%s: stays %v, record exists %v; want %v", tc.name, stays, exists(), tc.want)
		}
	}
}
