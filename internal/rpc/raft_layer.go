package rpc

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// RaftLayer is a raft.StreamLayer carried on the RPC port: incoming
// connections arrive through the Listener (first byte ProtoRaft); outgoing
// ones write that byte first.
type RaftLayer struct {
	addr    net.Addr
	acceptc chan net.Conn

	mu     sync.Mutex
	closed bool
	done   chan struct{}
	dialer *Dialer
}

// SetDialer makes Raft dial its peers through d (TLS).
func (r *RaftLayer) SetDialer(d *Dialer) {
	r.mu.Lock()
	r.dialer = d
	r.mu.Unlock()
}

// NewRaftLayer builds a layer that advertises addr.
func NewRaftLayer(addr net.Addr) *RaftLayer {
	return &RaftLayer{addr: addr, acceptc: make(chan net.Conn), done: make(chan struct{})}
}

func (r *RaftLayer) handoff(c net.Conn) {
	select {
	case r.acceptc <- c:
	case <-r.done:
		c.Close()
	}
}

// Accept implements net.Listener.
func (r *RaftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-r.acceptc:
		return c, nil
	case <-r.done:
		return nil, errors.New("raft layer closed")
	}
}

// Close implements net.Listener.
func (r *RaftLayer) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.done)
	}
	return nil
}

// Addr implements net.Listener.
func (r *RaftLayer) Addr() net.Addr { return r.addr }

// Dial implements raft.StreamLayer.
func (r *RaftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	r.mu.Lock()
	d := r.dialer
	r.mu.Unlock()
	conn, err := d.Dial(string(address), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte{ProtoRaft}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
