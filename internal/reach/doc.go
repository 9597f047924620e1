// Package reach owns reaching a client agent's HTTP API from any agent,
// as Nomad's reverse RPC does: each client agent keeps a session to one
// server (a connection the client dials, so clients behind NAT or a
// firewall stay reachable), the server records which node holds it, and
// any agent opens a byte pipe to a node through the server holding its
// session. The agent's HTTP API is served on that pipe, so every
// /v1/client/... request (file streams, log follows, exec websockets)
// reaches the allocation's node unchanged and streams both ways.
//
// Wire (after the protocol byte on the RPC port, see internal/rpc):
//
//	ProtoNodeSession: client -> {"NodeID","SecretID"}\n
//	                  server -> {"Error"}\n, then a yamux session whose
//	                  streams the server opens and the client accepts.
//	ProtoNodeTunnel:  dialer -> {"NodeID","Search"}\n
//	                  server -> {"Error"}\n, then the raw bytes of one
//	                  stream to the node. Search asks the server to try the
//	                  other servers when it holds no session for the node
//	                  (a server asked by another server never searches, so
//	                  a request cannot loop).
//
// The secret in the hello is the node's SecretID, checked against the
// servers' state, so no one else can claim a node's session.
package reach
