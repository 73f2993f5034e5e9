package localfleet

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
)

// A reserved port refuses clients, as a dead server's would, and no one else can listen on it
// until it is released.
func TestReservePort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	r, err := reservePort(port)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dialing a reserved port: %v, want connection refused", err)
	}
	for _, a := range []string{":" + strconv.Itoa(port), addr, "[::1]:" + strconv.Itoa(port)} {
		if l, err := net.Listen("tcp", a); err == nil {
			_ = l.Close()
			t.Fatalf("listening on %s while it is reserved succeeded", a)
		}
	}
	r.close()
	l, err = net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listening after the release: %v", err)
	}
	_ = l.Close()
}
