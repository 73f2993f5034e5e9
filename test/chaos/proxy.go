package chaos

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The hub reaches each member through a proxy of the suite (its kubeconfig Secret names the
// proxy, the member's own clients and pods do not), so that a history can cut the path between
// the hub and a member while the member and its pods go on: a partition from the hub only. The
// proxy refuses at connection (its port bound, not listening: ECONNREFUSED, as from a stopped
// API server) while the member is stopped or the path is cut that way, and accepts and never
// answers (connections frozen, nothing forwarded) while the path hangs. A slow path forwards
// every chunk, either way, a delay after it arrived: a member that answers late, and that may
// receive and commit a request after the hub gave up on it.

// Path states of a member's proxy.
const (
	pathOpen   = "open"
	pathRefuse = "refuse"
	pathHang   = "hang"
)

// proxy forwards the hub's connections to one member's API server.
type proxy struct {
	target string
	port   int

	mu sync.Mutex
	// down: the member's API server is stopped; cut: the history cut the path (pathRefuse,
	// pathHang or pathOpen).
	down bool
	cut  string
	// delay is how late each chunk is forwarded while the path is open (0: at once).
	delay time.Duration
	ln    net.Listener
	held  int // a socket bound to port, not listening, while refusing; -1 otherwise
	conns map[net.Conn]bool
	// wake is closed when the state changes: frozen copies look again.
	wake chan struct{}
	// accepted counts the connections accepted since the last change, for the log.
	accepted int
	logf     func(format string, args ...any)
}

// newProxy listens on a free port of 127.0.0.1 and forwards to target (host:port).
func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{target: target, port: ln.Addr().(*net.TCPAddr).Port, cut: pathOpen, ln: ln, held: -1,
		conns: map[net.Conn]bool{}, wake: make(chan struct{})}
	go p.serve(ln)
	return p, nil
}

func (p *proxy) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// state is what the path does now.
func (p *proxy) state() string {
	switch {
	case p.cut == pathHang:
		return pathHang
	case p.down || p.cut == pathRefuse:
		return pathRefuse
	}
	return pathOpen
}

// setDown records that the member's API server is stopped (or started again).
func (p *proxy) setDown(down bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	return p.apply()
}

// setCut cuts the path (pathRefuse, pathHang) or opens it again (pathOpen, at full speed).
func (p *proxy) setCut(cut string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.delay = cut, 0
	return p.apply()
}

// setSlow opens the path with every chunk forwarded d late.
func (p *proxy) setSlow(d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.delay = pathOpen, d
	return p.apply()
}

// lateness is how late a chunk read now is forwarded.
func (p *proxy) lateness() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay
}

// apply makes the listener and the connections match the state (p.mu held). Leaving a hang
// drops the frozen connections, as a connection that outlived a partition is dead to both ends.
func (p *proxy) apply() error {
	close(p.wake)
	p.wake = make(chan struct{})
	st := p.state()
	dropped := 0
	if st != pathHang {
		for c := range p.conns {
			if st == pathRefuse || c.(*frozenMark).frozen {
				_ = c.Close()
				delete(p.conns, c)
				dropped++
			}
		}
	}
	if p.logf != nil {
		p.logf("proxy %s -> %s: %s, delay %s (%d connections dropped, %d accepted since the last change, %d open)", p.addr(), p.target, st, p.delay, dropped, p.accepted, len(p.conns))
	}
	p.accepted = 0
	switch {
	case st == pathRefuse && p.ln != nil:
		_ = p.ln.Close()
		p.ln = nil
		fd, err := bindOnly(p.port)
		if err != nil {
			return fmt.Errorf("proxy %s: holding the port: %w", p.addr(), err)
		}
		p.held = fd
	case st != pathRefuse && p.ln == nil:
		if p.held >= 0 {
			_ = syscall.Close(p.held)
			p.held = -1
		}
		ln, err := net.Listen("tcp", p.addr())
		if err != nil {
			return fmt.Errorf("proxy %s: listening again: %w", p.addr(), err)
		}
		p.ln = ln
		go p.serve(ln)
	}
	return nil
}

// close stops the proxy.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
	}
	if p.held >= 0 {
		_ = syscall.Close(p.held)
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

// frozenMark is a client connection and whether it was frozen by a hang.
type frozenMark struct {
	net.Conn
	frozen bool
}

// handle forwards one connection; while the path hangs it forwards nothing, and once it
// refuses it drops the connection (one accepted just before the cut included).
func (p *proxy) handle(raw net.Conn) {
	c := &frozenMark{Conn: raw}
	p.mu.Lock()
	p.conns[c] = true
	p.accepted++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		_ = c.Close()
	}()
	if !p.pass(c) {
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	done := make(chan struct{}, 2)
	go func() { p.copy(up, c, c); done <- struct{}{} }()
	go func() { p.copy(c, up, c); done <- struct{}{} }()
	<-done
}

// pass blocks while the path hangs (the connection is then marked frozen, and dropped when the
// hang ends) and tells whether c may go on: not once the path refuses or c was frozen.
func (p *proxy) pass(c *frozenMark) bool {
	for {
		p.mu.Lock()
		st, wake := p.state(), p.wake
		if st == pathHang {
			c.frozen = true
		}
		frozen := c.frozen
		p.mu.Unlock()
		switch st {
		case pathRefuse:
			return false
		case pathOpen:
			return !frozen
		}
		<-wake
	}
}

// copy forwards src to dst, each chunk only while the path lets client connection c pass, and
// as late as the path's delay was when the chunk arrived (chunks keep their order; a slow path
// adds latency, not a cap on throughput).
func (p *proxy) copy(dst io.Writer, src io.Reader, c *frozenMark) {
	type chunk struct {
		due  time.Time
		data []byte
	}
	queue, stop := make(chan chunk, 256), make(chan struct{})
	defer close(stop)
	go func() {
		defer close(queue)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case queue <- chunk{due: time.Now().Add(p.lateness()), data: append([]byte(nil), buf[:n]...)}:
				case <-stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range queue {
		time.Sleep(time.Until(ch.due))
		// A cut that came and went while the chunk waited dropped c: what it held crosses no cut.
		if !p.pass(c) || !p.tracked(c) {
			_ = c.Close()
			return
		}
		if _, err := dst.Write(ch.data); err != nil {
			return
		}
	}
}

// tracked tells whether client connection c is still open through the proxy (a refusing cut
// drops every connection).
func (p *proxy) tracked(c *frozenMark) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns[c]
}

// bindOnly binds a TCP socket to 127.0.0.1:port without listening: a connection to it is
// refused, and no other process takes the port meanwhile.
func bindOnly(port int) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		return -1, errors.Join(fmt.Errorf("binding 127.0.0.1:%d", port), err)
	}
	return fd, nil
}
