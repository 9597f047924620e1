package rpc

import (
	"bufio"
	"io"
	"net/rpc"
	"sync/atomic"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/msgpackframe"
	"github.com/drover-project/drover/internal/structs"
)

// NewServerCodec wraps a connection for net/rpc serving with msgpack.
func NewServerCodec(conn io.ReadWriteCloser) rpc.ServerCodec {
	c := &serverCodec{}
	c.ServerCodec = newMsgpackCodec(closeFlagConn{conn, &c.closed}, true)
	return c
}

// NewClientCodec wraps a connection for net/rpc calls with msgpack.
func NewClientCodec(conn io.ReadWriteCloser) rpc.ClientCodec {
	c := &clientCodec{}
	c.ClientCodec = newMsgpackCodec(closeFlagConn{conn, &c.closed}, false)
	return c
}

// msgpackCodec is net/rpc's codec on msgpack, on the wire as go-msgpack's
// GoRpc codec: each header and each body one msgpack value, in turn. It
// reads every value whole before decoding it from memory (msgpackframe):
// go-msgpack decoding straight from the connection allocated whatever
// length a header claimed, so six bytes from any peer of the RPC port
// made it allocate 4 GiB. net/rpc reads from one goroutine and serialises
// writes, so the codec needs no lock of its own.
type msgpackCodec struct {
	conn   io.Closer
	r      *bufio.Reader
	w      *bufio.Writer
	enc    *codec.Encoder
	dec    *codec.Decoder
	buf    []byte
	server bool
}

// maxKeptBuffer keeps a rare huge message's read buffer from being held
// for the life of the connection.
const maxKeptBuffer = 1 << 20

func newMsgpackCodec(conn io.ReadWriteCloser, server bool) *msgpackCodec {
	w := bufio.NewWriter(conn)
	return &msgpackCodec{
		conn:   conn,
		r:      bufio.NewReader(conn),
		w:      w,
		enc:    codec.NewEncoder(w, structs.MsgpackHandle),
		dec:    codec.NewDecoderBytes(nil, structs.MsgpackHandle),
		server: server,
	}
}

// read decodes the next value into v, or reads past it when v is nil (a
// body net/rpc discards).
func (c *msgpackCodec) read(v any) error {
	if cap(c.buf) > maxKeptBuffer {
		c.buf = nil
	}
	var err error
	if c.buf, err = msgpackframe.Read(c.r, c.buf[:0]); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	c.dec.ResetBytes(c.buf)
	return c.dec.Decode(v)
}

func (c *msgpackCodec) write(header, body any) error {
	err := c.enc.Encode(header)
	if err == nil {
		err = c.enc.Encode(body)
	}
	if ferr := c.w.Flush(); err == nil {
		err = ferr
	}
	if err != nil && c.server {
		// A response half written leaves the stream unreadable.
		c.conn.Close()
	}
	return err
}

func (c *msgpackCodec) ReadRequestHeader(r *rpc.Request) error        { return c.read(r) }
func (c *msgpackCodec) ReadRequestBody(body any) error                { return c.read(body) }
func (c *msgpackCodec) WriteResponse(r *rpc.Response, body any) error { return c.write(r, body) }
func (c *msgpackCodec) WriteRequest(r *rpc.Request, body any) error   { return c.write(r, body) }
func (c *msgpackCodec) ReadResponseHeader(r *rpc.Response) error      { return c.read(r) }
func (c *msgpackCodec) ReadResponseBody(body any) error               { return c.read(body) }
func (c *msgpackCodec) Close() error                                  { return c.conn.Close() }

// Every read after the codec's connection was closed fails with io.EOF —
// closed by net/rpc, or by the codec after a failed write. net/rpc reads in
// a loop until a read fails (a client's reader of answers, a server's of
// requests); go-msgpack's own codecs answered such reads with nil, and the
// loops spun forever: a client's pending calls never returned (a server
// shutting down then waited on its forwarding workers for good), and a
// server's loop kept answering ill-formed requests. A read of bytes still
// buffered when the connection closed fails the same way.

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
	if closed.Load() {
		return io.EOF
	}
	return err
}
