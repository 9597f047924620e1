package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/rpc"
	"time"
)

// TLSListenerConfig is the RPC port's TLS: a dialer writes ProtoTLS, the
// TLS handshake follows, then the protocol byte of what it wants inside.
type TLSListenerConfig struct {
	// Config is the server side of the handshake.
	Config *tls.Config
	// Require refuses every connection that does not start with ProtoTLS
	// (tls.rpc = true).
	Require bool
	// Verify, when set, checks the peer after the handshake for the inner
	// protocol. A refused peer's net/rpc calls are answered with the
	// error (so its logs say why); other protocols are closed.
	Verify func(cs tls.ConnectionState, proto byte) error
}

// SetTLS turns TLS on for connections accepted from now on (nil: off).
func (l *Listener) SetTLS(c *TLSListenerConfig) {
	l.mu.Lock()
	l.tls = c
	l.mu.Unlock()
}

const tlsHandshakeTimeout = 10 * time.Second

func (l *Listener) handleTLS(conn net.Conn, tc *TLSListenerConfig) {
	if tc == nil || tc.Config == nil {
		l.logger.Warn("rpc: TLS connection refused: tls.rpc is off on this agent", "remote", conn.RemoteAddr())
		conn.Close()
		return
	}
	tconn := tls.Server(conn, tc.Config)
	tconn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tconn.Handshake(); err != nil {
		l.logger.Warn("rpc: TLS handshake failed", "remote", conn.RemoteAddr(), "error", err)
		conn.Close()
		return
	}
	var b [1]byte
	if _, err := io.ReadFull(tconn, b[:]); err != nil {
		tconn.Close()
		return
	}
	tconn.SetDeadline(time.Time{})
	if b[0] == ProtoTLS {
		tconn.Close()
		return
	}
	if tc.Verify != nil {
		if err := tc.Verify(tconn.ConnectionState(), b[0]); err != nil {
			l.logger.Warn("rpc: TLS peer refused", "remote", conn.RemoteAddr(), "error", err)
			if b[0] != ProtoRPC && b[0] != ProtoMultiplex {
				tconn.Close()
				return
			}
			msg := "rpc refused: " + err.Error()
			l.dispatch(tconn, b[0], func(c io.ReadWriteCloser) { refuseRPC(c, msg) })
			return
		}
	}
	cs := tconn.ConnectionState()
	l.dispatch(tconn, b[0], func(c io.ReadWriteCloser) { l.serveRPCAs(c, Peer{TLS: &cs}) })
}

// refuseRPC answers every call of a net/rpc session with msg.
func refuseRPC(c io.ReadWriteCloser, msg string) {
	codec := NewServerCodec(bufferedConn(c))
	defer codec.Close()
	for {
		var req rpc.Request
		if err := codec.ReadRequestHeader(&req); err != nil {
			return
		}
		if err := codec.ReadRequestBody(nil); err != nil {
			return
		}
		resp := rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq, Error: msg}
		if err := codec.WriteResponse(&resp, struct{}{}); err != nil {
			return
		}
	}
}

// Dialer opens connections to RPC ports: plain TCP, or TLS (ProtoTLS and a
// handshake) when TLS is set. Callers write their protocol byte on what it
// returns. The zero value dials plain TCP.
type Dialer struct {
	// TLS returns the client config for a new connection (nil: plain);
	// called per dial so reloaded certificates apply.
	TLS func() *tls.Config
	// TLSRegion, when set, returns the client config for a connection to
	// a server of another region (whose certificate names that region);
	// TLS serves this agent's own region and when it is nil.
	TLSRegion func(region string) *tls.Config
}

type regionKey struct{}

// WithRegion marks ctx as a call to a server of region: a Pool dials a new
// session for it with the Dialer's TLSRegion config ("": this agent's own
// region).
func WithRegion(ctx context.Context, region string) context.Context {
	return context.WithValue(ctx, regionKey{}, region)
}

func regionOf(ctx context.Context) string {
	r, _ := ctx.Value(regionKey{}).(string)
	return r
}

// Dial connects to addr within timeout.
func (d *Dialer) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	return d.dialRegion(addr, "", timeout)
}

// dialRegion is Dial to a server of region ("": this agent's own).
func (d *Dialer) dialRegion(addr, region string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(WithRegion(context.Background(), region), timeout)
	defer cancel()
	return d.DialContext(ctx, addr)
}

// DialContext connects to addr; ctx bounds the connection and handshake,
// and names the region of the server dialled (WithRegion) when it is not
// this agent's own.
func (d *Dialer) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	nd := net.Dialer{KeepAlive: 30 * time.Second}
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if d == nil || d.TLS == nil {
		return conn, nil
	}
	cfg := d.TLS()
	if r := regionOf(ctx); r != "" && d.TLSRegion != nil {
		cfg = d.TLSRegion(r)
	}
	if cfg == nil {
		return conn, nil
	}
	if _, err := conn.Write([]byte{ProtoTLS}); err != nil {
		conn.Close()
		return nil, err
	}
	tconn := tls.Client(conn, cfg)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tlsHandshakeTimeout)
		defer cancel()
	}
	if err := tconn.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, &TLSError{Addr: addr, Err: err}
	}
	return tconn, nil
}

// TLSError is a failed TLS handshake with a server.
type TLSError struct {
	Addr string
	Err  error
}

func (e *TLSError) Error() string { return "TLS handshake with " + e.Addr + ": " + e.Err.Error() }
func (e *TLSError) Unwrap() error { return e.Err }

// IsTLSError reports whether err is a failed TLS handshake.
func IsTLSError(err error) bool {
	var te *TLSError
	return errors.As(err, &te)
}
