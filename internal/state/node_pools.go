package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// NodePoolByName returns a node pool, or nil.
func (s *reader) NodePoolByName(ws memdb.WatchSet, name string) (*structs.NodePool, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableNodePools, "id", name)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.NodePool), nil
}

// NodePools iterates every node pool in name order.
func (s *reader) NodePools(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableNodePools, "id")
}

// UpsertNodePools inserts or replaces node pools, keeping each existing
// pool's CreateIndex. The server refuses changes to the built-in pools
// before the entry; the store takes what the entry says.
func (s *StateStore) UpsertNodePools(index uint64, pools []*structs.NodePool) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, in := range pools {
		if in == nil || in.Name == "" {
			return fmt.Errorf("state: upsert node pool: missing node pool or name")
		}
		p := in.Copy()
		raw, err := txn.First(tableNodePools, "id", p.Name)
		if err != nil {
			return fmt.Errorf("state: node pool lookup: %w", err)
		}
		p.CreateIndex = index
		if raw != nil {
			p.CreateIndex = raw.(*structs.NodePool).CreateIndex
		}
		p.ModifyIndex = index
		if err := txn.Insert(tableNodePools, p); err != nil {
			return fmt.Errorf("state: node pool insert: %w", err)
		}
	}
	if err := bumpIndex(txn, index, tableNodePools); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// DeleteNodePools deletes node pools by name. It refuses (deleting none) a
// built-in pool, a pool that does not exist, a pool that still has nodes or
// jobs and the default pool of a namespace: the entry is checked here as well as
// by the server so a node registering between the check and the entry
// cannot be left in a missing pool.
func (s *StateStore) DeleteNodePools(index uint64, names []string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, name := range names {
		if err := nodePoolDeletable(txn, name); err != nil {
			return err
		}
		if _, err := txn.DeleteAll(tableNodePools, "id", name); err != nil {
			return fmt.Errorf("state: node pool delete: %w", err)
		}
	}
	if err := bumpIndex(txn, index, tableNodePools); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// NodePoolDeletable says why pool name cannot be deleted (a coded 400 or
// 404), or nil.
func (s *reader) NodePoolDeletable(name string) error {
	txn := s.db.Txn(false)
	defer txn.Abort()
	return nodePoolDeletable(txn, name)
}

func nodePoolDeletable(txn *memdb.Txn, name string) error {
	if structs.IsBuiltinNodePool(name) {
		return structs.NewErrCoded(400, "built-in node pool %q cannot be deleted", name)
	}
	raw, err := txn.First(tableNodePools, "id", name)
	if err != nil {
		return fmt.Errorf("state: node pool lookup: %w", err)
	}
	if raw == nil {
		return structs.NewErrCoded(404, "node pool %q not found", name)
	}
	nodes, err := txn.Get(tableNodes, "id")
	if err != nil {
		return fmt.Errorf("state: node lookup: %w", err)
	}
	var nodeCount int
	for r := nodes.Next(); r != nil; r = nodes.Next() {
		if r.(*structs.Node).NodePool == name {
			nodeCount++
		}
	}
	if nodeCount > 0 {
		return structs.NewErrCoded(400, "node pool %q has %d node(s) in it", name, nodeCount)
	}
	jobs, err := txn.Get(tableJobs, "id")
	if err != nil {
		return fmt.Errorf("state: job lookup: %w", err)
	}
	var jobCount int
	for r := jobs.Next(); r != nil; r = jobs.Next() {
		if r.(*structs.Job).NodePool == name {
			jobCount++
		}
	}
	if jobCount > 0 {
		return structs.NewErrCoded(400, "node pool %q has %d job(s) in it", name, jobCount)
	}
	nss, err := txn.Get(tableNamespaces, "id")
	if err != nil {
		return fmt.Errorf("state: namespace lookup: %w", err)
	}
	for r := nss.Next(); r != nil; r = nss.Next() {
		if ns := r.(*structs.Namespace); ns.NodePoolConfiguration != nil && ns.NodePoolConfiguration.Default == name {
			return structs.NewErrCoded(400, "node pool %q is the default node pool of namespace %q", name, ns.Name)
		}
	}
	return nil
}

// ensureNodePool creates pool (with no description) if it does not exist.
func ensureNodePool(txn *memdb.Txn, index uint64, pool string) error {
	if pool == "" || pool == structs.AllNodePool {
		return nil
	}
	raw, err := txn.First(tableNodePools, "id", pool)
	if err != nil {
		return fmt.Errorf("state: node pool lookup: %w", err)
	}
	if raw != nil {
		return nil
	}
	if err := txn.Insert(tableNodePools, &structs.NodePool{Name: pool, CreateIndex: index, ModifyIndex: index}); err != nil {
		return fmt.Errorf("state: node pool insert: %w", err)
	}
	return bumpIndex(txn, index, tableNodePools)
}

// NodePoolRestore loads a node pool.
func (r *StateRestore) NodePoolRestore(p *structs.NodePool) error {
	return r.insert(tableNodePools, p)
}
