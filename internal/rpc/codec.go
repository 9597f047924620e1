package rpc

import (
	"io"
	"net/rpc"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/structs"
)

// NewServerCodec wraps a connection for net/rpc serving with msgpack.
func NewServerCodec(conn io.ReadWriteCloser) rpc.ServerCodec {
	return codec.GoRpc.ServerCodec(conn, structs.MsgpackHandle)
}

// NewClientCodec wraps a connection for net/rpc calls with msgpack.
func NewClientCodec(conn io.ReadWriteCloser) rpc.ClientCodec {
	return codec.GoRpc.ClientCodec(conn, structs.MsgpackHandle)
}
