package members

import (
	"context"
	"errors"
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
	t0 := time.Now()
	silent := func(from time.Time, after time.Duration) time.Duration {
		return l.Silent(cfg.Host, from, time.Now().Add(after))
	}

	if got := silent(t0, time.Minute); got != 0 {
		t.Fatalf("no request sent: silent %s, want 0", got)
	}
	// A watch that waits is not silence: it stays open by design.
	watch := send("https://m:6443/api/v1/configmaps?watch=true")
	time.Sleep(10 * time.Millisecond)
	if got := silent(t0, time.Minute); got != 0 {
		t.Fatalf("only a watch waits: silent %s, want 0", got)
	}
	// A request that waits: the silence grows from when it was sent, or from the given start if
	// later...
	first := send("https://m:6443/api")
	waitFor("the request waits", func() bool { return silent(t0, time.Hour) > 0 })
	if got := silent(t0, time.Minute); got < time.Minute || got > time.Minute+10*time.Second {
		t.Fatalf("a minute after the request: silent %s", got)
	}
	if got := silent(time.Now().Add(30*time.Second), time.Minute); got > 30*time.Second+time.Second || got < 29*time.Second {
		t.Fatalf("counted from 30 s on: silent %s, want 30s", got)
	}
	if got := l.Silent("https://other:6443", t0, time.Now().Add(time.Minute)); got != 0 {
		t.Fatalf("another member: silent %s, want 0", got)
	}
	// ...and answers end it.
	close(g.release)
	<-first
	<-watch
	if got := silent(t0, time.Minute); got != 0 {
		t.Fatalf("every request answered: silent %s, want 0", got)
	}

	// A request that fails gets no answer: the silence goes on, also while the client waits to
	// send it again, and through the next attempt.
	g2 := &gate{release: make(chan struct{}), err: errors.New("http2: client connection lost")}
	rt = cfg.WrapTransport(g2)
	failedAt := time.Now()
	attempt := send("https://m:6443/apis")
	waitFor("the request waits", func() bool { return silent(t0, 0) > 0 })
	g2.release <- struct{}{}
	<-attempt
	if got := silent(t0, time.Minute); got < time.Minute {
		t.Fatalf("nothing waits, the last attempt failed: silent %s, want over a minute", got)
	}
	retry := send("https://m:6443/apis")
	waitFor("the retry waits", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.hosts[cfg.Host].waiting == 1
	})
	if got := l.Silent(cfg.Host, t0, failedAt.Add(time.Minute)); got < 59*time.Second {
		t.Fatalf("the retry of a failed request restarted the silence: %s", got)
	}
	close(g2.release)
	<-retry
}
