package fleet

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// deadlineRecorder answers every request and keeps its context.
type deadlineRecorder struct{ ctx context.Context }

func (d *deadlineRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	d.ctx = req.Context()
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

func TestMemberRequestDeadline(t *testing.T) {
	cfg := &rest.Config{}
	if err := MemberRequestDeadline(3 * time.Second)(cfg); err != nil {
		t.Fatal(err)
	}
	rec := &deadlineRecorder{}
	rt := cfg.WrapTransport(rec)

	get := func(ctx context.Context, url string) (deadline time.Time, has bool, body io.Closer) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		deadline, has = rec.ctx.Deadline()
		return deadline, has, resp.Body
	}

	// Discovery without a deadline gets one, alive until the body is closed.
	before := time.Now()
	deadline, has, body := get(context.Background(), "https://m/api")
	if !has || deadline.Before(before.Add(3*time.Second)) || deadline.After(time.Now().Add(3*time.Second)) {
		t.Fatalf("GET /api: deadline %v (set %v), want 3s from now", deadline, has)
	}
	if rec.ctx.Err() != nil {
		t.Fatal("the deadline's context ended before the body was read")
	}
	_ = body.Close()
	if rec.ctx.Err() == nil {
		t.Fatal("closing the body did not release the deadline's context")
	}

	// A watch stays open as long as it runs.
	if _, has, _ := get(context.Background(), "https://m/apis/apps/v1/statefulsets?watch=true&timeoutSeconds=300"); has {
		t.Fatal("a watch got a deadline")
	}

	// A caller's own deadline is kept.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	want, _ := ctx.Deadline()
	if got, _, _ := get(ctx, "https://m/api/v1/namespaces/ns/serviceaccounts/sa"); !got.Equal(want) {
		t.Fatalf("the caller's deadline %v became %v", want, got)
	}
}

// gate answers each request when released, or fails it with err.
type gate struct {
	release chan struct{}
	err     error
}

func (g *gate) RoundTrip(*http.Request) (*http.Response, error) {
	<-g.release
	if g.err != nil {
		return nil, g.err
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

func TestLiveness(t *testing.T) {
	var l Liveness
	cfg := &rest.Config{Host: "https://m:6443"}
	if err := l.Track(cfg); err != nil {
		t.Fatal(err)
	}
	g := &gate{release: make(chan struct{})}
	rt := cfg.WrapTransport(g)
	send := func(url string) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if resp, err := rt.RoundTrip(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
		return done
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}

	if got := l.silent(cfg.Host, time.Now()); got != 0 {
		t.Fatalf("no request sent: silent %s, want 0", got)
	}
	// A watch that waits is not silence: it stays open by design.
	watch := send("https://m:6443/api/v1/configmaps?watch=true")
	time.Sleep(10 * time.Millisecond)
	if got := l.silent(cfg.Host, time.Now()); got != 0 {
		t.Fatalf("only a watch waits: silent %s, want 0", got)
	}
	// A request that waits: the silence grows from when it was sent...
	first := send("https://m:6443/api")
	waitFor("the request waits", func() bool { return l.silent(cfg.Host, time.Now().Add(time.Hour)) > 0 })
	if got := l.silent(cfg.Host, time.Now().Add(time.Minute)); got < time.Minute || got > time.Minute+10*time.Second {
		t.Fatalf("a minute after the request: silent %s", got)
	}
	if got := l.silent("https://other:6443", time.Now().Add(time.Minute)); got != 0 {
		t.Fatalf("another member: silent %s, want 0", got)
	}
	// ...and answers end it.
	close(g.release)
	<-first
	<-watch
	if got := l.silent(cfg.Host, time.Now().Add(time.Minute)); got != 0 {
		t.Fatalf("every request answered: silent %s, want 0", got)
	}

	// A request that timed out is no answer: the silence goes on while another waits.
	g2 := &gate{release: make(chan struct{}), err: context.DeadlineExceeded}
	rt = cfg.WrapTransport(g2)
	before := time.Now()
	a, b := send("https://m:6443/api"), send("https://m:6443/apis")
	waitFor("both requests wait", func() bool { return l.silent(cfg.Host, time.Now()) > 0 })
	g2.release <- struct{}{}
	waitFor("one request returns", func() bool {
		select {
		case <-a:
			return true
		case <-b:
			return true
		default:
			return false
		}
	})
	if got := l.silent(cfg.Host, before.Add(time.Minute)); got < 50*time.Second {
		t.Fatalf("after a timeout, with a request still waiting: silent %s, want about a minute", got)
	}
	close(g2.release)
}
