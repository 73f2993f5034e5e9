package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterinventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/inventory/clusterprofile"
	"github.com/urutau-io/fleet/internal/inventory/inventorytest"
	"github.com/urutau-io/fleet/internal/testenv"
)

// setupModeEnv selects the provider mode in a child test process: the fleet controllers register
// process-wide unique names, so each mode gets a process of its own.
const setupModeEnv = "HUB_TEST_SETUP_MODE"

// TestSetup wires the hub exactly as run does, in both provider modes, against a real hub and a
// real member: the manager starts with the scoped caches, and the member announced by the
// inventory entry becomes reachable through the manager.
func TestSetup(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real API servers; runs without -short")
	}
	mode := os.Getenv(setupModeEnv)
	if mode == "" {
		for _, mode := range []string{providerKubeconfig, providerClusterProfile} {
			t.Run(mode, func(t *testing.T) {
				cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSetup$", "-test.count=1", "-test.v")
				cmd.Env = append(os.Environ(), setupModeEnv+"="+mode)
				out, err := cmd.CombinedOutput()
				if err != nil || !bytes.Contains(out, []byte("--- PASS: TestSetup")) {
					t.Fatalf("child test: %v\n%s", err, out)
				}
			})
		}
		return
	}

	g := NewWithT(t)
	ctx := t.Context()
	clusters, err := testenv.Start(ctx, "hub", "member")
	g.Expect(err).NotTo(HaveOccurred())
	hub, member := clusters[0], clusters[1]
	t.Cleanup(func() { _ = hub.Stop(); _ = member.Stop() })
	g.Expect(inventorytest.InstallClusterProfileCRD(ctx, hub.Config)).To(Succeed())
	hubClient, err := client.New(hub.Config, client.Options{Scheme: inventorytest.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "urutau-system"}})).To(Succeed())

	// The member's Secret as an operator would make it: with `hub member-secret`.
	kc, err := member.Kubeconfig()
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "member.kubeconfig")
	g.Expect(os.WriteFile(path, kc, 0o600)).To(Succeed())
	var out bytes.Buffer
	g.Expect(run([]string{"member-secret", "--name=member-a", "--kubeconfig=" + path, "--labels=region=eu"}, &out)).To(Succeed())
	secret := &corev1.Secret{}
	g.Expect(yaml.Unmarshal(out.Bytes(), secret)).To(Succeed())
	g.Expect(hubClient.Create(ctx, secret)).To(Succeed())

	if mode == providerClusterProfile {
		profile := &clusterinventoryv1alpha1.ClusterProfile{
			ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: "member-a"},
			Spec:       clusterinventoryv1alpha1.ClusterProfileSpec{ClusterManager: clusterinventoryv1alpha1.ClusterManager{Name: "test"}},
		}
		g.Expect(hubClient.Create(ctx, profile)).To(Succeed())
		profile.Status.AccessProviders = []clusterinventoryv1alpha1.AccessProvider{
			clusterprofile.NewAccessProvider(member.Config.Host, member.Config.CAData, clusterprofile.SecretRef{Name: "member-a"}),
		}
		g.Expect(hubClient.Status().Update(ctx, profile)).To(Succeed())
	}
	o, err := parseFlags([]string{
		"--coordinator-image=img", "--cluster-provider=" + mode, "--leader-elect=false",
		"--enable-webhook=false", "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--watch-namespaces=team-a",
	})
	g.Expect(err).NotTo(HaveOccurred())
	mctx, cancel := context.WithCancel(ctx)
	mgr, err := setup(mctx, o, hub.Config)
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		cancel()
		g.Eventually(done, 30*time.Second).Should(Receive(BeNil()))
	}()

	g.Eventually(func(g Gomega) {
		cl, err := mgr.GetCluster(ctx, "member-a")
		g.Expect(err).NotTo(HaveOccurred())
		var ns corev1.Namespace
		g.Expect(cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: "default"}, &ns)).To(Succeed())
	}, 30*time.Second).Should(Succeed())
	g.Consistently(done, 500*time.Millisecond).ShouldNot(Receive(), "the manager stopped early")

	if mode == providerKubeconfig {
		expectRefusedSecret(ctx, g, hubClient, mgr, kc)
	}
}

// expectRefusedSecret registers a member whose kubeconfig runs `/hub` as an exec plugin: the
// provider never engages it, the Secret gets a CredentialsRefused event naming the reason, and
// member-a stays engaged.
func expectRefusedSecret(ctx context.Context, g Gomega, hubClient client.Client, mgr mcmanager.Manager, memberKubeconfig []byte) {
	cfg, err := clientcmd.Load(memberKubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	for _, u := range cfg.AuthInfos {
		u.Exec = &clientcmdapi.ExecConfig{Command: "/hub", Args: []string{"--leader-elect=false"}, APIVersion: "client.authentication.k8s.io/v1"}
	}
	evil, err := clientcmd.Write(*cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hubClient.Create(ctx, inventory.NewKubeconfigSecret("urutau-system", "member-exec", evil, nil, nil))).To(Succeed())
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(hubClient.List(ctx, &list, client.InNamespace("urutau-system"))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == "member-exec" && e.Reason == inventory.EventCredentialsRefused {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ContainElement(ContainSubstring(`(exec): kubeconfig Secret urutau-system/member-exec: user`)))
	}, 30*time.Second).Should(Succeed())
	// And in the metric, by cluster and reason.
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var refused float64
	for _, f := range families {
		if f.GetName() != "urutau_fleet_member_credentials_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["member"] == "member-exec" && l["reason"] == "exec" {
				refused += m.GetCounter().GetValue()
			}
		}
	}
	g.Expect(refused).To(BeNumerically(">=", 1), "urutau_fleet_member_credentials_refused_total{member=member-exec,reason=exec}")
	g.Consistently(func() error {
		_, err := mgr.GetCluster(ctx, "member-exec")
		return err
	}, time.Second, 100*time.Millisecond).Should(HaveOccurred(), "a refused member was engaged")
	_, err = mgr.GetCluster(ctx, "member-a")
	g.Expect(err).NotTo(HaveOccurred(), "member-a was disengaged")
}
