package reach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/internal/structs"
)

// HubConfig wires a server's Hub.
type HubConfig struct {
	// Verify accepts a node's session hello: the node is known and the
	// secret is its SecretID.
	Verify func(nodeID, secretID string) error
	// Peers lists the other servers' RPC addresses (Search tunnels).
	Peers func() []string
	// Proto is the byte that opens a tunnel on a peer's RPC port.
	Proto  byte
	Logger hclog.Logger
	// Dial connects to a peer's RPC port (nil: plain TCP); with tls.rpc
	// it returns a TLS connection.
	Dial DialFunc
}

// DialFunc connects to an RPC port; the protocol byte is written on what it
// returns.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

func plainDial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: handshakeTimeout, KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, "tcp", addr)
}

// Hub is a server's side: the sessions of the nodes connected to it and
// the tunnels through it.
type Hub struct {
	cfg HubConfig
	log hclog.Logger

	mu       sync.Mutex
	sessions map[string]*yamux.Session
	// via remembers the peer that last had a node's session, tried first.
	via    map[string]string
	closed bool
}

// NewHub builds a server's hub.
func NewHub(cfg HubConfig) *Hub {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Peers == nil {
		cfg.Peers = func() []string { return nil }
	}
	return &Hub{cfg: cfg, log: cfg.Logger, sessions: map[string]*yamux.Session{}, via: map[string]string{}}
}

// ErrNoPath: no server holds a session of the node.
func errNoPath(nodeID string) error {
	return structs.NewErrCoded(503, "no path to node %s: it holds no session with any server (is its agent down or still connecting?)", nodeID)
}

// HandleSession serves a node's session connection (after its protocol
// byte) until it ends.
func (h *Hub) HandleSession(conn net.Conn) {
	var hello sessionHello
	err := handshake(conn, func() error {
		if err := readLine(conn, &hello); err != nil {
			return err
		}
		var r reply
		verr := h.verify(hello)
		if verr != nil {
			r.Error = verr.Error()
		}
		if err := writeLine(conn, &r); err != nil {
			return err
		}
		return verr
	})
	if err != nil {
		h.log.Debug("node session refused", "node_id", hello.NodeID, "remote", conn.RemoteAddr(), "error", err)
		conn.Close()
		return
	}
	// The server opens the streams: it is the yamux client.
	sess, err := yamux.Client(conn, yamuxConfig())
	if err != nil {
		conn.Close()
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		sess.Close()
		return
	}
	old := h.sessions[hello.NodeID]
	h.sessions[hello.NodeID] = sess
	h.mu.Unlock()
	if old != nil {
		old.Close() // the node reconnected: its newest session wins
	}
	h.log.Debug("node session opened", "node_id", hello.NodeID, "remote", conn.RemoteAddr())
	<-sess.CloseChan()
	h.mu.Lock()
	if h.sessions[hello.NodeID] == sess {
		delete(h.sessions, hello.NodeID)
	}
	h.mu.Unlock()
	h.log.Debug("node session closed", "node_id", hello.NodeID)
}

func (h *Hub) verify(hello sessionHello) error {
	if hello.NodeID == "" || hello.SecretID == "" {
		return errors.New("node session: NodeID and SecretID are required")
	}
	if h.cfg.Verify == nil {
		return nil
	}
	return h.cfg.Verify(hello.NodeID, hello.SecretID)
}

// Has reports whether this server holds a session of the node.
func (h *Hub) Has(nodeID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[nodeID]
	return s != nil && !s.IsClosed()
}

// Nodes lists the nodes holding a session with this server.
func (h *Hub) Nodes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.sessions))
	for id := range h.sessions {
		out = append(out, id)
	}
	return out
}

// openLocal opens a stream on the node's session held here.
func (h *Hub) openLocal(nodeID string) (net.Conn, error) {
	h.mu.Lock()
	s := h.sessions[nodeID]
	h.mu.Unlock()
	if s == nil || s.IsClosed() {
		return nil, errNoPath(nodeID)
	}
	st, err := s.Open()
	if err != nil {
		return nil, fmt.Errorf("opening a stream to node %s: %w", nodeID, err)
	}
	return st, nil
}

// DialNode opens a pipe to the node's agent: on the session this server
// holds, else through the server that holds it.
func (h *Hub) DialNode(ctx context.Context, nodeID string) (net.Conn, error) {
	if c, err := h.openLocal(nodeID); err == nil {
		return c, nil
	}
	peers := h.cfg.Peers()
	h.mu.Lock()
	last := h.via[nodeID]
	h.mu.Unlock()
	if last != "" {
		// The peer that had the session last time first.
		for i, p := range peers {
			if p == last {
				peers = append([]string{p}, append(peers[:i:i], peers[i+1:]...)...)
				break
			}
		}
	}
	for _, p := range peers {
		c, err := DialTunnelVia(ctx, h.cfg.Dial, p, h.cfg.Proto, nodeID, false)
		if err == nil {
			h.mu.Lock()
			h.via[nodeID] = p
			h.mu.Unlock()
			return c, nil
		}
		h.log.Trace("peer has no path to node", "peer", p, "node_id", nodeID, "error", err)
	}
	h.mu.Lock()
	delete(h.via, nodeID)
	h.mu.Unlock()
	return nil, errNoPath(nodeID)
}

// HandleTunnel serves a tunnel connection (after its protocol byte): it
// answers whether a pipe to the node exists and then carries it.
func (h *Hub) HandleTunnel(conn net.Conn) {
	var hello tunnelHello
	var target net.Conn
	err := handshake(conn, func() error {
		if err := readLine(conn, &hello); err != nil {
			return err
		}
		var derr error
		if hello.NodeID == "" {
			derr = errors.New("tunnel: NodeID is required")
		} else if hello.Search {
			ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
			target, derr = h.DialNode(ctx, hello.NodeID)
			cancel()
		} else {
			target, derr = h.openLocal(hello.NodeID)
		}
		var r reply
		if derr != nil {
			r.Error = derr.Error()
		}
		if err := writeLine(conn, &r); err != nil {
			return err
		}
		return derr
	})
	if err != nil {
		if target != nil {
			target.Close()
		}
		conn.Close()
		return
	}
	pipe(conn, target)
}

// Close ends every node session.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	ss := h.sessions
	h.sessions = map[string]*yamux.Session{}
	h.mu.Unlock()
	for _, s := range ss {
		s.Close()
	}
}

// DialTunnel opens a pipe to the node through the server at addr (search:
// that server may look for it on the other servers).
func DialTunnel(ctx context.Context, addr string, proto byte, nodeID string, search bool) (net.Conn, error) {
	return DialTunnelVia(ctx, nil, addr, proto, nodeID, search)
}

// DialTunnelVia is DialTunnel connecting with dial (nil: plain TCP).
func DialTunnelVia(ctx context.Context, dial DialFunc, addr string, proto byte, nodeID string, search bool) (net.Conn, error) {
	if dial == nil {
		dial = plainDial
	}
	dctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	conn, err := dial(dctx, addr)
	cancel()
	if err != nil {
		return nil, err
	}
	var r reply
	err = handshake(conn, func() error {
		if _, err := conn.Write([]byte{proto}); err != nil {
			return err
		}
		if err := writeLine(conn, &tunnelHello{NodeID: nodeID, Search: search}); err != nil {
			return err
		}
		return readLine(conn, &r)
	})
	if err == nil && r.Error != "" {
		err = structs.NewErrCoded(503, "%s", r.Error)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
