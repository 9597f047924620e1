package rpc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Pool keeps one multiplexed session per remote address and a net/rpc client
// on a stream of it. net/rpc clients pipeline concurrent calls, so one client
// per address serves any number of callers, including long blocking queries.
type Pool struct {
	mu      sync.Mutex
	conns   map[string]*poolConn
	timeout time.Duration
	codec   func(io.ReadWriteCloser) rpc.ClientCodec
	closed  bool
	dialer  *Dialer
}

// SetDialer makes new sessions dial through d (TLS); existing sessions
// are kept until they end.
func (p *Pool) SetDialer(d *Dialer) {
	p.mu.Lock()
	p.dialer = d
	p.mu.Unlock()
}

type poolConn struct {
	sess   *yamux.Session
	client *rpc.Client
	idle   []*rpc.Client // per-call streams kept for CallContext (under Pool.mu)
}

// NewPool builds a pool; dialTimeout bounds connection setup.
func NewPool(dialTimeout time.Duration) *Pool {
	return NewPoolCodec(dialTimeout, nil)
}

// NewPoolCodec builds a pool whose clients read and write their stream with
// the codec newCodec returns (nil: NewClientCodec over a read buffer). It
// lets a caller own how answers are decoded, say to decode a lean view of
// them, while speaking the same protocol over the same sessions.
func NewPoolCodec(dialTimeout time.Duration, newCodec func(stream io.ReadWriteCloser) rpc.ClientCodec) *Pool {
	if dialTimeout == 0 {
		dialTimeout = 10 * time.Second
	}
	if newCodec == nil {
		newCodec = func(stream io.ReadWriteCloser) rpc.ClientCodec { return NewClientCodec(bufferedConn(stream)) }
	}
	return &Pool{conns: map[string]*poolConn{}, timeout: dialTimeout, codec: newCodec}
}

// ErrPoolClosed is returned after Shutdown.
var ErrPoolClosed = errors.New("rpc pool is shut down")

// get returns the session to addr, dialling one (for a server of region,
// "" this agent's own: see WithRegion) when there is none.
func (p *Pool) get(addr, region string) (*poolConn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if c, ok := p.conns[addr]; ok && !c.sess.IsClosed() {
		p.mu.Unlock()
		return c, nil
	}
	d := p.dialer
	p.mu.Unlock()

	conn, err := d.dialRegion(addr, region, p.timeout)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte{ProtoMultiplex}); err != nil {
		conn.Close()
		return nil, err
	}
	sess, err := yamux.Client(newFrameConn(conn), yamuxConfig())
	if err != nil {
		conn.Close()
		return nil, err
	}
	stream, err := sess.Open()
	if err != nil {
		sess.Close()
		return nil, err
	}
	pc := &poolConn{sess: sess, client: rpc.NewClientWithCodec(p.codec(stream))}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		sess.Close()
		return nil, ErrPoolClosed
	}
	if old, ok := p.conns[addr]; ok && !old.sess.IsClosed() {
		sess.Close()
		return old, nil
	}
	p.conns[addr] = pc
	return pc, nil
}

// Call invokes method on the server at addr.
func (p *Pool) Call(addr, method string, args, reply any) error {
	return p.call(addr, "", method, args, reply)
}

func (p *Pool) call(addr, region, method string, args, reply any) error {
	c, err := p.get(addr, region)
	if err != nil {
		return &ConnectError{Addr: addr, Err: err}
	}
	err = c.client.Call(method, args, reply)
	if err != nil && unsent(err) {
		p.drop(addr, c)
		return &ConnectError{Addr: addr, Err: err}
	}
	if err != nil && isTransport(err) {
		p.drop(addr, c)
	}
	return err
}

// unsent reports whether err is the transport failing while the request
// was written, so that the server cannot have run the call and it is safe
// to send elsewhere, as after a failed dial. Two such errors reach a call:
// yamux's ErrSessionShutdown, which it answers only on the write side (a
// stream's read swallows it), when the session was gone before the request
// was written; yamux's ErrStreamClosed, which only a stream's write
// returns, once the session's end has closed the stream (the leader died
// and the session noticed while the request was being written: CI saw
// "stream closed" in TestForwardWaitsForNextLeaderWhenLeaderDies); and the
// socket's own write error (say "writev: broken pipe": the peer had
// already reset the connection), which yamux hands only to the writer of
// the frame that failed. Every way the server never
// read the whole request (its last bytes did not leave this host, or
// reached a closed socket), and a call runs only once its request is
// whole.
func unsent(err error) bool {
	if errors.Is(err, yamux.ErrSessionShutdown) || errors.Is(err, yamux.ErrStreamClosed) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && (oe.Op == "write" || oe.Op == "writev")
}

func isTransport(err error) bool {
	if errors.Is(err, rpc.ErrShutdown) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var se rpc.ServerError
	return !errors.As(err, &se)
}

func (p *Pool) drop(addr string, c *poolConn) {
	p.mu.Lock()
	if p.conns[addr] == c {
		delete(p.conns, addr)
	}
	idle := c.idle
	c.idle = nil
	p.mu.Unlock()
	for _, cl := range idle {
		cl.Close()
	}
	c.client.Close()
	c.sess.Close()
}

// Shutdown closes every session.
func (p *Pool) Shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for a, c := range p.conns {
		c.client.Close()
		c.sess.Close()
		delete(p.conns, a)
	}
}

// ConnectError is a call that never reached its server: the connection to
// it could not be made, so the call was not sent (safe to send elsewhere).
type ConnectError struct {
	Addr string
	Err  error
}

func (e *ConnectError) Error() string { return fmt.Sprintf("rpc: connecting to %s: %v", e.Addr, e.Err) }
func (e *ConnectError) Unwrap() error { return e.Err }

// IsConnectError reports whether err is a ConnectError: the call was never
// sent.
func IsConnectError(err error) bool {
	var ce *ConnectError
	return errors.As(err, &ce)
}

// IsConnectionLost reports whether err is the connection to the server
// ending after the call was sent and before its answer came back (the
// server went away, or the session broke): the server may or may not have
// run it. A read is safe to send to another server; a write's outcome is
// unknown. A connect error (never sent), a server's own error and a
// deadline (ErrCallTimeout: the server is there but slow) are not.
func IsConnectionLost(err error) bool {
	if err == nil || IsConnectError(err) || IsServerError(err) || errors.Is(err, ErrCallTimeout) {
		return false
	}
	for _, lost := range []error{io.EOF, io.ErrUnexpectedEOF, rpc.ErrShutdown, yamux.ErrSessionShutdown,
		yamux.ErrConnectionReset, yamux.ErrStreamClosed, yamux.ErrKeepAliveTimeout, yamux.ErrConnectionWriteTimeout} {
		if errors.Is(err, lost) {
			return true
		}
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// IsServerError reports whether err came from the remote endpoint (as opposed
// to the transport).
func IsServerError(err error) bool {
	var se rpc.ServerError
	return errors.As(err, &se)
}
