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

// The types that make up the client <-> server alloc traffic (Allocation,
// TaskState, Job, TaskGroup, Task) carry a `_struct` field tagged
// `codec:",omitempty"`, which makes msgpack leave out every zero field. A
// client's status update fills a handful of an Allocation's thirty fields and
// every alloc a client fetches carries its job, so this roughly quarters
// those bodies and their encode/decode cost, in RPCs and Raft entries alike.
// Decoding is unchanged: an absent field decodes as its zero value, and data
// written before (every field present) decodes as before. JSON ignores the
// field.
