package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/testenv"
)

// TestSelfSignedRotationUnderLoad runs two hub replicas' webhook servers behind one address, as a
// Service does, with validities short enough that serving certificates are renewed several times
// and the CA is rotated once within the test (CA 42 s, serving certificates 27 s), while the API
// server admits CDCPipelines non-stop (every admission on a new connection, so every one is a TLS
// handshake with one replica or the other). No admission may fail.
func TestSelfSignedRotationUnderLoad(t *testing.T) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	lb, err := newRoundRobin()
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + lb.addr() + Path
	env := startSelfSignedEnv(t, admissionregistrationv1.WebhookClientConfig{URL: &url})
	ctx, c := t.Context(), env.Client
	// Renewals with a third left: serving certificates at about 18 s and 36 s, the CA at 28 s.
	const caValidity, leafValidity = 42 * time.Second, 27 * time.Second

	var replicas []SelfSigned
	for i := range 2 {
		r := replicaOf(c, t.TempDir(), time.Now)
		r.Hosts, r.CAValidity, r.LeafValidity, r.CheckInterval = []string{"127.0.0.1"}, caValidity, leafValidity, 300*time.Millisecond
		if err := r.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		lb.add(startReplica(t, env, r, i))
		replicas = append(replicas, r)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rotation"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	firstCA := storedCA(t, c)
	serials := make([]map[string]bool, len(replicas))
	for i := range serials {
		serials[i] = map[string]bool{}
	}
	var admitted, failed atomic.Int64
	var firstFailure atomic.Value
	deadline := time.Now().Add(48 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		p := fresh(ns.Name, fmt.Sprintf("p-%d", n))
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			failed.Add(1)
			firstFailure.CompareAndSwap(nil, err.Error())
		} else {
			admitted.Add(1)
		}
		for i, r := range replicas {
			serials[i][readCert(t, r.CertDir).SerialNumber.String()] = true
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("admitted %d, failed %d; serving certificates issued per replica: %d, %d; connections per replica: %v",
		admitted.Load(), failed.Load(), len(serials[0]), len(serials[1]), lb.counts())
	if failed.Load() > 0 {
		t.Fatalf("%d admissions failed during the rotations, first: %v", failed.Load(), firstFailure.Load())
	}
	if storedCA(t, c) == firstCA {
		t.Error("the CA was not rotated within the test")
	}
	for i, s := range serials {
		if len(s) < 3 {
			t.Errorf("replica %d served %d certificates, want at least 3 (two renewals)", i, len(s))
		}
	}
	for i, n := range lb.counts() {
		if n < 10 {
			t.Errorf("replica %d took %d connections: the test did not exercise it", i, n)
		}
	}
}

// startReplica runs a webhook server like the hub's, with the CDCPipeline validator and r keeping
// its certificate current, and returns its address.
func startReplica(t *testing.T, env *testenv.Cluster, r SelfSigned, i int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: r.CertDir,
			TLSOpts: []func(*tls.Config){HardenTLS}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := admission.WithValidator[*urutauv1alpha1.CDCPipeline](mgr.GetScheme(), &CDCPipelineValidator{Client: mgr.GetAPIReader()})
	// Connection: close makes every admission a new TLS handshake, with whichever replica the
	// balancer picks, so renewed certificates are met at once.
	mgr.GetWebhookServer().Register(Path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Connection", "close")
		h.ServeHTTP(w, req)
	}))
	if err := mgr.Add(r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for mgr.GetWebhookServer().StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("replica %d did not start serving", i)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// roundRobin forwards each TCP connection to the next backend, as a Service spreads connections
// over pods.
type roundRobin struct {
	l        net.Listener
	mu       sync.Mutex
	backends []string
	conns    []int
	next     int
}

func newRoundRobin() (*roundRobin, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rr := &roundRobin{l: l}
	go rr.serve()
	return rr, nil
}

func (rr *roundRobin) addr() string { return rr.l.Addr().String() }

func (rr *roundRobin) add(backend string) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.backends = append(rr.backends, backend)
	rr.conns = append(rr.conns, 0)
}

func (rr *roundRobin) counts() []int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]int{}, rr.conns...)
}

func (rr *roundRobin) serve() {
	for {
		in, err := rr.l.Accept()
		if err != nil {
			return
		}
		rr.mu.Lock()
		if len(rr.backends) == 0 {
			rr.mu.Unlock()
			_ = in.Close()
			continue
		}
		i := rr.next % len(rr.backends)
		rr.next++
		rr.conns[i]++
		backend := rr.backends[i]
		rr.mu.Unlock()
		go pipe(in, backend)
	}
}

func pipe(in net.Conn, backend string) {
	defer in.Close()
	out, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
}
