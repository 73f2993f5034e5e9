package testenv

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestCountWrites(t *testing.T) {
	raw := []byte(`# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="WATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="statefulsets",scope="resource",subresource="",verb="APPLY",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="apps",resource="statefulsets",scope="resource",subresource="",verb="APPLY",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 11
`)
	got, err := countWrites(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got["POST"] != 2 || got["APPLY"] != 5 || len(got) != 2 {
		t.Fatalf("countWrites = %v, want POST=2 APPLY=5 (dry runs and reads excluded)", got)
	}
	if Total(got) != 7 {
		t.Fatalf("Total = %d, want 7", Total(got))
	}
	if d := Delta(map[string]int{"POST": 2, "APPLY": 1}, got); len(d) != 1 || d["APPLY"] != 4 {
		t.Fatalf("Delta = %v, want APPLY=4 only", d)
	}
}

// TestStartStopRestart proves the harness itself: CRDs installed, writes counted by the API
// server, and an API server that stops and comes back with its data.
func TestStartStopRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real API servers")
	}
	ctx := t.Context()
	clusters, err := Start(ctx, "one", "two")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range clusters {
			if err := c.Stop(); err != nil {
				t.Error(err)
			}
		}
	})
	c := clusters[0]
	for _, name := range []string{"cdcpipelines.urutau.io", "scaledobjects.keda.sh"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatalf("CRD %s not installed: %v", name, err)
		}
	}

	before, err := c.WriteRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "survivor"}}
	if err := c.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	after, err := c.WriteRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := Delta(before, after); d["POST"] != 1 {
		t.Fatalf("writes during one create = %v, want POST=1", d)
	}

	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err == nil {
		t.Fatal("API server still answers after StopAPIServer")
	}
	if err := c.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatalf("object lost across an API server restart: %v", err)
	}
	if _, err := clusters[1].Kubeconfig(); err != nil {
		t.Fatal(err)
	}
}

func TestIgnoreStopTimeouts(t *testing.T) {
	timeout := errors.New("timeout waiting for process kube-apiserver to stop")
	other := errors.New("unable to signal for process etcd to stop")
	if err := ignoreStopTimeouts(utilerrors.NewAggregate([]error{timeout})); err != nil {
		t.Errorf("a stop timeout alone: got %v, want nil", err)
	}
	if err := ignoreStopTimeouts(timeout); err != nil {
		t.Errorf("a bare stop timeout: got %v, want nil", err)
	}
	if err := ignoreStopTimeouts(utilerrors.NewAggregate([]error{timeout, other})); err == nil || !strings.Contains(err.Error(), "unable to signal") {
		t.Errorf("a real error next to a timeout: got %v, want it kept", err)
	}
	if err := ignoreStopTimeouts(nil); err != nil {
		t.Errorf("nil: got %v", err)
	}
}
