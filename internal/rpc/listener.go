package rpc

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
)

// Listener accepts connections on the RPC port and dispatches them by their
// first byte: net/rpc sessions to the rpc.Server, Raft connections to the
// RaftLayer, yamux sessions to per-stream net/rpc sessions, and any other
// byte to the handler registered for it (Handle).
type Listener struct {
	ln     net.Listener
	srv    *rpc.Server
	raft   *RaftLayer
	logger hclog.Logger

	mu     sync.Mutex
	conns  map[io.Closer]struct{}
	closed bool
	wg     sync.WaitGroup
	// extra are the handlers of protocol bytes other packages own
	// (Handle); each takes over the connection.
	extra map[byte]func(net.Conn)
	// tls, when set, lets connections upgrade (ProtoTLS) and may require
	// them to (tls.go).
	tls *TLSListenerConfig
	// authz, when set, checks every network call (authz.go).
	authz Authorizer
}

// Handle hands every connection whose first byte is proto to fn, which
// owns it from then on (it must close it). Connections arriving before
// the handler is set are closed. The
// listener closes such connections it still tracks when it closes.
func (l *Listener) Handle(proto byte, fn func(net.Conn)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.extra == nil {
		l.extra = map[byte]func(net.Conn){}
	}
	l.extra[proto] = fn
}

// NewListener wraps ln. raft may be nil when Raft does not ride on this port.
func NewListener(ln net.Listener, srv *rpc.Server, raft *RaftLayer, logger hclog.Logger) *Listener {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Listener{ln: ln, srv: srv, raft: raft, logger: logger, conns: map[io.Closer]struct{}{}}
}

// Addr is the listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Serve accepts until Close.
func (l *Listener) Serve() {
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if closed {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.logger.Error("rpc accept failed", "error", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.handle(conn)
		}()
	}
}

func (l *Listener) track(c io.Closer) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *Listener) untrack(c io.Closer) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

func (l *Listener) handle(conn net.Conn) {
	var b [1]byte
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})
	l.mu.Lock()
	tc := l.tls
	l.mu.Unlock()
	switch {
	case b[0] == ProtoTLS:
		l.handleTLS(conn, tc)
	case tc != nil && tc.Require:
		l.logger.Warn("rpc: plaintext connection refused: tls.rpc requires TLS", "remote", conn.RemoteAddr())
		conn.Close()
	default:
		l.dispatch(conn, b[0], l.serveRPC)
	}
}

// serveRPC serves one net/rpc session on c.
func (l *Listener) serveRPC(c io.ReadWriteCloser) {
	l.serveRPCAs(c, Peer{})
}

// dispatch hands conn to the protocol b selects; net/rpc sessions are
// served by serve.
func (l *Listener) dispatch(conn net.Conn, b byte, serve func(io.ReadWriteCloser)) {
	switch b {
	case ProtoRPC:
		if !l.track(conn) {
			return
		}
		defer l.untrack(conn)
		serve(conn)
	case ProtoRaft:
		if l.raft == nil {
			conn.Close()
			return
		}
		l.raft.handoff(conn)
	case ProtoMultiplex:
		cfg := yamuxConfig()
		sess, err := yamux.Server(newFrameConn(conn), cfg)
		if err != nil {
			conn.Close()
			return
		}
		if !l.track(sess) {
			return
		}
		defer l.untrack(sess)
		for {
			stream, err := sess.Accept()
			if err != nil {
				sess.Close()
				return
			}
			go serve(stream)
		}
	default:
		l.mu.Lock()
		fn := l.extra[b]
		l.mu.Unlock()
		if fn != nil {
			if !l.track(conn) {
				return
			}
			defer l.untrack(conn)
			fn(conn)
			return
		}
		l.logger.Warn("rpc: unknown protocol byte", "byte", b, "remote", conn.RemoteAddr())
		conn.Close()
	}
}

// Close stops accepting and closes every session.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	err := l.ln.Close()
	if l.raft != nil {
		l.raft.Close()
	}
	return err
}

func yamuxConfig() *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	cfg.EnableKeepAlive = true
	cfg.KeepAliveInterval = 10 * time.Second
	cfg.ConnectionWriteTimeout = 30 * time.Second
	cfg.AcceptBacklog = 1024
	cfg.MaxStreamWindowSize = 1 << 20
	return cfg
}

type bufConn struct {
	io.Reader
	io.Writer
	c io.Closer
	w *bufio.Writer
}

// bufferedConn buffers reads; net/rpc's codec flushes its own writes.
func bufferedConn(c io.ReadWriteCloser) io.ReadWriteCloser {
	return &bufConn{Reader: bufio.NewReaderSize(c, 16<<10), Writer: c, c: c}
}

func (b *bufConn) Close() error { return b.c.Close() }
