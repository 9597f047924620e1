package rpc

import (
	"crypto/tls"
	"io"
	"net/rpc"
	"sync"
)

// Peer is what the listener knows of the other end of a network RPC
// session: its verified TLS state when the session rides on tls.rpc.
type Peer struct {
	TLS *tls.ConnectionState
}

// Authorizer decides a network call before its endpoint runs: it sees the
// method, the decoded arguments and the peer. A non-nil error refuses the
// call (its text is the caller's error); a non-nil filter is applied to
// the reply before it is encoded (list answers keep what the caller may
// read). In-process calls (InmemCall) never pass through it: whoever
// calls in-process has authorized already.
type Authorizer func(method string, args any, peer Peer) (filter func(reply any), err error)

// SetAuthorizer makes the listener check every network call with fn.
func (l *Listener) SetAuthorizer(fn Authorizer) {
	l.mu.Lock()
	l.authz = fn
	l.mu.Unlock()
}

func (l *Listener) authorizer() Authorizer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.authz
}

// authzCodec wraps a server codec with an Authorizer. net/rpc reads a
// header then its body in one goroutine, so the method of the body being
// read is the last header's; replies are matched to their filter by Seq.
type authzCodec struct {
	rpc.ServerCodec
	authz Authorizer
	peer  Peer

	method string
	seq    uint64

	mu      sync.Mutex
	filters map[uint64]func(any)
}

func (c *authzCodec) ReadRequestHeader(r *rpc.Request) error {
	err := c.ServerCodec.ReadRequestHeader(r)
	c.method, c.seq = r.ServiceMethod, r.Seq
	return err
}

// ReadRequestBody decodes the body and authorizes the call; a refusal is
// answered as the call's error (net/rpc keeps serving the session).
func (c *authzCodec) ReadRequestBody(body any) error {
	if err := c.ServerCodec.ReadRequestBody(body); err != nil {
		return err
	}
	if body == nil {
		// net/rpc discards the body of a call to an unknown method.
		return nil
	}
	filter, err := c.authz(c.method, body, c.peer)
	if err != nil {
		return err
	}
	if filter != nil {
		c.mu.Lock()
		if c.filters == nil {
			c.filters = map[uint64]func(any){}
		}
		c.filters[c.seq] = filter
		c.mu.Unlock()
	}
	return nil
}

func (c *authzCodec) WriteResponse(r *rpc.Response, body any) error {
	c.mu.Lock()
	filter := c.filters[r.Seq]
	delete(c.filters, r.Seq)
	c.mu.Unlock()
	if filter != nil && r.Error == "" {
		filter(body)
	}
	return c.ServerCodec.WriteResponse(r, body)
}

// serveRPCAs serves one net/rpc session on c, authorizing each call when
// an Authorizer is set.
func (l *Listener) serveRPCAs(c io.ReadWriteCloser, peer Peer) {
	var codec rpc.ServerCodec = newContextCodec(NewServerCodec(bufferedConn(c)))
	if fn := l.authorizer(); fn != nil {
		codec = &authzCodec{ServerCodec: codec, authz: fn, peer: peer}
	}
	l.srv.ServeCodec(codec)
}
