package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/rpc"
)

// A call with a context runs on a stream of its own (taken from a few
// idle ones kept per server, or opened), so that giving up on it (its
// deadline passed, its caller went away) closes only that stream. The
// server gives every request it reads on a stream the stream's context,
// cancelled when the stream closes: a blocking query the caller gave up on
// ends on the server too, instead of waiting out its index or wait time.

// maxIdleStreams bounds the idle per-call streams kept per server.
const maxIdleStreams = 64

// ErrCallTimeout is a call sent to a server that did not answer within
// the call's deadline. The call may still run there: for a write, the
// outcome is unknown.
var ErrCallTimeout = errors.New("rpc: the server did not answer in time")

// CallContext invokes method on the server at addr and gives up when ctx
// is done: it then answers ctx's error (ErrCallTimeout, wrapped, for a
// deadline), and the server sees the call's stream close. A context that
// can never be done makes it Call. A new session to addr is dialled for
// the region ctx names (WithRegion).
func (p *Pool) CallContext(ctx context.Context, addr, method string, args, reply any) error {
	if ctx.Done() == nil {
		return p.call(addr, regionOf(ctx), method, args, reply)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := p.get(addr, regionOf(ctx))
	if err != nil {
		return &ConnectError{Addr: addr, Err: err}
	}
	for {
		client, reused, err := p.stream(c)
		if err != nil {
			p.drop(addr, c)
			return &ConnectError{Addr: addr, Err: err}
		}
		call := client.Go(method, args, reply, make(chan *rpc.Call, 1))
		select {
		case <-call.Done:
		case <-ctx.Done():
			client.Close()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w: %s to %s", ErrCallTimeout, method, addr)
			}
			return ctx.Err()
		}
		err = call.Error
		if reused && errors.Is(err, rpc.ErrShutdown) {
			// An idle stream that ended meanwhile: net/rpc refused the
			// call without sending it. Take the next one (or a new
			// stream: the idle ones run out).
			client.Close()
			continue
		}
		if err != nil && unsent(err) {
			client.Close()
			p.drop(addr, c)
			return &ConnectError{Addr: addr, Err: err} // never whole at the server, as in Call
		}
		if err != nil && isTransport(err) {
			client.Close()
			return err
		}
		p.idle(c, client)
		return err
	}
}

// stream takes an idle per-call client of c or opens a stream for one.
func (p *Pool) stream(c *poolConn) (*rpc.Client, bool, error) {
	p.mu.Lock()
	if n := len(c.idle); n > 0 {
		cl := c.idle[n-1]
		c.idle = c.idle[:n-1]
		p.mu.Unlock()
		return cl, true, nil
	}
	p.mu.Unlock()
	s, err := c.sess.Open()
	if err != nil {
		return nil, false, err
	}
	return rpc.NewClientWithCodec(p.codec(s)), false, nil
}

// idle keeps cl for the next call with a context, or closes it.
func (p *Pool) idle(c *poolConn, cl *rpc.Client) {
	p.mu.Lock()
	if len(c.idle) < maxIdleStreams && !c.sess.IsClosed() && !p.closed {
		c.idle = append(c.idle, cl)
		cl = nil
	}
	p.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}

// contextCodec gives each request read on one stream that stream's
// context (when the request carries one: every read's QueryOptions),
// cancelled when the stream's reads end (the caller closed it, or the
// session died) or the codec closes.
type contextCodec struct {
	rpc.ServerCodec
	ctx    context.Context
	cancel context.CancelFunc
}

func newContextCodec(inner rpc.ServerCodec) *contextCodec {
	ctx, cancel := context.WithCancel(context.Background())
	return &contextCodec{ServerCodec: inner, ctx: ctx, cancel: cancel}
}

func (c *contextCodec) ReadRequestHeader(r *rpc.Request) error {
	err := c.ServerCodec.ReadRequestHeader(r)
	if err != nil {
		c.cancel()
	}
	return err
}

func (c *contextCodec) ReadRequestBody(body any) error {
	err := c.ServerCodec.ReadRequestBody(body)
	if cc, ok := body.(interface{ WithContext(context.Context) }); ok && err == nil {
		cc.WithContext(c.ctx)
	}
	return err
}

func (c *contextCodec) Close() error {
	c.cancel()
	return c.ServerCodec.Close()
}
