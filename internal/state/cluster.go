package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// NamespaceByName returns a namespace, or nil.
func (s *reader) NamespaceByName(ws memdb.WatchSet, name string) (*structs.Namespace, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableNamespaces, "id", name)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Namespace), nil
}

// Namespaces iterates every namespace.
func (s *reader) Namespaces(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableNamespaces, "id")
}

// UpsertNamespaces inserts or replaces namespaces.
func (s *StateStore) UpsertNamespaces(index uint64, ns []*structs.Namespace) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, in := range ns {
		if in == nil || in.Name == "" {
			return fmt.Errorf("state: upsert namespace: missing namespace or name")
		}
		n := *in
		raw, err := txn.First(tableNamespaces, "id", n.Name)
		if err != nil {
			return fmt.Errorf("state: namespace lookup: %w", err)
		}
		if raw != nil {
			n.CreateIndex = raw.(*structs.Namespace).CreateIndex
		} else {
			n.CreateIndex = index
		}
		n.ModifyIndex = index
		if err := txn.Insert(tableNamespaces, &n); err != nil {
			return fmt.Errorf("state: namespace insert: %w", err)
		}
	}
	if err := bumpIndex(txn, index, tableNamespaces); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// RootKeys returns every keyring root key.
func (s *reader) RootKeys(ws memdb.WatchSet) ([]*structs.RootKey, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableRootKeys, "id")
	if err != nil {
		return nil, err
	}
	var out []*structs.RootKey
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.RootKey))
	}
	return out, nil
}

// UpsertRootKey inserts or replaces a keyring root key.
func (s *StateStore) UpsertRootKey(index uint64, in *structs.RootKey) error {
	if in == nil || in.KeyID == "" {
		return fmt.Errorf("state: upsert root key: missing key or key ID")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	k := *in
	raw, err := txn.First(tableRootKeys, "id", k.KeyID)
	if err != nil {
		return fmt.Errorf("state: root key lookup: %w", err)
	}
	if raw != nil {
		k.CreateIndex = raw.(*structs.RootKey).CreateIndex
	} else {
		k.CreateIndex = index
	}
	k.ModifyIndex = index
	if err := txn.Insert(tableRootKeys, &k); err != nil {
		return fmt.Errorf("state: root key insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableRootKeys); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// ClusterMetadata returns the cluster's metadata, or nil before the first
// leader wrote it.
func (s *reader) ClusterMetadata(ws memdb.WatchSet) (*structs.ClusterMetadata, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableClusterMeta, "id", true)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ClusterMetadata), nil
}

// SetClusterMetadata records the cluster's identity. It is written once:
// writing the same ClusterID again is a no-op, a different one an error.
func (s *StateStore) SetClusterMetadata(index uint64, meta *structs.ClusterMetadata) error {
	if meta == nil || meta.ClusterID == "" {
		return fmt.Errorf("state: set cluster metadata: missing cluster ID")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableClusterMeta, "id", true)
	if err != nil {
		return fmt.Errorf("state: cluster metadata lookup: %w", err)
	}
	if raw != nil {
		if ex := raw.(*structs.ClusterMetadata); ex.ClusterID != meta.ClusterID {
			return fmt.Errorf("cluster ID already set to %q, refusing %q", ex.ClusterID, meta.ClusterID)
		}
		return nil
	}
	m := *meta
	if err := txn.Insert(tableClusterMeta, &m); err != nil {
		return fmt.Errorf("state: cluster metadata insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableClusterMeta); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// DeleteNamespaces deletes namespaces by name. It refuses (deleting none)
// "default", a namespace that does not exist and one that still holds jobs
// or variables (Drover has no volumes). The
// server checks first; the store checks again so a job registered between
// the check and the entry is never left in a missing namespace.
func (s *StateStore) DeleteNamespaces(index uint64, names []string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, name := range names {
		if err := namespaceDeletable(txn, name); err != nil {
			return err
		}
		if _, err := txn.DeleteAll(tableNamespaces, "id", name); err != nil {
			return fmt.Errorf("state: namespace delete: %w", err)
		}
	}
	if err := bumpIndex(txn, index, tableNamespaces); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// NamespaceDeletable says why namespace name cannot be deleted (a coded
// 400 or 404), or nil.
func (s *reader) NamespaceDeletable(name string) error {
	txn := s.db.Txn(false)
	defer txn.Abort()
	return namespaceDeletable(txn, name)
}

func namespaceDeletable(txn *memdb.Txn, name string) error {
	if name == structs.DefaultNamespace {
		return structs.NewErrCoded(400, "default namespace can not be deleted")
	}
	raw, err := txn.First(tableNamespaces, "id", name)
	if err != nil {
		return fmt.Errorf("state: namespace lookup: %w", err)
	}
	if raw == nil {
		return structs.NewErrCoded(404, "namespace %q not found", name)
	}
	jobs, err := txn.Get(tableJobs, "id")
	if err != nil {
		return fmt.Errorf("state: job lookup: %w", err)
	}
	var n int
	for r := jobs.Next(); r != nil; r = jobs.Next() {
		if r.(*structs.Job).Namespace == name {
			n++
		}
	}
	if n > 0 {
		return structs.NewErrCoded(400, "namespace %q has %d job(s) in it; jobs must be purged before the namespace is deleted", name, n)
	}
	vars, err := txn.Get(tableVariables, "id")
	if err != nil {
		return fmt.Errorf("state: variable lookup: %w", err)
	}
	for r := vars.Next(); r != nil; r = vars.Next() {
		if r.(*structs.VariableEncrypted).Namespace == name {
			n++
		}
	}
	if n > 0 {
		return structs.NewErrCoded(400, "namespace %q has %d variable(s) in it; variables must be deleted before the namespace is deleted", name, n)
	}
	return nil
}

// DeleteRootKey removes a root key. The active key is refused (400), an
// unknown one is a 404; the server checks both before the entry too.
func (s *StateStore) DeleteRootKey(index uint64, keyID string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableRootKeys, "id", keyID)
	if err != nil {
		return fmt.Errorf("state: root key lookup: %w", err)
	}
	if raw == nil {
		return structs.NewErrCoded(404, "root key %q not found", keyID)
	}
	if raw.(*structs.RootKey).State == structs.RootKeyStateActive {
		return structs.NewErrCoded(400, "active root key %q cannot be deleted", keyID)
	}
	if err := txn.Delete(tableRootKeys, raw); err != nil {
		return fmt.Errorf("state: root key delete: %w", err)
	}
	if err := bumpIndex(txn, index, tableRootKeys); err != nil {
		return err
	}
	txn.Commit()
	return nil
}
