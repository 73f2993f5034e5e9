package inventory

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/urutau-io/fleet/internal/credentials"
)

const screenNS = "urutau-system"

// kubeconfigWith is a kubeconfig whose only user has the given YAML fields.
func kubeconfigWith(user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
current-context: m
contexts: [{name: m, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://member.example:6443", certificate-authority-data: Q0E=}}]
users: [{name: u, user: {` + user + `}}]
`)
}

func screeningClientWith(t *testing.T, objs ...client.Object) (*screeningClient, *Refusals) {
	t.Helper()
	refusals := &Refusals{}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
	return &screeningClient{Client: c, namespace: screenNS, refusals: refusals}, refusals
}

func secretNamed(name string, labelled bool, kubeconfig []byte) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: screenNS, Name: name}, Data: map[string][]byte{KubeconfigSecretKey: kubeconfig}}
	if labelled {
		s.Labels = map[string]string{KubeconfigSecretLabel: "true"}
	}
	return s
}

// TestScreeningClientGet: every Secret of the provider namespace the provider reads is screened or
// absent. A Secret that lost the kubeconfig label after the provider queued its request (the
// screening race) reads as absent, so its tokenFile: /dev/zero never reaches
// clientcmd.RESTConfigFromKubeConfig; a labelled one is screened; other namespaces and kinds pass.
func TestScreeningClientGet(t *testing.T) {
	good := kubeconfigWith("token: t")
	devZero := kubeconfigWith("tokenFile: /dev/zero")
	elsewhere := secretNamed("other", false, devZero)
	elsewhere.Namespace = "elsewhere"
	c, refusals := screeningClientWith(t,
		secretNamed("unlabelled-dev-zero", false, devZero),
		secretNamed("labelled-dev-zero", true, devZero),
		secretNamed("labelled-good", true, good),
		secretNamed("unlabelled-good", false, good),
		elsewhere,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: screenNS, Name: "cm"}},
	)
	tests := []struct {
		name    string
		key     client.ObjectKey
		obj     client.Object
		absent  bool
		refused credentials.Reason
	}{
		{name: "unlabelled-dev-zero", obj: &corev1.Secret{}, absent: true},
		{name: "unlabelled-good", obj: &corev1.Secret{}, absent: true},
		{name: "labelled-dev-zero", obj: &corev1.Secret{}, absent: true, refused: credentials.ReasonFilePath},
		{name: "labelled-good", obj: &corev1.Secret{}},
		{name: "unlabelled-dev-zero as unstructured", key: client.ObjectKey{Namespace: screenNS, Name: "unlabelled-dev-zero"}, obj: unstructuredSecret(), absent: true},
		{name: "another namespace", key: client.ObjectKey{Namespace: "elsewhere", Name: "other"}, obj: &corev1.Secret{}},
		{name: "not a Secret", key: client.ObjectKey{Namespace: screenNS, Name: "cm"}, obj: &corev1.ConfigMap{}},
	}
	for _, tt := range tests {
		key := tt.key
		if key.Name == "" {
			key = client.ObjectKey{Namespace: screenNS, Name: tt.name}
		}
		err := c.Get(t.Context(), key, tt.obj)
		if got := apierrors.IsNotFound(err); got != tt.absent || (!tt.absent && err != nil) {
			t.Errorf("%s: Get = %v, want absent %v", tt.name, err, tt.absent)
		}
		if s, ok := tt.obj.(*corev1.Secret); ok && tt.absent && len(s.Data) > 0 {
			t.Errorf("%s: absent, but the Secret's data was handed over", tt.name)
		}
		if got := credentials.ReasonOf(errors.Unwrap(refusals.Refused(key.Name))); got != tt.refused {
			t.Errorf("%s: refusal recorded %q, want %q", tt.name, got, tt.refused)
		}
	}
}

// TestScreeningClientList: a list of the provider namespace's Secrets holds only kubeconfig
// Secrets that pass the screen.
func TestScreeningClientList(t *testing.T) {
	c, _ := screeningClientWith(t,
		secretNamed("unlabelled", false, kubeconfigWith("token: t")),
		secretNamed("dev-zero", true, kubeconfigWith("tokenFile: /dev/zero")),
		secretNamed("good", true, kubeconfigWith("token: t")),
	)
	var list corev1.SecretList
	if err := c.List(t.Context(), &list, client.InNamespace(screenNS)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "good" {
		t.Errorf("listed %v, want only good", list.Items)
	}
}

func unstructuredSecret() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Secret")
	return u
}

// TestRefusedIsPublic: what the reconciler reads of a refusal (and puts in the status and Events
// of tenants' pipelines) is the reason and a fixed sentence; the detail, for the hub's log, is
// what it wraps, and names the entry without any credential.
func TestRefusedIsPublic(t *testing.T) {
	secret := "cnry" + rand.Text()
	r := &Refusals{}
	s := secretNamed("member-x", true, kubeconfigWith("token: "+secret+`}}, {name: u, user: {token: `+secret))
	err := ScreenKubeconfigSecret(s, credentials.Policy{})
	if err == nil {
		t.Fatal("two users of one name admitted")
	}
	r.Refuse(s, "member-x", err)
	public := r.Refused("member-x")
	if public == nil || public.Error() != credentials.PublicMessage(credentials.ReasonUnparseable) {
		t.Fatalf("Refused = %v, want the public sentence for %s", public, credentials.ReasonUnparseable)
	}
	detail := errors.Unwrap(public)
	if detail == nil || !strings.Contains(detail.Error(), "urutau-system/member-x") || !strings.Contains(detail.Error(), `user "u" is defined twice`) {
		t.Errorf("detail = %v", detail)
	}
	for _, text := range []string{public.Error(), detail.Error()} {
		if strings.Contains(text, secret) {
			t.Errorf("the token appears in %q", text)
		}
	}
	if r.Refused("member-y") != nil {
		t.Error("a member never refused has a refusal")
	}
}

// The refusals are counted per member in the label "member", as every per-member metric of the
// hub (not "cluster", an external label of many Prometheus setups).
func TestCredentialsRefusedLabels(t *testing.T) {
	ch := make(chan *prometheus.Desc, 1)
	credentialsRefused.Describe(ch)
	if d := (<-ch).String(); !strings.Contains(d, "variableLabels: {member,reason}") {
		t.Errorf("urutau_fleet_member_credentials_refused_total: %s, want the labels member and reason", d)
	}
}
