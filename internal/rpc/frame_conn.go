package rpc

import (
	"encoding/binary"
	"io"
	"net"
)

// frameConn is the connection a yamux session writes to. yamux's send loop
// writes every data frame as two calls, the 12-byte header and then the
// body: two syscalls, two TCP segments (no Nagle delay on our sockets) and
// often two wakeups of the reader. frameConn keeps back the header of a
// data frame that announces a body and sends it with that body in one
// vectored write.
//
// It relies on what yamux (v0.1.x) guarantees: one goroutine (the send
// loop) writes, and a data frame header whose length field is non-zero is
// followed at once by a body write of that length. Any other write sends a
// header still kept back first, in the same system call, so bytes are never
// reordered or lost; a header is only ever kept back between those two
// writes.
type frameConn struct {
	net.Conn
	out     io.Writer // the conn; net.Buffers uses writev on a *net.TCPConn
	hdr     [yamuxHeaderSize]byte
	pending bool
	bufs    net.Buffers
}

// yamuxHeaderSize is the size of a yamux frame header: version, type,
// flags (2), stream ID (4), length (4).
const yamuxHeaderSize = 12

// yamuxTypeData is the frame type of data frames.
const yamuxTypeData = 0

func newFrameConn(c net.Conn) *frameConn {
	// Only a bare TCP socket takes the vectored write; any other conn
	// (a TLS one, say) gets the two parts as consecutive writes.
	return &frameConn{Conn: c, out: c}
}

func (f *frameConn) Write(p []byte) (int, error) {
	if !f.pending && len(p) == yamuxHeaderSize && p[1] == yamuxTypeData && binary.BigEndian.Uint32(p[8:]) > 0 {
		copy(f.hdr[:], p)
		f.pending = true
		return len(p), nil
	}
	if !f.pending {
		return f.out.Write(p)
	}
	f.pending = false
	f.bufs = append(f.bufs[:0], f.hdr[:], p)
	bufs := f.bufs // WriteTo consumes the slice it is called on
	n, err := bufs.WriteTo(f.out)
	f.bufs[0], f.bufs[1] = nil, nil
	body := int(n) - yamuxHeaderSize
	if body < 0 {
		body = 0
	}
	if err == nil && body < len(p) {
		err = io.ErrShortWrite
	}
	return body, err
}
