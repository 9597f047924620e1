package reach

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
)

// NodeConfig wires a client agent's session keeper.
type NodeConfig struct {
	// Servers lists the server RPC addresses to try, in order.
	Servers func() []string
	// Identity is the node's ID and SecretID.
	Identity func() (nodeID, secretID string)
	// Handler serves the requests servers send over the session (the
	// agent's HTTP API).
	Handler http.Handler
	Proto   byte
	Logger  hclog.Logger
	// MinBackoff and MaxBackoff bound the wait between connection
	// attempts (0: 500 ms and 5 s).
	MinBackoff, MaxBackoff time.Duration
	// Dial connects to a server's RPC port (nil: plain TCP); with tls.rpc
	// it returns a TLS connection.
	Dial DialFunc
}

// NodeSession keeps a client agent's session to a server open, connecting
// again (with backoff and jitter, across the servers) whenever it ends, and
// serves the streams servers open on it with the agent's HTTP API.
type NodeSession struct {
	cfg  NodeConfig
	log  hclog.Logger
	srv  *http.Server
	ln   *chanListener
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	sess   *yamux.Session
	server string
}

// StartNode starts keeping the session.
func StartNode(cfg NodeConfig) *NodeSession {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	n := &NodeSession{cfg: cfg, log: cfg.Logger, ln: newChanListener(), stop: make(chan struct{}), done: make(chan struct{})}
	n.srv = &http.Server{Handler: cfg.Handler, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = n.srv.Serve(n.ln) }()
	go n.run()
	return n
}

// Server is the address of the server holding the session ("" when none).
func (n *NodeSession) Server() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sess == nil || n.sess.IsClosed() {
		return ""
	}
	return n.server
}

func (n *NodeSession) run() {
	defer close(n.done)
	backoff := n.cfg.MinBackoff
	next := 0
	for {
		servers := n.cfg.Servers()
		connected := false
		if len(servers) > 0 {
			addr := servers[next%len(servers)]
			next++
			start := time.Now()
			if err := n.serveOne(addr); err != nil {
				n.log.Debug("session to server failed", "server", addr, "error", err)
			}
			connected = time.Since(start) > 10*time.Second
		}
		if connected {
			backoff = n.cfg.MinBackoff
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-n.stop:
			return
		case <-time.After(wait):
		}
		backoff = min(backoff*2, n.cfg.MaxBackoff)
	}
}

// serveOne connects to addr and serves the session until it ends.
func (n *NodeSession) serveOne(addr string) error {
	dial := n.cfg.Dial
	if dial == nil {
		dial = plainDial
	}
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	conn, err := dial(ctx, addr)
	cancel()
	if err != nil {
		return err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetKeepAlive(true)
		tc.SetNoDelay(true)
	}
	id, secret := n.cfg.Identity()
	var r reply
	err = handshake(conn, func() error {
		if _, err := conn.Write([]byte{n.cfg.Proto}); err != nil {
			return err
		}
		if err := writeLine(conn, &sessionHello{NodeID: id, SecretID: secret}); err != nil {
			return err
		}
		return readLine(conn, &r)
	})
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	if err != nil {
		conn.Close()
		return err
	}
	sess, err := yamux.Server(conn, yamuxConfig())
	if err != nil {
		conn.Close()
		return err
	}
	n.mu.Lock()
	select {
	case <-n.stop:
		n.mu.Unlock()
		sess.Close()
		return nil
	default:
	}
	n.sess, n.server = sess, addr
	n.mu.Unlock()
	n.log.Debug("session to server open", "server", addr)
	for {
		st, err := sess.Accept()
		if err != nil {
			sess.Close()
			return err
		}
		if !n.ln.push(st) {
			st.Close()
		}
	}
}

// Close ends the session and the requests being served on it.
func (n *NodeSession) Close() {
	n.mu.Lock()
	select {
	case <-n.stop:
		n.mu.Unlock()
		return
	default:
	}
	close(n.stop)
	if n.sess != nil {
		n.sess.Close()
	}
	n.mu.Unlock()
	n.srv.Close()
	<-n.done
}

// chanListener is a net.Listener fed by the session's accepted streams.
type chanListener struct {
	ch     chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.closed:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return sessionAddr{} }

type sessionAddr struct{}

func (sessionAddr) Network() string { return "reach" }
func (sessionAddr) String() string  { return "server-session" }
