// Package rpc owns the agent-to-agent transport: one TCP listener on the RPC
// port whose first byte selects the protocol (net/rpc with msgpack, Raft, or
// a yamux session multiplexing many net/rpc streams, each of them possibly
// inside TLS), the Raft stream layer
// riding on that port, a client connection pool, and in-process calls.
//
// It must never know what the RPCs mean: endpoints are registered by the
// server and the client; this package only moves requests and replies.
package rpc

// Protocol bytes: the first byte a dialer writes on a new connection.
const (
	ProtoRPC       byte = 0x01 // one net/rpc (msgpack) session
	ProtoRaft      byte = 0x02 // handed to the Raft transport
	ProtoMultiplex byte = 0x03 // yamux session; every stream is ProtoRPC
	// ProtoNodeSession: a client agent's session to a server, which the
	// server uses to open streams to the client (internal/reach).
	ProtoNodeSession byte = 0x04
	// ProtoNodeTunnel: a byte pipe to a client agent through the server
	// holding its session (internal/reach).
	ProtoNodeTunnel byte = 0x05
	// ProtoTLS: a TLS handshake follows; inside it the dialer writes one
	// of the bytes above (tls.go).
	ProtoTLS byte = 0x06
)
