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
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					_, _ = c.Write([]byte(line))
				}
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
