package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// PeriodicLaunchByID returns the last launch recorded for a periodic parent,
// or nil.
func (s *reader) PeriodicLaunchByID(ws memdb.WatchSet, namespace, id string) (*structs.PeriodicLaunch, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tablePeriodicLaunch, "id", namespace, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.PeriodicLaunch), nil
}

// PeriodicLaunches iterates every recorded launch (used by FSM snapshots).
func (s *reader) PeriodicLaunches(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tablePeriodicLaunch, "id")
}

// UpsertPeriodicLaunch records a parent's latest launch.
func (s *StateStore) UpsertPeriodicLaunch(index uint64, in *structs.PeriodicLaunch) error {
	if in == nil || in.ID == "" {
		return fmt.Errorf("state: upsert periodic launch: missing launch or job ID")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	l := *in
	if l.Namespace == "" {
		l.Namespace = structs.DefaultNamespace
	}
	raw, err := txn.First(tablePeriodicLaunch, "id", l.Namespace, l.ID)
	if err != nil {
		return fmt.Errorf("state: periodic launch lookup: %w", err)
	}
	if raw != nil {
		l.CreateIndex = raw.(*structs.PeriodicLaunch).CreateIndex
	} else {
		l.CreateIndex = index
	}
	l.ModifyIndex = index
	if err := txn.Insert(tablePeriodicLaunch, &l); err != nil {
		return fmt.Errorf("state: periodic launch insert: %w", err)
	}
	if err := bumpIndex(txn, index, tablePeriodicLaunch); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// DeletePeriodicLaunch forgets a parent's launches (the parent was purged).
func (s *StateStore) DeletePeriodicLaunch(index uint64, namespace, id string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	n, err := txn.DeleteAll(tablePeriodicLaunch, "id", namespace, id)
	if err != nil {
		return fmt.Errorf("state: periodic launch delete: %w", err)
	}
	if n == 0 {
		return nil
	}
	if err := bumpIndex(txn, index, tablePeriodicLaunch); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// PeriodicLaunchRestore loads a periodic launch.
func (r *StateRestore) PeriodicLaunchRestore(l *structs.PeriodicLaunch) error {
	return r.insert(tablePeriodicLaunch, l)
}
