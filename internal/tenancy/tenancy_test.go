package tenancy

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/inventory"
)

func policy(name string, spec urutauv1alpha1.PlacementPolicySpec) urutauv1alpha1.PlacementPolicy {
	return urutauv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestCheck(t *testing.T) {
	everything := &metav1.LabelSelector{}
	policies := []urutauv1alpha1.PlacementPolicy{
		// Team shop: its namespace, on eu members, in its own member namespace.
		policy("team-shop", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"},
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}),
		// Analytics namespaces (by label) on one named member, into two member namespaces.
		policy("analytics", urutauv1alpha1.PlacementPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "analytics"}},
			Clusters:          []string{"us-1"}, MemberNamespaces: []string{"analytics", "analytics-batch"}}),
		// An open policy for the sandbox label: every member.
		policy("sandbox", urutauv1alpha1.PlacementPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"sandbox": "true"}}, ClusterSelector: everything}),
	}
	b := Boundary{Policies: policies, Reserved: []string{"urutau-system"}}
	eu1 := inventory.Member{Name: "eu-1", Labels: map[string]string{"region": "eu"}}
	us1 := inventory.Member{Name: "us-1", Labels: map[string]string{"region": "us"}}
	tests := []struct {
		name       string
		boundary   Boundary
		hubNS      *corev1.Namespace
		member     inventory.Member
		memberNS   string
		wantReason string
		wantIn     []string
	}{
		{name: "allowed by selector", boundary: b, hubNS: namespace("shop", nil), member: eu1, memberNS: "shop"},
		{name: "member outside the policy", boundary: b, hubNS: namespace("shop", nil), member: us1, memberNS: "shop",
			wantReason: ReasonClusterNotAllowed, wantIn: []string{`may not run on member "us-1"`, `"team-shop" (clusterSelector "region=eu")`}},
		{name: "other member namespace", boundary: b, hubNS: namespace("shop", nil), member: eu1, memberNS: "payments",
			wantReason: ReasonMemberNamespaceDenied, wantIn: []string{`"team-shop" allows member namespaces [shop] (the hub namespace's name)`}},
		{name: "namespace no policy governs", boundary: b, hubNS: namespace("payments", nil), member: eu1, memberNS: "payments",
			wantReason: ReasonNoPlacementPolicy, wantIn: []string{`hub namespace "payments"`, "docs/security.md"}},
		{name: "no policy at all: closed by default", boundary: Boundary{}, hubNS: namespace("shop", nil), member: eu1, memberNS: "shop",
			wantReason: ReasonNoPlacementPolicy},
		{name: "namespace selected by label, listed member namespace", boundary: b, hubNS: namespace("bi", map[string]string{"team": "analytics"}),
			member: us1, memberNS: "analytics-batch"},
		{name: "namespace selected by label, unlisted member namespace", boundary: b, hubNS: namespace("bi", map[string]string{"team": "analytics"}),
			member: us1, memberNS: "bi", wantReason: ReasonMemberNamespaceDenied, wantIn: []string{"[analytics, analytics-batch]"}},
		{name: "named member by label namespace on the wrong member", boundary: b, hubNS: namespace("bi", map[string]string{"team": "analytics"}),
			member: eu1, memberNS: "analytics", wantReason: ReasonClusterNotAllowed, wantIn: []string{`"analytics" (clusters us-1)`}},
		{name: "empty selector selects every member", boundary: b, hubNS: namespace("play", map[string]string{"sandbox": "true"}), member: us1, memberNS: "play"},
		// System namespaces, whatever the policies say.
		{name: "kube-system on the hub", boundary: b, hubNS: namespace("kube-system", map[string]string{"sandbox": "true"}), member: eu1, memberNS: "kube-system",
			wantReason: ReasonSystemNamespace, wantIn: []string{`hub namespace "kube-system"`, "belong to Kubernetes"}},
		{name: "default", boundary: b, hubNS: namespace("default", map[string]string{"sandbox": "true"}), member: eu1, memberNS: "default", wantReason: ReasonSystemNamespace},
		{name: "kube-node-lease", boundary: b, hubNS: namespace("kube-node-lease", nil), member: eu1, memberNS: "kube-node-lease", wantReason: ReasonSystemNamespace},
		{name: "the hub's own namespace", boundary: b, hubNS: namespace("urutau-system", map[string]string{"sandbox": "true"}), member: eu1, memberNS: "urutau-system",
			wantReason: ReasonSystemNamespace, wantIn: []string{"the hub's own namespace"}},
		{name: "config/spoke's namespace", boundary: b, hubNS: namespace("urutau-fleet-system", map[string]string{"sandbox": "true"}), member: eu1, memberNS: "urutau-fleet-system",
			wantReason: ReasonSystemNamespace},
		{name: "labelled system", boundary: b, hubNS: namespace("ops", map[string]string{"sandbox": "true", urutauv1alpha1.LabelSystemNamespace: "true"}), member: eu1, memberNS: "ops",
			wantReason: ReasonSystemNamespace, wantIn: []string{urutauv1alpha1.LabelSystemNamespace}},
		{name: "policy names a system member namespace", boundary: Boundary{Policies: []urutauv1alpha1.PlacementPolicy{policy("bad", urutauv1alpha1.PlacementPolicySpec{
			Namespaces: []string{"shop"}, ClusterSelector: everything, MemberNamespaces: []string{"kube-system"}})}},
			hubNS: namespace("shop", nil), member: eu1, memberNS: "kube-system", wantReason: ReasonSystemNamespace, wantIn: []string{`namespace "kube-system" of member "eu-1"`}},
		{name: "invalid selector selects nothing", boundary: Boundary{Policies: []urutauv1alpha1.PlacementPolicy{policy("broken", urutauv1alpha1.PlacementPolicySpec{
			Namespaces: []string{"shop"}, ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Bogus"}}}})}},
			hubNS: namespace("shop", nil), member: eu1, memberNS: "shop", wantReason: ReasonClusterNotAllowed, wantIn: []string{"an invalid clusterSelector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.boundary.Check(tt.hubNS, tt.member, tt.memberNS)
			expectDenial(t, err, tt.wantReason, tt.wantIn...)
		})
	}
}

func expectDenial(t *testing.T, err error, reason string, in ...string) {
	t.Helper()
	if reason == "" {
		if err != nil {
			t.Fatalf("denied: %v", err)
		}
		return
	}
	var d *Denial
	if !errors.As(err, &d) {
		t.Fatalf("err = %v, want a Denial %s", err, reason)
	}
	if d.Reason != reason {
		t.Errorf("reason = %s, want %s (%v)", d.Reason, reason, err)
	}
	for _, s := range in {
		if !strings.Contains(d.Message, s) {
			t.Errorf("message %q does not contain %q", d.Message, s)
		}
	}
}

func TestCheckMemberNamespace(t *testing.T) {
	b := Boundary{Reserved: []string{"urutau-system"}}
	open := map[string]string{urutauv1alpha1.LabelFleetManaged: "true"}
	tests := []struct {
		name   string
		ns     *corev1.Namespace
		reason string
	}{
		{name: "opted in", ns: namespace("shop", open)},
		{name: "unlabelled", ns: namespace("shop", nil), reason: ReasonMemberNamespaceOptOut},
		{name: "label not true", ns: namespace("shop", map[string]string{urutauv1alpha1.LabelFleetManaged: "yes"}), reason: ReasonMemberNamespaceOptOut},
		{name: "kube-system even when labelled", ns: namespace("kube-system", open), reason: ReasonSystemNamespace},
		{name: "kube-public", ns: namespace("kube-public", open), reason: ReasonSystemNamespace},
		{name: "spoke namespace", ns: namespace(SpokeNamespace, open), reason: ReasonSystemNamespace},
		{name: "hub namespace", ns: namespace("urutau-system", open), reason: ReasonSystemNamespace},
		{name: "labelled system", ns: namespace("ops", map[string]string{urutauv1alpha1.LabelFleetManaged: "true", urutauv1alpha1.LabelSystemNamespace: "true"}), reason: ReasonSystemNamespace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.CheckMemberNamespace("eu-1", tt.ns)
			expectDenial(t, err, tt.reason, `"eu-1"`)
		})
	}
}

func TestCheckUnreadableNamespace(t *testing.T) {
	b := Boundary{Reserved: []string{"urutau-system"}}
	tests := []struct {
		name, ns  string
		forbidden bool
		reason    string
		want      string
	}{
		{name: "missing", ns: "shop", reason: ReasonMemberNamespaceOptOut, want: `namespace "shop" does not exist in member "eu-1"`},
		{name: "forbidden", ns: "shop", forbidden: true, reason: ReasonMemberNamespaceOptOut, want: `(forbidden)`},
		{name: "kube-system forbidden", ns: "kube-system", forbidden: true, reason: ReasonSystemNamespace, want: `"eu-1"`},
		{name: "hub namespace missing", ns: "urutau-system", reason: ReasonSystemNamespace, want: `"urutau-system"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectDenial(t, b.CheckUnreadableNamespace("eu-1", tt.ns, tt.forbidden), tt.reason, tt.want)
		})
	}
}

func TestSecrets(t *testing.T) {
	spec := &urutauv1alpha1.CDCPipelineSpec{PipelineSpec: urutauv1alpha1.PipelineSpec{
		Secrets: urutauv1alpha1.Secrets{Source: "src", SSH: "ssh", KafkaTLS: "kafka"},
		Coordinator: urutauv1alpha1.CoordinatorSpec{
			TLS:      &urutauv1alpha1.TLSSpec{ServerSecret: "srv", ClientSecret: "cli"},
			Eventlog: &urutauv1alpha1.EventlogSpec{Bucket: "b", Secret: "s3"},
		},
	}}
	refs := SecretRefs(spec)
	want := []SecretRef{{"spec.secrets.source", "src"}, {"spec.secrets.ssh", "ssh"}, {"spec.secrets.kafkaTLS", "kafka"},
		{"spec.coordinator.tls.serverSecret", "srv"}, {"spec.coordinator.tls.clientSecret", "cli"}, {"spec.coordinator.eventlog.secret", "s3"}}
	if len(refs) != len(want) {
		t.Fatalf("refs = %v, want %v", refs, want)
	}
	for i := range want {
		if refs[i] != want[i] {
			t.Errorf("refs[%d] = %v, want %v", i, refs[i], want[i])
		}
	}
	if got := SecretRefs(&urutauv1alpha1.CDCPipelineSpec{}); len(got) != 0 {
		t.Errorf("no Secrets named, refs = %v", got)
	}

	secret := func(typ corev1.SecretType, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "src", Labels: labels}, Type: typ}
	}
	open := map[string]string{urutauv1alpha1.LabelFleetSecret: "true"}
	ref := SecretRef{"spec.secrets.kafkaTLS", "src"}
	expectDenial(t, CheckSecret("eu-1", ref, secret(corev1.SecretTypeOpaque, open)), "")
	expectDenial(t, CheckSecret("eu-1", ref, secret(corev1.SecretTypeTLS, open)), "")
	expectDenial(t, CheckSecret("eu-1", ref, secret(corev1.SecretTypeOpaque, nil)), ReasonSecretNotOptedIn,
		"spec.secrets.kafkaTLS: Secret shop/src", urutauv1alpha1.LabelFleetSecret+"=true")
	// The hub's own member token, whatever its labels.
	expectDenial(t, CheckSecret("eu-1", ref, secret(corev1.SecretTypeServiceAccountToken, open)), ReasonServiceAccountTokenRef, "ServiceAccount token")
}

// The member checks only read the Namespace they are given: the jobs that create in one member
// namespace at once share one read of it (memberwork.SharedReads), so a check that wrote to it
// (a label defaulted, a map created) would race the others and change what they decide.
func TestMemberChecksLeaveTheNamespaceAlone(t *testing.T) {
	open := map[string]string{urutauv1alpha1.LabelFleetManaged: "true"}
	weak := map[string]string{urutauv1alpha1.LabelFleetManaged: "true", LabelPodSecurityEnforce: "privileged"}
	member := inventory.Member{Name: "eu-1", Labels: map[string]string{"region": "eu"}}
	granting := []urutauv1alpha1.PlacementPolicy{policy("lab", urutauv1alpha1.PlacementPolicySpec{Namespaces: []string{"shop"}, Clusters: []string{"eu-1"}, AllowWeakPodSecurity: true})}
	for _, b := range []Boundary{{Reserved: []string{"urutau-system"}}, {AllowWeakPodSecurity: true}, {Policies: granting}} {
		for _, ns := range []*corev1.Namespace{namespace("shop", nil), namespace("shop", open), namespace("shop", weak), namespace("kube-system", open)} {
			before := ns.DeepCopy()
			_ = b.CheckMemberNamespace(member.Name, ns)
			_ = b.CheckMemberPodSecurity(namespace("shop", nil), member, ns)
			_ = CheckPodSecurity(member.Name, ns, false)
			if !reflect.DeepEqual(before, ns) {
				t.Errorf("namespace %s with labels %v became %+v", before.Name, before.Labels, ns)
			}
		}
	}
}
