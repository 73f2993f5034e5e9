package fleet

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
)

// failingReader answers every list with err.
type failingReader struct {
	client.Reader
	err error
}

func (f failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return f.err
}

// The orphan scan acts only on what the member itself still holds: its cache may show objects
// deleted while the member was down, for up to a minute after it answers again.
func TestConfirmLive(t *testing.T) {
	obj := func(uid, ns string) []client.Object {
		l := map[string]string{urutauv1alpha1.LabelHubPipelineUID: uid}
		return []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-coordinator", Labels: l}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-coordinator", Labels: l}},
		}
	}
	for _, tc := range []struct {
		name       string
		member     []client.Object
		failing    bool
		want       bool
		wantCounts int
	}{
		{"the member still holds the group: acted on, counted live", obj("u1", "cdc"), false, true, 2},
		{"only the lagging cache showed it: not acted on", nil, false, false, 0},
		{"the member holds another pipeline's objects only", obj("u2", "cdc"), false, false, 0},
		{"the member holds the group in another namespace only", obj("u1", "other"), false, false, 0},
		{"the member cannot be listed: not acted on, the next scan asks again", obj("u1", "cdc"), true, false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live client.Reader = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tc.member...).Build()
			if tc.failing {
				live = failingReader{Reader: live, err: errors.New("forbidden")}
			}
			g := &orphanGroup{uid: types.UID("u1"), namespace: "cdc", objects: 5}
			if got := confirmLive(t.Context(), live, g); got != tc.want {
				t.Errorf("confirmLive = %v, want %v", got, tc.want)
			}
			if g.objects != tc.wantCounts {
				t.Errorf("objects = %d, want %d", g.objects, tc.wantCounts)
			}
		})
	}
}
