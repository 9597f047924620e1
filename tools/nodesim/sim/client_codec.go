package sim

import (
	"bufio"
	"io"
	"net/rpc"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/structs"
)

// clientCodec is the net/rpc client codec of nodesim's pools. Requests are
// written as internal/rpc's client codec writes them (go-msgpack with
// structs.MsgpackHandle: the request header, then the body, flushed), so
// servers see a real client. Answers are read from clientCodec's own read
// buffer: response headers and the lean answers (leanAnswer) with an
// mpReader, which is most of nodesim's decoding; any other answer with
// go-msgpack, from the same buffer.
//
// net/rpc writes requests under its own lock and reads answers from one
// goroutine, so the writing and the reading halves need no locking.
type clientCodec struct {
	conn io.ReadWriteCloser

	w   *bufio.Writer
	enc *codec.Encoder

	br  *bufio.Reader
	mp  *mpReader
	dec *codec.Decoder // other answers; reset before each, as mp reads in between
}

// readBufferSize is the read buffer of a pool's stream: internal/rpc's.
const readBufferSize = 16 << 10

func newClientCodec(conn io.ReadWriteCloser) rpc.ClientCodec {
	w := bufio.NewWriter(conn)
	br := bufio.NewReaderSize(conn, readBufferSize)
	return &clientCodec{
		conn: conn,
		w:    w, enc: codec.NewEncoder(w, structs.MsgpackHandle),
		br: br, mp: newMPReader(br), dec: codec.NewDecoder(br, structs.MsgpackHandle),
	}
}

func (c *clientCodec) WriteRequest(r *rpc.Request, body any) error {
	err := c.enc.Encode(r)
	if err == nil {
		err = c.enc.Encode(body)
	}
	if ferr := c.w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// ReadResponseHeader decodes an rpc.Response as go-msgpack does: a map of
// its fields by name.
func (c *clientCodec) ReadResponseHeader(resp *rpc.Response) error {
	r := c.mp
	r.reset()
	if !r.fields(func(key []byte) bool {
		switch string(key) {
		case "ServiceMethod":
			resp.ServiceMethod = r.readShared()
		case "Seq":
			resp.Seq = r.readUint()
		case "Error":
			resp.Error = r.readString()
		default:
			return false
		}
		return true
	}) && r.ok() && r.err == nil {
		*resp = rpc.Response{} // nil: go-msgpack zeroes the value
	}
	return r.done()
}

// ReadResponseBody decodes an answer into body; a nil body (the answer to a
// failed call) is skipped.
func (c *clientCodec) ReadResponseBody(body any) error {
	switch b := body.(type) {
	case nil:
		c.mp.reset()
		c.mp.skip()
		return c.mp.done()
	case leanAnswer:
		c.mp.reset()
		b.decodeMsgpack(c.mp)
		return c.mp.done()
	}
	if c.mp.ioErr != nil {
		return c.mp.ioErr
	}
	c.dec.Reset(c.br)
	return c.dec.Decode(body)
}

func (c *clientCodec) Close() error { return c.conn.Close() }
