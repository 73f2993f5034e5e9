package testenv

import (
	"net"
	"sync"
)

// Proxy forwards TCP connections to a target address and can hang: while hung it still accepts
// connections but forwards nothing either way, as a member behind a network that drops packets
// looks to its clients (a stopped API server refuses connections instead, and fails fast).
type Proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	hung  bool
	cond  *sync.Cond
	conns map[net.Conn]struct{}
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Hang stops forwarding on every connection, open or new, until Resume.
func (p *Proxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hung = true
}

// Resume forwards again; what was held is delivered.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hung = false
	p.cond.Broadcast()
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	err := p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.hung = false
	p.cond.Broadcast()
	return err
}

func (p *Proxy) serve() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(in)
	}
}

func (p *Proxy) forward(in net.Conn) {
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	p.track(in, out)
	go p.pipe(out, in)
	p.pipe(in, out)
}

func (p *Proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

// pipe copies src to dst, holding each chunk while the proxy is hung.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.hung {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: close both ends
		}
	}
}
