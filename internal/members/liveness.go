package members

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"syscall"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// MemberRequestDeadline is a REST option for member clusters: every request that is not a watch
// and carries no deadline of its own gets one of d.
//
// Why: client-go and controller-runtime send some requests with a context that never ends:
// discovery for the RESTMapper (a first write of a kind, or an informer's start) and an
// informer's LIST. Against a member that accepts connections and never answers, such a request
// waits forever, and whoever waits on it with it: the provider engaging the member (found with
// hack/bench: the hub stalled for 5 minutes), and every reconcile whose write needs the RESTMapper
// that request holds. rest.Config.Timeout would also cut the watches, which must stay open.
func MemberRequestDeadline(d time.Duration) func(*rest.Config) error {
	return func(cfg *rest.Config) error {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &deadlineRoundTripper{rt: rt, d: d} })
		return nil
	}
}

type deadlineRoundTripper struct {
	rt http.RoundTripper
	d  time.Duration
}

func (t *deadlineRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, ok := req.Context().Deadline(); ok || isWatch(req) {
		return t.rt.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.d)
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	// The deadline covers reading the body too; it ends when the caller closes it.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

func isWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// Liveness tells, per member API server, whether it answers: how long it has gone without
// answering the requests sent to it. A member that is busy keeps answering some of them; one that
// hangs answers none, and client-go resends a GET that lost its connection after a second, so
// "waiting for an answer" spans failed attempts too. fanOut stops waiting for a member that stays
// silent for memberSilence, which tells a hung member in a fraction of the time its requests take
// to time out, and does not mistake a slow one for it. Add Track to every member's REST options.
type Liveness struct {
	mu    sync.Mutex
	hosts map[string]*hostLiveness
}

type hostLiveness struct {
	// waiting counts the requests sent that have not returned (watches excepted: they stay open).
	waiting int
	// unanswered: the last request that returned got no answer (it failed or timed out).
	unanswered bool
	// since is the last answer, or when a request was sent while none waited and the last one
	// was answered, if later.
	since time.Time
	// lastUnanswered is when a request last returned without an answer.
	lastUnanswered time.Time
	// landing is until when a write sent without an answer may still be committed by the member
	// (WriteLanding after it was sent).
	landing time.Time
}

// Track is a REST option that has Liveness follow the requests of the member cfg is for.
func (l *Liveness) Track(cfg *rest.Config) error {
	host := cfg.Host
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &livenessRoundTripper{rt: rt, l: l, host: host} })
	return nil
}

// Silent is how long host has gone without an answer, counted from from at the earliest: 0 when
// no request waits and the last one was answered.
func (l *Liveness) Silent(host string, from, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[host]
	if h == nil || (h.waiting == 0 && !h.unanswered) {
		return 0
	}
	return now.Sub(latest(h.since, from))
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (l *Liveness) sent(host string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hosts == nil {
		l.hosts = map[string]*hostLiveness{}
	}
	h := l.hosts[host]
	if h == nil {
		h = &hostLiveness{}
		l.hosts[host] = h
	}
	if h.waiting == 0 && !h.unanswered {
		h.since = now
	}
	h.waiting++
}

// returned records the end of a request; answered tells that the member answered it (an error
// is no answer: a timeout above all, but also a refused or lost connection).
func (l *Liveness) returned(host string, answered bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[host]
	h.waiting--
	h.unanswered = !answered
	if answered {
		h.since = now
	} else {
		h.lastUnanswered = now
	}
}

// WriteLanding bounds how long after it was sent a write the hub got no answer to may still
// be committed by the member: the API server runs a request it received until its own
// --request-timeout (60 s by default) even when the client stopped waiting, plus a margin. Until
// then a cleanup that finds the member empty may be overtaken by a coordinator StatefulSet that
// lands after it (writeMayLand): the hub does not count the member empty before that.
const WriteLanding = 70 * time.Second

// Unsent tells a failed request that surely never reached the API server: its connection was
// refused.
func Unsent(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || utilnet.IsConnectionRefused(err)
}

// wrote records a write to host, sent at sent, that returned without an answer (err).
func (l *Liveness) wrote(host string, sent time.Time, err error) {
	if err == nil || Unsent(err) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hosts[host]; h != nil && sent.Add(WriteLanding).After(h.landing) {
		h.landing = sent.Add(WriteLanding)
	}
}

// WriteMayLand tells until when a write to host that got no answer may still be committed, and
// whether that is after now.
func (l *Liveness) WriteMayLand(host string, now time.Time) (time.Time, bool) {
	if l == nil {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[host]
	if h == nil || !now.Before(h.landing) {
		return time.Time{}, false
	}
	return h.landing, true
}

// memberCacheRecovery is how long a member's cache may lag after the member last left a request
// unanswered: an informer whose LIST or WATCH failed retries after a backoff that grows to
// [30 s, 60 s) (client-go's reflector), so it may go on missing changes for up to a minute after
// the member answers again, plus the time of its LIST.
const memberCacheRecovery = 90 * time.Second

// CacheMayLag tells whether host left a request unanswered within memberCacheRecovery of now.
func (l *Liveness) CacheMayLag(host string, now time.Time) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[host]
	return h != nil && !h.lastUnanswered.IsZero() && now.Sub(h.lastUnanswered) < memberCacheRecovery
}

// answered records an answer outside a counted request (a watch that started).
func (l *Liveness) answered(host string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hosts[host]; h != nil {
		h.since, h.unanswered = now, false
	}
}

type livenessRoundTripper struct {
	rt   http.RoundTripper
	l    *Liveness
	host string
}

func (t *livenessRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWatch(req) {
		resp, err := t.rt.RoundTrip(req)
		if err == nil {
			t.l.answered(t.host, time.Now())
		}
		return resp, err
	}
	sent := time.Now()
	t.l.sent(t.host, sent)
	resp, err := t.rt.RoundTrip(req)
	t.l.returned(t.host, err == nil, time.Now())
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		t.l.wrote(t.host, sent, err)
	}
	return resp, err
}
