package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// tableAutopilotConfig holds the one autopilot configuration row.
const tableAutopilotConfig = "autopilot_config"

func autopilotConfigTable() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableAutopilotConfig,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {
				Name:    "id",
				Unique:  true,
				Indexer: &memdb.ConditionalIndex{Conditional: func(any) (bool, error) { return true, nil }},
			},
		},
	}
}

// AutopilotConfig returns the stored autopilot configuration, or nil before
// the first leader wrote one. The caller must not modify it.
func (s *reader) AutopilotConfig(ws memdb.WatchSet) (*structs.AutopilotConfig, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableAutopilotConfig, "id", true)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.AutopilotConfig), nil
}

// SetAutopilotConfig stores cfg. With cas, it writes only when the stored
// ModifyIndex equals cfg.ModifyIndex (0: only when none is stored) and
// reports whether it wrote.
func (s *StateStore) SetAutopilotConfig(index uint64, cfg *structs.AutopilotConfig, cas bool) (bool, error) {
	if cfg == nil {
		return false, fmt.Errorf("state: set autopilot config: missing configuration")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableAutopilotConfig, "id", true)
	if err != nil {
		return false, fmt.Errorf("state: autopilot config lookup: %w", err)
	}
	c := *cfg
	c.CreateIndex, c.ModifyIndex = index, index
	if raw != nil {
		ex := raw.(*structs.AutopilotConfig)
		if cas && ex.ModifyIndex != cfg.ModifyIndex {
			return false, nil
		}
		c.CreateIndex = ex.CreateIndex
	} else if cas && cfg.ModifyIndex != 0 {
		return false, nil
	}
	if err := txn.Insert(tableAutopilotConfig, &c); err != nil {
		return false, fmt.Errorf("state: autopilot config insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableAutopilotConfig); err != nil {
		return false, err
	}
	txn.Commit()
	return true, nil
}

// AutopilotConfigRestore loads the autopilot configuration.
func (r *StateRestore) AutopilotConfigRestore(c *structs.AutopilotConfig) error {
	return r.insert(tableAutopilotConfig, c)
}
