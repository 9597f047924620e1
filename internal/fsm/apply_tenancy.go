package fsm

import "github.com/drover-project/drover/internal/structs"

// Namespace deletes and node pool writes. The store refuses a delete that
// would orphan jobs or nodes (it re-checks what the server checked before
// the entry), so every server refuses the same entry the same way.

func (f *FSM) applyNamespaceDelete(buf []byte, index uint64) error {
	var req structs.NamespaceDeleteRequest
	if err := decode(buf, &req, "namespace delete"); err != nil {
		return err
	}
	return f.State().DeleteNamespaces(index, req.Namespaces)
}

func (f *FSM) applyNodePoolUpsert(buf []byte, index uint64) error {
	var req structs.NodePoolUpsertRequest
	if err := decode(buf, &req, "node pool upsert"); err != nil {
		return err
	}
	return f.State().UpsertNodePools(index, req.NodePools)
}

func (f *FSM) applyNodePoolDelete(buf []byte, index uint64) error {
	var req structs.NodePoolDeleteRequest
	if err := decode(buf, &req, "node pool delete"); err != nil {
		return err
	}
	return f.State().DeleteNodePools(index, req.Names)
}
