package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// tableSchedulerConfig holds the one scheduler configuration row.
const tableSchedulerConfig = "scheduler_config"

func schedulerConfigTable() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableSchedulerConfig,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {
				Name:    "id",
				Unique:  true,
				Indexer: &memdb.ConditionalIndex{Conditional: func(any) (bool, error) { return true, nil }},
			},
		},
	}
}

// SchedulerConfig returns the stored scheduler configuration, or nil before
// the first leader wrote one. The caller must not modify it.
func (s *reader) SchedulerConfig(ws memdb.WatchSet) (*structs.SchedulerConfiguration, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableSchedulerConfig, "id", true)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.SchedulerConfiguration), nil
}

// SetSchedulerConfig stores cfg as the scheduler configuration. With cas,
// it writes only when the stored ModifyIndex equals cfg.ModifyIndex (0: only
// when none is stored) and reports whether it wrote.
func (s *StateStore) SetSchedulerConfig(index uint64, cfg *structs.SchedulerConfiguration, cas bool) (bool, error) {
	if cfg == nil {
		return false, fmt.Errorf("state: set scheduler config: missing configuration")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableSchedulerConfig, "id", true)
	if err != nil {
		return false, fmt.Errorf("state: scheduler config lookup: %w", err)
	}
	c := *cfg
	c.CreateIndex, c.ModifyIndex = index, index
	if raw != nil {
		ex := raw.(*structs.SchedulerConfiguration)
		if cas && ex.ModifyIndex != cfg.ModifyIndex {
			return false, nil
		}
		c.CreateIndex = ex.CreateIndex
	} else if cas && cfg.ModifyIndex != 0 {
		return false, nil
	}
	if err := txn.Insert(tableSchedulerConfig, &c); err != nil {
		return false, fmt.Errorf("state: scheduler config insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableSchedulerConfig); err != nil {
		return false, err
	}
	txn.Commit()
	return true, nil
}

// SchedulerConfigRestore loads the scheduler configuration.
func (r *StateRestore) SchedulerConfigRestore(c *structs.SchedulerConfiguration) error {
	return r.insert(tableSchedulerConfig, c)
}
