package structs

import "github.com/hashicorp/go-msgpack/v2/codec"

// By default go-msgpack honours `json:"-"` tags, so fields hidden from the
// HTTP API (Node.SecretID, Node.LastMissedHeartbeatIndex,
// Node.LastAllocUpdateIndex, Evaluation.LeaderACL, TaskState.TaskHandle)
// silently vanished from Raft entries, snapshots and RPC bodies: a node
// registered through Raft had no SecretID in state. Internal encoding reads
// only `codec` tags; JSON for the HTTP API is unaffected.
func init() {
	MsgpackHandle.TypeInfos = codec.NewTypeInfos([]string{"codec"})
	entryHandle.TypeInfos = MsgpackHandle.TypeInfos
}
