package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// Table names. The same strings are the keys of the "index" table.
const (
	tableIndex       = "index"
	tableJobs        = "jobs"
	tableJobVersion  = "job_version"
	tableJobSummary  = "job_summary"
	tableEvals       = "evals"
	tableAllocs      = "allocs"
	tableNodes       = "nodes"
	tableDeployment  = "deployment"
	tableNamespaces  = "namespaces"
	tableRootKeys    = "root_keys"
	tableClusterMeta = "cluster_meta"

	// tableJobSubmission keeps the source a job version was submitted as.
	tableJobSubmission = "job_submission"

	// tableScalingEvent keeps each job's recent scaling events per group.
	tableScalingEvent = "scaling_event"
	// tablePeriodicLaunch keeps the last launch time of each periodic parent.
	tablePeriodicLaunch = "periodic_launch"
)

// IndexEntry is one row of the "index" table: the Raft index of the last
// write to table Key.
type IndexEntry struct {
	Key   string
	Value uint64
}

// nsIDIndex indexes (Namespace, <idField>).
func nsIDIndex(name, idField string, unique bool) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:         name,
		Unique:       unique,
		AllowMissing: !unique,
		Indexer: &memdb.CompoundIndex{
			Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: idField},
			},
		},
	}
}

func idIndex(field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:    "id",
		Unique:  true,
		Indexer: &memdb.StringFieldIndex{Field: field},
	}
}

func fieldIndex(name, field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:         name,
		AllowMissing: true,
		Indexer:      &memdb.StringFieldIndex{Field: field},
	}
}

// allocTerminal is the conditional half of the allocs "node_terminal" index.
func allocTerminal(obj any) (bool, error) {
	a, ok := obj.(*structs.Allocation)
	if !ok {
		return false, fmt.Errorf("state: node_terminal index on %T", obj)
	}
	return a.TerminalStatus(), nil
}

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		tableIndex: {
			Name:    tableIndex,
			Indexes: map[string]*memdb.IndexSchema{"id": idIndex("Key")},
		},
		tableJobs: {
			Name: tableJobs,
			Indexes: map[string]*memdb.IndexSchema{
				"id":        nsIDIndex("id", "ID", true),
				"namespace": fieldIndex("namespace", "Namespace"),
			},
		},
		tableJobVersion: {
			Name: tableJobVersion,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {
					Name:   "id",
					Unique: true,
					Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
						&memdb.StringFieldIndex{Field: "Namespace"},
						&memdb.StringFieldIndex{Field: "ID"},
						&memdb.UintFieldIndex{Field: "Version"},
					}},
				},
			},
		},
		tableJobSubmission: {
			Name: tableJobSubmission,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {
					Name:   "id",
					Unique: true,
					Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
						&memdb.StringFieldIndex{Field: "Namespace"},
						&memdb.StringFieldIndex{Field: "JobID"},
						&memdb.UintFieldIndex{Field: "Version"},
					}},
				},
			},
		},
		tableScalingEvent: {
			Name:    tableScalingEvent,
			Indexes: map[string]*memdb.IndexSchema{"id": nsIDIndex("id", "JobID", true)},
		},
		tablePeriodicLaunch: {
			Name:    tablePeriodicLaunch,
			Indexes: map[string]*memdb.IndexSchema{"id": nsIDIndex("id", "ID", true)},
		},
		tableJobSummary: {
			Name:    tableJobSummary,
			Indexes: map[string]*memdb.IndexSchema{"id": nsIDIndex("id", "JobID", true)},
		},
		tableEvals: {
			Name: tableEvals,
			Indexes: map[string]*memdb.IndexSchema{
				"id":  idIndex("ID"),
				"job": nsIDIndex("job", "JobID", false),
			},
		},
		// Every alloc write (placement, stop, client update) rewrites each
		// of these indexes, so each must earn its keep: a node's allocs are
		// read through node_terminal's NodeID prefix (no separate "node"
		// index), an eval's allocs are filtered from its job's, and nothing
		// reads allocs by deployment.
		tableAllocs: {
			Name: tableAllocs,
			Indexes: map[string]*memdb.IndexSchema{
				"id": idIndex("ID"),
				"node_terminal": {
					Name:         "node_terminal",
					AllowMissing: true,
					Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
						&memdb.StringFieldIndex{Field: "NodeID"},
						&memdb.ConditionalIndex{Conditional: allocTerminal},
					}},
				},
				"job": nsIDIndex("job", "JobID", false),
			},
		},
		tableNodes: {
			Name: tableNodes,
			Indexes: map[string]*memdb.IndexSchema{
				"id": idIndex("ID"),
				"secret_id": {
					Name:         "secret_id",
					Unique:       true,
					AllowMissing: true,
					Indexer:      &memdb.StringFieldIndex{Field: "SecretID"},
				},
			},
		},
		tableDeployment: {
			Name: tableDeployment,
			Indexes: map[string]*memdb.IndexSchema{
				"id":  idIndex("ID"),
				"job": nsIDIndex("job", "JobID", false),
			},
		},
		tableNamespaces: {
			Name:    tableNamespaces,
			Indexes: map[string]*memdb.IndexSchema{"id": idIndex("Name")},
		},
		tableRootKeys: {
			Name:    tableRootKeys,
			Indexes: map[string]*memdb.IndexSchema{"id": idIndex("KeyID")},
		},
		tableClusterMeta: {
			Name: tableClusterMeta,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {
					Name:    "id",
					Unique:  true,
					Indexer: &memdb.ConditionalIndex{Conditional: func(any) (bool, error) { return true, nil }},
				},
			},
		},
	}}
}
