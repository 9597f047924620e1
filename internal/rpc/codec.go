package rpc

import (
	"io"
	"net/rpc"
	"sync/atomic"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/structs"
)

// NewServerCodec wraps a connection for net/rpc serving with msgpack.
func NewServerCodec(conn io.ReadWriteCloser) rpc.ServerCodec {
	c := &serverCodec{}
	c.ServerCodec = codec.GoRpc.ServerCodec(closeFlagConn{conn, &c.closed}, structs.MsgpackHandle)
	return c
}

// NewClientCodec wraps a connection for net/rpc calls with msgpack.
func NewClientCodec(conn io.ReadWriteCloser) rpc.ClientCodec {
	c := &clientCodec{}
	c.ClientCodec = codec.GoRpc.ClientCodec(closeFlagConn{conn, &c.closed}, structs.MsgpackHandle)
	return c
}

// go-msgpack's net/rpc codecs answer every read after their connection was
// closed with what the Close returned: nil, when closing succeeded. net/rpc
// reads in a loop until a read fails (a client's reader of answers, a
// server's of requests), so a loop that read once more after a Close spun
// forever: a client's pending calls never returned (a server shutting down
// then waited on its forwarding workers for good), and a server's loop kept
// answering ill-formed requests. The codecs here fail every read after the
// connection was closed — by net/rpc, or by go-msgpack itself after a failed
// write — with io.EOF, which ends both loops.

type clientCodec struct {
	rpc.ClientCodec
	closed atomic.Bool
}

func (c *clientCodec) ReadResponseHeader(r *rpc.Response) error {
	return afterClose(&c.closed, c.ClientCodec.ReadResponseHeader(r))
}

func (c *clientCodec) ReadResponseBody(body any) error {
	return afterClose(&c.closed, c.ClientCodec.ReadResponseBody(body))
}

type serverCodec struct {
	rpc.ServerCodec
	closed atomic.Bool
}

func (c *serverCodec) ReadRequestHeader(r *rpc.Request) error {
	return afterClose(&c.closed, c.ServerCodec.ReadRequestHeader(r))
}

func (c *serverCodec) ReadRequestBody(body any) error {
	return afterClose(&c.closed, c.ServerCodec.ReadRequestBody(body))
}

// closeFlagConn sets closed before it closes the connection, so a read the
// Close cut short, or one begun after it, sees the flag.
type closeFlagConn struct {
	io.ReadWriteCloser
	closed *atomic.Bool
}

func (c closeFlagConn) Close() error {
	c.closed.Store(true)
	return c.ReadWriteCloser.Close()
}

// afterClose is a read's result: err, or io.EOF once the connection was
// closed.
func afterClose(closed *atomic.Bool, err error) error {
	if err == nil && closed.Load() {
		return io.EOF
	}
	return err
}
