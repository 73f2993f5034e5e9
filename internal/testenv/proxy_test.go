package testenv

import (
	"bufio"
	"net"
	"testing"
	"time"
)

func TestProxyHangsAndResumes(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = echo.Close() }()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
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
	p, err := NewProxy(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	r := bufio.NewReader(c)
	roundTrip := func(msg string, within time.Duration) (string, error) {
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			return "", err
		}
		_ = c.SetReadDeadline(time.Now().Add(within))
		return r.ReadString('\n')
	}
	if got, err := roundTrip("one", 5*time.Second); err != nil || got != "one\n" {
		t.Fatalf("forwarding: got %q, %v", got, err)
	}
	p.Hang()
	if got, err := roundTrip("two", 300*time.Millisecond); err == nil {
		t.Fatalf("a hung proxy forwarded %q", got)
	}
	// A new connection is accepted but gets nothing either.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("a hung proxy refused a connection: %v", err)
	}
	defer func() { _ = c2.Close() }()
	p.Resume()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("after Resume: got %q, %v; want what was held", got, err)
	}
}
