package localfleet

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFleetRunsPods starts two local clusters and shows what the demo and the e2e suite rely on:
// a StatefulSet's pod gets scheduled on the fake node and reaches Running, and after an API
// server restart the cluster has its objects and still runs new pods.
func TestFleetRunsPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two local clusters")
	}
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test`")
	}
	ctx := t.Context()
	o := Options{BinDir: bin, WorkDir: t.TempDir(), Names: []string{"lf-one", "lf-two"}, Log: t.Logf}
	clusters, err := Create(ctx, o)
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		if err := Delete(context.WithoutCancel(ctx), o); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(clusters) != 2 {
		t.Fatalf("%d clusters, want 2", len(clusters))
	}
	for _, c := range clusters {
		assertServesOnReservedPort(t, o, c)
	}
	cl, err := clusters[1].Client(client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "probe"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: "probe",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "probe:1"}}},
			},
		},
	}
	if err := cl.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "pod probe-0 Running", func() bool {
		pod := &corev1.Pod{}
		return cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "probe-0"}, pod) == nil &&
			pod.Status.Phase == corev1.PodRunning
	})

	if err := StopAPIServer(ctx, o, "lf-two"); err != nil {
		t.Fatal(err)
	}
	if err := reachable(ctx, clusters[1]); err == nil {
		t.Fatal("cluster lf-two still answers after StopAPIServer")
	}
	// Longer than the controller manager's lease renewal deadline (10 s): it exits, and
	// StartAPIServer must bring it back or no StatefulSet pod is created again.
	time.Sleep(12 * time.Second)
	if err := StartAPIServer(ctx, o, "lf-two"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(sts), &appsv1.StatefulSet{}); err != nil {
		t.Fatalf("StatefulSet lost across the API server restart: %v", err)
	}
	// Scale up: a pod created after the restart must reach Running too.
	if err := cl.Patch(ctx, sts, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":2}}`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "pod probe-1 Running after the restart", func() bool {
		pod := &corev1.Pod{}
		return cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "probe-1"}, pod) == nil &&
			pod.Status.Phase == corev1.PodRunning
	})
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}

// assertServesOnReservedPort checks that kwokctl took the API server port the registry reserved
// for the cluster, not one of its own choosing.
func assertServesOnReservedPort(t *testing.T, o Options, c Cluster) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := os.ReadFile(filepath.Join(portRegistry(), u.Port()))
	if err != nil {
		t.Fatalf("cluster %s serves on port %s, which the registry did not reserve: %v", c.Name, u.Port(), err)
	}
	if got, want := string(owner), o.clusterDir(c.Name); got != want {
		t.Fatalf("port %s of cluster %s is reserved for %s", u.Port(), c.Name, got)
	}
}
