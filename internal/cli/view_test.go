package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/testenv"
)

// TestOnARealHub creates a hub's objects on a real API server (inventory Secrets, pipelines
// with status as the hub writes it, a tombstone, the hub's Deployment), then runs the commands as
// a user would, through a kubeconfig file: the tables, the objects -o prints, the exit codes,
// kubectl's connection flags, completion, version; last, with the CRDs removed, that each command
// says the hub is not installed.
func TestOnARealHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	clusters, err := testenv.Start(t.Context(), "hub")
	if err != nil {
		t.Fatal(err)
	}
	hub := clusters[0]
	t.Cleanup(func() { _ = hub.Stop() })
	kubeconfig := writeKubeconfig(t, hub)
	// A fixed clock, on a whole second (the API stores times to the second), makes every AGE and
	// time in the output exact: the golden files hold them.
	fixed := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now = func() time.Time { return fixed }
	t.Cleanup(func() { now = time.Now })
	seedHub(t, hub)

	t.Run("views", func(t *testing.T) { checkViews(t, kubeconfig) })
	t.Run("connection flags", func(t *testing.T) { checkConnectionFlags(t, hub, kubeconfig) })
	t.Run("completion", func(t *testing.T) { checkCompletion(t, kubeconfig) })
	t.Run("version", func(t *testing.T) { checkHubVersion(t, hub, kubeconfig) })
	// Last: it removes the CRDs.
	t.Run("not installed", func(t *testing.T) { checkNotInstalled(t, hub, kubeconfig) })
}

// checkViews runs members and status in every output format.
func checkViews(t *testing.T, kubeconfig string) {
	out, code := run(t, "members", "--kubeconfig", kubeconfig)
	if code != ExitUnhealthy {
		t.Errorf("members exit code %d, want %d (us-1 is unreachable)", code, ExitUnhealthy)
	}
	wantLines(t, out,
		`^NAME\s+IDENTITY\s+REACHABLE\s+ENGAGED\s+LAST ANSWER\s+PLACED\s+READY\s+TOMBSTONES$`,
		`^eu-1\s+uid-eu-1\s+True\s+True\s+within 30s\s+2\s+1\s+0$`,
		`^gone\s+<none>\s+Unknown\s+False\s+<unknown>\s+0\s+0\s+1$`,
		`^us-1\s+uid-us-1\s+False\s+True\s+14m\s+1\s+0\s+0$`)
	golden(t, "members.txt", out)

	out, _ = run(t, "members", "--kubeconfig", kubeconfig, "-o", "wide")
	wantLines(t, out, `^NAME\s+.*TOMBSTONES\s+CREDENTIALS\s+SOURCE\s+LABELS\s+MESSAGE$`, `^eu-1\s+.*\s+in 30d\s+Secret\s+region=eu\s+<none>$`,
		`^us-1\s+.*\s+<none>\s+Secret\s+<none>\s+cluster "us-1" does not answer: connection refused$`)
	golden(t, "members-wide.txt", out)

	// -o json of many objects is a kubectl List of view objects.
	out, _ = run(t, "members", "--kubeconfig", kubeconfig, "-o", "json")
	var members struct {
		APIVersion, Kind string
		Items            []struct {
			APIVersion, Kind string
			Metadata         struct {
				Name   string
				Labels map[string]string
			}
			Status map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &members); err != nil {
		t.Fatalf("members -o json: %v\n%s", err, out)
	}
	if members.APIVersion != "v1" || members.Kind != "List" || len(members.Items) != 3 {
		t.Fatalf("members -o json is not a List of 3 members:\n%s", out)
	}
	eu, us := members.Items[0], members.Items[2]
	if eu.APIVersion != "view.urutau.io/v1alpha1" || eu.Kind != "Member" || eu.Metadata.Name != "eu-1" || eu.Metadata.Labels["region"] != "eu" ||
		eu.Status["pipelinesPlaced"] != 2.0 || eu.Status["checkInterval"] != "30s" || us.Status["message"] != `cluster "us-1" does not answer: connection refused` {
		t.Errorf("members -o json: %s", out)
	}
	golden(t, "members.json", out)

	out, _ = run(t, "members", "--kubeconfig", kubeconfig, "-o", "name")
	if want := "member.view.urutau.io/eu-1\nmember.view.urutau.io/gone\nmember.view.urutau.io/us-1\n"; out != want {
		t.Errorf("members -o name:\n%s\nwant\n%s", out, want)
	}
	out, _ = run(t, "members", "--kubeconfig", kubeconfig, "-o", `jsonpath={.items[?(@.status.reachable!="True")].metadata.name}`)
	if out != "gone us-1" {
		t.Errorf("members -o jsonpath: %q, want the members not reachable", out)
	}
	out, _ = run(t, "members", "--kubeconfig", kubeconfig, "-o", "custom-columns=NAME:.metadata.name,UP:.status.reachable,PLACED:.status.pipelinesPlaced", "--no-headers")
	wantLines(t, out, `^eu-1\s+True\s+2$`, `^us-1\s+False\s+1$`)
	if strings.Contains(out, "NAME") {
		t.Errorf("custom-columns with --no-headers printed the header:\n%s", out)
	}

	out, code = run(t, "status", "--kubeconfig", kubeconfig, "-n", "shop")
	if code != ExitUnhealthy {
		t.Errorf("status exit code %d, want %d (clicks is not Ready)", code, ExitUnhealthy)
	}
	wantLines(t, out,
		`^PIPELINE\s+MEMBER\s+PHASE\s+GENERATION\s+READY\s+AGE\s+MESSAGE$`,
		`^clicks\s+eu-1\s+Applied\s+1/1\s+0\s+5m\s+waiting for the coordinator$`,
		`^clicks\s+us-1\s+Unreachable\s+1/1\s+0\s+5m\s+connection refused$`,
		`^orders\s+eu-1\s+Ready\s+1/1\s+1\s+5m\s+<none>$`)
	golden(t, "status.txt", out)

	out, code = run(t, "status", "orders", "--kubeconfig", kubeconfig, "-n", "shop")
	if code != ExitOK {
		t.Errorf("status orders exit code %d, want 0 (orders is Ready)", code)
	}
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("status orders: %d lines, want a header and one row:\n%s", n, out)
	}

	out, _ = run(t, "status", "-A", "--kubeconfig", kubeconfig, "-o", "yaml")
	if !strings.Contains(out, "kind: List") || !strings.Contains(out, "kind: Placement") || !strings.Contains(out, "member: us-1") {
		t.Errorf("status -A -o yaml:\n%s", out)
	}
	golden(t, "status-all.yaml", out)
	out, _ = run(t, "status", "-A", "--kubeconfig", kubeconfig, "-o", "name")
	if want := "placement.view.urutau.io/clicks.eu-1\nplacement.view.urutau.io/clicks.us-1\nplacement.view.urutau.io/orders.eu-1\n"; out != want {
		t.Errorf("status -o name:\n%s\nwant\n%s", out, want)
	}
	out, _ = run(t, "status", "-A", "--kubeconfig", kubeconfig, "--no-headers")
	wantLines(t, out, `^shop\s+clicks\s+eu-1\s+Applied`)

	if _, code := run(t, "status", "missing", "--kubeconfig", kubeconfig, "-n", "shop"); code != ExitError {
		t.Errorf("status of a missing pipeline: exit code %d, want %d", code, ExitError)
	}
	if _, code := run(t, "members", "-o", "xml", "--kubeconfig", kubeconfig); code != ExitError {
		t.Errorf("-o xml: exit code %d, want %d", code, ExitError)
	}
}

func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(t.Context(), "kubectl urutau", args, Streams{Out: &out, Err: &errOut})
	if errOut.Len() > 0 {
		t.Logf("%v: stderr: %s", args, errOut.String())
	}
	return out.String(), code
}

// wantLines checks that each pattern matches some line of out.
func wantLines(t *testing.T, out string, patterns ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for _, p := range patterns {
		if !anyMatch(p, lines) {
			t.Errorf("no line matches %s in:\n%s", p, out)
		}
	}
}

func writeKubeconfig(t *testing.T, c *testenv.Cluster) string {
	t.Helper()
	raw, err := c.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// seedHub writes what a hub would hold: members eu-1 and us-1, a tombstone for a member gone,
// and two pipelines with status.
func seedHub(t *testing.T, hub *testenv.Cluster) {
	t.Helper()
	ctx := t.Context()
	for _, ns := range []string{"urutau-system", "shop"} {
		mustCreate(ctx, t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	eu := testenv.KubeconfigSecret("urutau-system", "eu-1", []byte("unused"), map[string]string{"region": "eu"})
	eu.Annotations = map[string]string{"urutau.io/cluster-id": "uid-eu-1",
		"urutau.io/credentials-expire-at": now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339)}
	mustCreate(ctx, t, hub, eu)
	mustCreate(ctx, t, hub, testenv.KubeconfigSecret("urutau-system", "us-1", []byte("unused"), nil))
	// The hub's health records: eu-1 answering since an hour ago, us-1 down for 10 minutes after
	// its last answer 14 minutes ago.
	record := func(member, reachable, message, id string, since, last time.Duration) {
		hubName := "hub-a"
		mustCreate(ctx, t, hub, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: urutauv1alpha1.MemberHealthPrefix + member,
				Labels: map[string]string{urutauv1alpha1.LabelMemberHealth: "true"},
				Annotations: map[string]string{urutauv1alpha1.AnnotationMember: member, urutauv1alpha1.AnnotationReachable: reachable,
					urutauv1alpha1.AnnotationEngaged: "True", urutauv1alpha1.AnnotationHealthMessage: message,
					urutauv1alpha1.AnnotationHealthInterval: "30s", urutauv1alpha1.AnnotationClusterID: id}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &hubName,
				AcquireTime: &metav1.MicroTime{Time: now().Add(-since)}, RenewTime: &metav1.MicroTime{Time: now().Add(-last)}},
		})
	}
	record("eu-1", "True", "", "uid-eu-1", time.Hour, time.Hour)
	record("us-1", "False", `cluster "us-1" does not answer: connection refused`, "uid-us-1", 10*time.Minute, 14*time.Minute)
	// A tombstone: the reader lease entry of a pipeline deleted while member "gone" did not answer.
	mustCreate(ctx, t, hub, &urutauv1alpha1.ReaderLease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "urutau-system", Name: "mysql-5101"},
		Spec: urutauv1alpha1.ReaderLeaseSpec{
			Holder: urutauv1alpha1.PipelineRef{Namespace: "shop", Name: "old", UID: "uid-of-a-deleted-pipeline"},
			Members: []urutauv1alpha1.LeaseMember{{Cluster: "gone", ClusterID: "uid-gone", Namespace: "shop", PipelineUID: "uid-of-a-deleted-pipeline",
				PipelineNamespace: "shop", PipelineName: "old", State: urutauv1alpha1.LeaseMemberGone, Reason: "deleted while unreachable"}},
		},
	})
	since := metav1.NewTime(now().Add(-5 * time.Minute))
	pipeline := func(name string, ready metav1.ConditionStatus, clusters ...urutauv1alpha1.ClusterStatus) {
		p := &urutauv1alpha1.CDCPipeline{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: urutauv1alpha1.CDCPipelineSpec{PipelineSpec: urutauv1alpha1.PipelineSpec{
				Definition: urutauv1alpha1.Definition{S3: "s3://bucket/" + name},
			}},
		}
		mustCreate(ctx, t, hub, p)
		for i := range clusters {
			clusters[i].LastTransitionTime = since
		}
		p.Status = urutauv1alpha1.CDCPipelineStatus{ObservedGeneration: 1, Clusters: clusters,
			Conditions: []metav1.Condition{{Type: "Ready", Status: ready, Reason: "Test", LastTransitionTime: since}}}
		if err := hub.Client.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	pipeline("orders", metav1.ConditionTrue, urutauv1alpha1.ClusterStatus{Name: "eu-1", Phase: "Ready", ObservedGeneration: 1, CoordinatorReadyReplicas: 1})
	pipeline("clicks", metav1.ConditionFalse,
		urutauv1alpha1.ClusterStatus{Name: "eu-1", Phase: "Applied", ObservedGeneration: 1, Message: "waiting for the coordinator"},
		urutauv1alpha1.ClusterStatus{Name: "us-1", Phase: "Unreachable", ObservedGeneration: 1, Message: "connection refused"})
}

func mustCreate(ctx context.Context, t *testing.T, c *testenv.Cluster, obj client.Object) {
	t.Helper()
	if err := c.Client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}
