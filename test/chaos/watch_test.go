package chaos

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func statefulSet(rv string, mutate func(u *unstructured.Unstructured)) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "p0-coordinator", "namespace": "chaos-0", "uid": "s1", "resourceVersion": rv,
			"labels": map[string]any{"urutau.io/hub-pipeline-uid": "u1"}},
		"spec":   map[string]any{"replicas": int64(1)},
		"status": map[string]any{"readyReplicas": int64(0)},
	}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "urutau-operator@member-a", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)},
	})
	if mutate != nil {
		mutate(&u)
	}
	return u
}

func TestHubWrite(t *testing.T) {
	base := infoOf("statefulsets", ptr(statefulSet("10", nil)))
	for name, tc := range map[string]struct {
		typ    string
		mutate func(u *unstructured.Unstructured)
		prev   *ObjInfo
		want   bool
	}{
		"created": {typ: Added, want: true},
		"status updated by its controller": {typ: Modified, prev: &base, mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(1), "status", "readyReplicas")
			mf := u.GetManagedFields()
			mf[1].FieldsV1 = metav1.NewFieldsV1(`{"f:status":{"f:readyReplicas":{}}}`)
			u.SetManagedFields(mf)
		}},
		"a foreign finalizer added": {typ: Modified, prev: &base, mutate: func(u *unstructured.Unstructured) {
			u.SetFinalizers([]string{holdFinalizer})
			u.SetManagedFields(append(u.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: fieldOwner, Operation: metav1.ManagedFieldsOperationUpdate}))
		}},
		"spec changed": {typ: Modified, prev: &base, want: true, mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
		}},
		"the hub's managed fields changed": {typ: Modified, prev: &base, want: true, mutate: func(u *unstructured.Unstructured) {
			mf := u.GetManagedFields()
			mf[0].FieldsV1 = metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)
			u.SetManagedFields(mf)
		}},
		"deletion started": {typ: Modified, prev: &base, want: true, mutate: func(u *unstructured.Unstructured) {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
			u.SetFinalizers([]string{holdFinalizer})
		}},
		"deleted outright":     {typ: Deleted, prev: &base, want: true},
		"a held deletion ends": {typ: Deleted, prev: &ObjInfo{Deleting: true}},
	} {
		t.Run(name, func(t *testing.T) {
			info := infoOf("statefulsets", ptr(statefulSet("11", tc.mutate)))
			prev, had := ObjInfo{}, tc.prev != nil
			if had {
				prev = *tc.prev
			}
			if got := hubWrite(tc.typ, prev, had, info); got != tc.want {
				t.Fatalf("hubWrite = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRelistFindsWhatTheWatchMissed(t *testing.T) {
	st := &streamState{cluster: "member-a", kind: "statefulsets", known: map[string]ObjInfo{}}
	first := st.relist([]unstructured.Unstructured{statefulSet("10", nil)}, 12, sec(1))
	if len(first) != 1 || first[0].Type != Added || first[0].RVLo != 0 || first[0].RVHi != 10 {
		t.Fatalf("first list: %+v", first)
	}
	gone := st.relist(nil, 40, sec(2))
	if len(gone) != 1 || gone[0].Type != Deleted || gone[0].RVLo != 13 || gone[0].RVHi != 40 || !gone[0].HubWrite {
		t.Fatalf("an object gone while the watch was down: %+v", gone)
	}
	other := statefulSet("41", func(u *unstructured.Unstructured) { u.SetUID("s2") })
	back := st.relist([]unstructured.Unstructured{other}, 45, sec(3))
	if len(back) != 1 || back[0].Type != Added || back[0].RVLo != 41 || back[0].RVHi != 41 {
		t.Fatalf("an object created while the watch was down: %+v", back)
	}
}

func ptr[T any](v T) *T { return &v }

// A fenced pod's command line is recorded whole (command, then args): the checker runs its fence
// by it.
func TestPodCommandRecorded(t *testing.T) {
	pod := func(container map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"uid": "p", "resourceVersion": "3"},
			"spec": map[string]any{"containers": []any{container}}}}
	}
	for name, tc := range map[string]struct {
		container map[string]any
		fenced    bool
		command   []string
	}{
		"fenced": {container: map[string]any{"command": []any{"/urutau-fence/fence", "--ttl", "4s"}, "args": []any{"--", "x"}},
			fenced: true, command: []string{"/urutau-fence/fence", "--ttl", "4s", "--", "x"}},
		"unfenced":                      {container: map[string]any{"command": []any{"urutau-coordinator"}}},
		"the fence in args, no command": {container: map[string]any{"args": []any{"/urutau-fence/fence", "--ttl", "4s"}}},
	} {
		t.Run(name, func(t *testing.T) {
			info := infoOf(kindPods, pod(tc.container))
			if info.Fenced != tc.fenced || !slices.Equal(info.Command, tc.command) {
				t.Errorf("fenced %v, command %q; want %v, %q", info.Fenced, info.Command, tc.fenced, tc.command)
			}
		})
	}
}

// The recorder watches what a fence or a reader may be, whoever wrote it: every Lease of the
// namespace (a fence reads its Lease by name), coordinator pods by their app label.
func TestMemberStreams(t *testing.T) {
	want := map[string]string{kindPods: coordinatorSelector, kindFences: ""}
	for k := range memberObjectKinds {
		want[k] = "urutau.io/hub-pipeline-uid"
	}
	got := map[string]string{}
	nss := historyNamespaces(0)
	for _, s := range memberStreams(nss) {
		if !slices.Equal(s.nss, nss) {
			t.Errorf("%s watched in namespaces %q, want %q", s.kind, s.nss, nss)
		}
		got[s.kind] = s.selector
	}
	for kind, sel := range want {
		if g, ok := got[kind]; !ok || g != sel {
			t.Errorf("%s: selector %q (watched: %v), want %q", kind, g, ok, sel)
		}
	}
}

// Streams over two namespaces ask the whole cluster and keep what is in either: another
// history's namespace (one still being deleted) is not recorded.
func TestStreamKeepsItsNamespaces(t *testing.T) {
	obj := func(ns string) unstructured.Unstructured {
		u := unstructured.Unstructured{}
		u.SetNamespace(ns)
		u.SetName("x")
		return u
	}
	for name, tc := range map[string]struct {
		nss  []string
		in   []string
		want []string
	}{
		"two namespaces": {nss: []string{"chaos-3", "chaos-3-b"}, in: []string{"chaos-3", "chaos-2", "chaos-3-b", "kube-node-lease"}, want: []string{"chaos-3", "chaos-3-b"}},
		"one namespace":  {nss: []string{"chaos-3"}, in: []string{"chaos-3"}, want: []string{"chaos-3"}},
		"the cluster":    {in: []string{"urutau-system", ""}, want: []string{"urutau-system", ""}},
	} {
		t.Run(name, func(t *testing.T) {
			list := &unstructured.UnstructuredList{}
			for _, ns := range tc.in {
				list.Items = append(list.Items, obj(ns))
			}
			stream{nss: tc.nss}.kept(list)
			var got []string
			for _, u := range list.Items {
				got = append(got, u.GetNamespace())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("kept %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNamespaceOf(t *testing.T) {
	nss := historyNamespaces(7)
	want := map[string]string{"p0": "chaos-7", "p1": "chaos-7", "p2": "chaos-7-b", "p3": "chaos-7-b"}
	for _, name := range PipelineNames {
		if got := namespaceOf(nss, name); got != want[name] {
			t.Errorf("namespaceOf(%s) = %s, want %s", name, got, want[name])
		}
	}
	if got := namespaceOf(nss[:1], "p3"); got != "chaos-7" {
		t.Errorf("one namespace: p3 in %s", got)
	}
}
