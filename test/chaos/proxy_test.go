package chaos

import (
	"bufio"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// echo serves lines back on a free port of 127.0.0.1.
func echo(t *testing.T) string {
	return serveEach(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(line))
		}
	})
}

// serveEach listens on a free port of 127.0.0.1 and runs serve on each connection (closing it
// after), until the test ends.
func serveEach(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and reads it back within d.
func roundTrip(addr string, d time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return lineBack(c, d)
}

func lineBack(c net.Conn, d time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

func TestProxyPaths(t *testing.T) {
	p, err := newProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	if err := roundTrip(p.addr(), time.Second); err != nil {
		t.Fatalf("open path: %v", err)
	}
	kept, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := lineBack(kept, time.Second); err != nil {
		t.Fatalf("open path: %v", err)
	}

	if err := p.setCut(pathRefuse); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(p.addr(), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("refused path: a new connection got %v, want ECONNREFUSED", err)
	}
	if err := lineBack(kept, time.Second); err == nil {
		t.Errorf("refused path: a connection opened before the cut still answers")
	}

	if err := p.setCut(pathHang); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", p.addr(), time.Second)
	if err != nil {
		t.Fatalf("hanging path: a connection must be accepted: %v", err)
	}
	var ne net.Error
	if err := lineBack(c, 500*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("hanging path: got %v, want no answer (a timeout)", err)
	}

	if err := p.setCut(pathOpen); err != nil {
		t.Fatal(err)
	}
	if err := lineBack(c, time.Second); err == nil {
		t.Errorf("a connection frozen by the hang still answers after it")
	}
	if err := roundTrip(p.addr(), time.Second); err != nil {
		t.Errorf("reopened path: %v", err)
	}

	if err := p.setDown(true); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(p.addr(), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("member down: got %v, want ECONNREFUSED", err)
	}
	if err := p.setDown(false); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(p.addr(), time.Second); err != nil {
		t.Errorf("member back: %v", err)
	}
}

// A slow path answers late, forwards what a client that gave up already sent (a late write),
// and adds latency without capping throughput; opening the path again makes it fast.
func TestProxySlowPath(t *testing.T) {
	target, got := byteSink(t)
	p, err := newProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	const delay = 300 * time.Millisecond
	if err := p.setSlow(delay); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	for i := range 20 {
		if _, err := c.Write([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = c.Close() // the client gives up before anything arrived
	select {
	case b := <-got:
		if took := time.Since(begin); took < delay {
			t.Errorf("the first chunk arrived after %s, want at least %s", took, delay)
		}
		for len(b) < 20 {
			select {
			case more := <-got:
				b = append(b, more...)
			case <-time.After(2 * time.Second):
				t.Fatalf("only %q arrived", b)
			}
		}
		if string(b) != "abcdefghijklmnopqrst" {
			t.Errorf("arrived %q, want the chunks in order", b)
		}
		if took := time.Since(begin); took > delay+time.Second {
			t.Errorf("20 chunks took %s: a slow path must add latency, not %s per chunk", took, delay)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("what the client sent before it gave up never arrived")
	}

	if err := p.setCut(pathOpen); err != nil {
		t.Fatal(err)
	}
	fast, err := newProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fast.close)
	if err := fast.setSlow(delay); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(fast.addr(), delay); err == nil {
		t.Errorf("slow path: a round trip answered within one delay")
	}
	if err := roundTrip(fast.addr(), 2*delay+time.Second); err != nil {
		t.Errorf("slow path: %v", err)
	}
	if err := fast.setCut(pathOpen); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(fast.addr(), delay/2); err != nil {
		t.Errorf("reopened path is still slow: %v", err)
	}
}

// byteSink accepts connections on a free port of 127.0.0.1 and sends what arrives on got.
func byteSink(t *testing.T) (string, <-chan []byte) {
	got := make(chan []byte, 64)
	return serveEach(t, func(c net.Conn) {
		buf := make([]byte, 64)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				got <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}), got
}
