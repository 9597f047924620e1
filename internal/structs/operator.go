package structs

// RaftServer is one server of the Raft configuration, as the operator API
// shows it.
type RaftServer struct {
	ID      string // Raft server ID
	Node    string // the server's name ("<name>.<region>"), or its address when this server does not know it
	Address string // Raft address, host:port
	Leader  bool
	Voter   bool
	// RaftProtocol is the Raft protocol version the server speaks.
	RaftProtocol string
}

// RaftConfigurationResponse is the Raft configuration at Index.
type RaftConfigurationResponse struct {
	Servers []*RaftServer
	Index   uint64
}

// RaftPeerRequest names a server to remove from the Raft configuration,
// by ID or by address (exactly one).
type RaftPeerRequest struct {
	ID      string
	Address string
	WriteRequest
}
