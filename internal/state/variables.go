package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// tableVariables holds variables, encrypted: the store never sees items.
const tableVariables = "variables"

var (
	varNS   = func(v *structs.VariableEncrypted) string { return v.Namespace }
	varPath = func(v *structs.VariableEncrypted) string { return v.Path }
)

func variablesTable() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name:    tableVariables,
		Indexes: map[string]*memdb.IndexSchema{"id": nsIDIndex("id", nil, varNS, varPath)},
	}
}

// VariableByPath returns a variable or nil.
func (s *reader) VariableByPath(ws memdb.WatchSet, ns, path string) (*structs.VariableEncrypted, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableVariables, "id", ns, path)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.VariableEncrypted), nil
}

// Variables iterates every variable, by namespace then path.
func (s *reader) Variables(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableVariables, "id")
}

// VariablesRestore loads a variable.
func (r *StateRestore) VariableRestore(v *structs.VariableEncrypted) error {
	return r.insert(tableVariables, v)
}

// UpdateVariable applies one variable operation. It decides conflicts (a CAS
// index that is not the current one, a lock held by someone else) the same
// way on every server; a conflict changes nothing and answers the current
// variable.
func (s *StateStore) UpdateVariable(index uint64, req *structs.VarApplyStateRequest) (*structs.VarApplyStateResponse, error) {
	in := req.Var
	if in == nil || in.Path == "" || in.Namespace == "" {
		return nil, fmt.Errorf("state: variable apply: missing variable, path or namespace")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableVariables, "id", in.Namespace, in.Path)
	if err != nil {
		return nil, fmt.Errorf("state: variable lookup: %w", err)
	}
	var cur *structs.VariableEncrypted
	if raw != nil {
		cur = raw.(*structs.VariableEncrypted)
	}
	resp := &structs.VarApplyStateResponse{Op: req.Op, Index: index}
	conflict := func() (*structs.VarApplyStateResponse, error) {
		resp.Result = structs.VarOpResultConflict
		resp.Conflict = cur.Copy()
		return resp, nil
	}
	heldByOther := cur != nil && cur.Lock != nil && (in.Lock == nil || in.Lock.ID != cur.Lock.ID)

	var next *structs.VariableEncrypted
	switch req.Op {
	case structs.VarOpCAS:
		if (cur == nil && in.ModifyIndex != 0) || (cur != nil && cur.ModifyIndex != in.ModifyIndex) {
			return conflict()
		}
		fallthrough
	case structs.VarOpSet:
		if heldByOther {
			return conflict()
		}
		next = in.Copy()
		if cur != nil {
			next.Lock = cur.Lock
		}
	case structs.VarOpDeleteCAS:
		if cur == nil || cur.ModifyIndex != in.ModifyIndex {
			if cur == nil && in.ModifyIndex == 0 {
				resp.Result = structs.VarOpResultOk
				return resp, nil
			}
			return conflict()
		}
		fallthrough
	case structs.VarOpDelete:
		if cur == nil {
			resp.Result = structs.VarOpResultOk
			return resp, nil
		}
		if heldByOther {
			return conflict()
		}
		if _, err := txn.DeleteAll(tableVariables, "id", in.Namespace, in.Path); err != nil {
			return nil, fmt.Errorf("state: variable delete: %w", err)
		}
		if err := bumpIndex(txn, index, tableVariables); err != nil {
			return nil, err
		}
		txn.Commit()
		resp.Result = structs.VarOpResultOk
		return resp, nil
	case structs.VarOpLockAcquire:
		if in.Lock == nil || in.Lock.ID == "" {
			return nil, fmt.Errorf("state: lock acquire without a lock ID")
		}
		if cur != nil && cur.Lock != nil {
			return conflict()
		}
		if cur == nil && len(in.Data) == 0 {
			return nil, structs.NewErrCoded(400, "variable %s does not exist and the lock request carries no items", in.Path)
		}
		next = in.Copy()
		if cur != nil && len(in.Data) == 0 {
			next.Data, next.KeyID = cur.Data, cur.KeyID
		}
	case structs.VarOpLockRelease:
		if cur == nil || cur.Lock == nil || in.Lock == nil || cur.Lock.ID != in.Lock.ID {
			return conflict()
		}
		next = cur.Copy()
		next.Lock = nil
		next.ModifyTime = in.ModifyTime
	default:
		return nil, fmt.Errorf("state: unknown variable operation %q", req.Op)
	}
	next.CreateIndex, next.CreateTime = index, in.ModifyTime
	if cur != nil {
		next.CreateIndex, next.CreateTime = cur.CreateIndex, cur.CreateTime
	}
	next.ModifyIndex = index
	if next.ModifyTime == 0 {
		next.ModifyTime = in.ModifyTime
	}
	if err := txn.Insert(tableVariables, next); err != nil {
		return nil, fmt.Errorf("state: variable insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableVariables); err != nil {
		return nil, err
	}
	txn.Commit()
	resp.Result = structs.VarOpResultOk
	resp.Written = next.Copy()
	return resp, nil
}

// UpdateVariableCiphertexts replaces the ciphertext of variables (re-encrypted by the
// server under the active key) when they have not changed since: an entry
// whose ModifyIndex moved meanwhile is skipped, and the next pass takes it.
func (s *StateStore) UpdateVariableCiphertexts(index uint64, vars []*structs.VariableEncrypted) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, in := range vars {
		if in == nil {
			continue
		}
		raw, err := txn.First(tableVariables, "id", in.Namespace, in.Path)
		if err != nil {
			return fmt.Errorf("state: variable lookup: %w", err)
		}
		if raw == nil || raw.(*structs.VariableEncrypted).ModifyIndex != in.ModifyIndex {
			continue
		}
		next := raw.(*structs.VariableEncrypted).Copy()
		next.Data, next.KeyID = append([]byte(nil), in.Data...), in.KeyID
		if err := txn.Insert(tableVariables, next); err != nil {
			return fmt.Errorf("state: variable insert: %w", err)
		}
	}
	if err := bumpIndex(txn, index, tableVariables); err != nil {
		return err
	}
	txn.Commit()
	return nil
}
