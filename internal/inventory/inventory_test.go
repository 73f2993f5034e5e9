package inventory

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMemberSetting(t *testing.T) {
	const key = KEDAPrometheusAddressKey
	tests := []struct {
		name   string
		member Member
		want   string
	}{
		{name: "neither", member: Member{Name: "a"}, want: ""},
		{name: "label only", member: Member{Labels: map[string]string{key: "prom"}}, want: "prom"},
		{name: "annotation only", member: Member{Annotations: map[string]string{key: "http://prom:9090"}}, want: "http://prom:9090"},
		{
			name: "annotation wins over label",
			member: Member{
				Labels:      map[string]string{key: "from-label"},
				Annotations: map[string]string{key: "http://from-annotation"},
			},
			want: "http://from-annotation",
		},
		{
			// An explicitly empty annotation is a deliberate override, e.g. to disable KEDA there.
			name: "empty annotation wins over label",
			member: Member{
				Labels:      map[string]string{key: "from-label"},
				Annotations: map[string]string{key: ""},
			},
			want: "",
		},
		{name: "other keys ignored", member: Member{Annotations: map[string]string{"x": "y"}}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.member.Setting(key); got != tt.want {
				t.Errorf("Setting(%q) = %q, want %q", key, got, tt.want)
			}
		})
	}
}

func TestIsEntry(t *testing.T) {
	secret := func(ns string, labels map[string]string) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m", Labels: labels}}
	}
	profile := func(ns string) client.Object {
		return &clusterinventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m"}}
	}
	kc := KubeconfigSecrets{Namespace: "urutau-system"}
	cp := ClusterProfiles{Namespace: "urutau-system"}
	marked := map[string]string{KubeconfigSecretLabel: "true"}
	tests := []struct {
		name string
		inv  Inventory
		obj  client.Object
		want bool
	}{
		{"kubeconfig Secret", kc, secret("urutau-system", marked), true},
		{"Secret without the label", kc, secret("urutau-system", nil), false},
		{"Secret with label not true", kc, secret("urutau-system", map[string]string{KubeconfigSecretLabel: "false"}), false},
		{"kubeconfig Secret in another namespace", kc, secret("default", marked), false},
		{"ClusterProfile is not a kubeconfig entry", kc, profile("urutau-system"), false},
		{"ClusterProfile", cp, profile("urutau-system"), true},
		{"ClusterProfile in another namespace", cp, profile("default"), false},
		{"Secret is not a profile entry", cp, secret("urutau-system", marked), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.inv.IsEntry(tt.obj); got != tt.want {
				t.Errorf("IsEntry = %v, want %v", got, tt.want)
			}
		})
	}
	if _, ok := kc.EntryType().(*corev1.Secret); !ok {
		t.Errorf("KubeconfigSecrets.EntryType = %T", kc.EntryType())
	}
	if _, ok := cp.EntryType().(*clusterinventoryv1alpha1.ClusterProfile); !ok {
		t.Errorf("ClusterProfiles.EntryType = %T", cp.EntryType())
	}
}

func TestNewKubeconfigSecret(t *testing.T) {
	labels := map[string]string{"region": "eu"}
	s := NewKubeconfigSecret("urutau-system", "member-a", []byte("kc"), labels, map[string]string{KEDAPrometheusAddressKey: "http://p"})
	if s.Namespace != "urutau-system" || s.Name != "member-a" {
		t.Errorf("key = %s/%s", s.Namespace, s.Name)
	}
	if s.Labels[KubeconfigSecretLabel] != "true" || s.Labels["region"] != "eu" {
		t.Errorf("labels = %v", s.Labels)
	}
	if _, ok := labels[KubeconfigSecretLabel]; ok {
		t.Error("the caller's label map was modified")
	}
	if string(s.Data[KubeconfigSecretKey]) != "kc" {
		t.Errorf("data = %v", s.Data)
	}
	if s.Annotations[KEDAPrometheusAddressKey] != "http://p" {
		t.Errorf("annotations = %v", s.Annotations)
	}
	if !(KubeconfigSecrets{Namespace: "urutau-system"}).IsEntry(s) {
		t.Error("the Secret is not an entry of KubeconfigSecrets")
	}
}
