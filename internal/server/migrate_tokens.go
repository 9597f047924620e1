package server

import (
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// migrateTokens are the tokens with which nodeID may fetch the previous
// allocations' directories of its changed allocations from the nodes that
// ran them (ephemeral_disk migrate), by the new allocation's ID. Nil when
// none is needed.
func migrateTokens(st *state.StateStore, nodeID string, changed []*structs.Allocation) map[string]string {
	var out map[string]string
	for _, a := range changed {
		if a.PreviousAllocation == "" || a.Job == nil || a.TerminalStatus() {
			continue
		}
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil || tg.EphemeralDisk == nil || !tg.EphemeralDisk.Migrate {
			continue
		}
		prev, err := st.AllocByID(nil, a.PreviousAllocation)
		if err != nil || prev == nil || prev.NodeID == "" || prev.NodeID == nodeID {
			continue
		}
		node, err := st.NodeByID(nil, prev.NodeID)
		if err != nil || node == nil || node.SecretID == "" {
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[a.ID] = structs.MigrateToken(prev.ID, node.SecretID)
	}
	return out
}
