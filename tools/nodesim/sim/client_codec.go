package sim

import (
	"bufio"
	"io"
	"net/rpc"

	drpc "github.com/drover-project/drover/internal/rpc"
)

// readBufferSize is the read buffer of a pool's stream: internal/rpc's.
const readBufferSize = 16 << 10

// newClientCodec is the net/rpc client codec of nodesim's pools: for now
// internal/rpc's default, over the same read buffer.
func newClientCodec(conn io.ReadWriteCloser) rpc.ClientCodec {
	return drpc.NewClientCodec(bufConn{bufio.NewReaderSize(conn, readBufferSize), conn, conn})
}

type bufConn struct {
	io.Reader
	io.Writer
	io.Closer
}
