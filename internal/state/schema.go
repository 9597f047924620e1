package state

import (
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
	tableNodePools   = "node_pools"
	tableClusterMeta = "cluster_meta"

	// tableJobSubmission keeps the source a job version was submitted as.
	tableJobSubmission = "job_submission"

	// tableScalingEvent keeps each job's recent scaling events per group.
	tableScalingEvent = "scaling_event"
	// tableScalingPolicy keeps the scaling policies of running jobs.
	tableScalingPolicy = "scaling_policy"
	// tablePeriodicLaunch keeps the last launch time of each periodic parent.
	tablePeriodicLaunch = "periodic_launch"
)

// IndexEntry is one row of the "index" table: the Raft index of the last
// write to table Key.
type IndexEntry struct {
	Key   string
	Value uint64
}

// nsIDIndex indexes (namespace, id) of a table's objects. A non-unique
// index names the table's primary key (see compoundKey); a unique one
// passes nil.
func nsIDIndex[T any](name string, primary func(*T) string, ns, id func(*T) string) *memdb.IndexSchema {
	unique := primary == nil
	return &memdb.IndexSchema{
		Name:         name,
		Unique:       unique,
		AllowMissing: !unique,
		Indexer:      newCompoundKey(name, primary, nil, field(name+".namespace", ns), field(name+".id", id)),
	}
}

// nsIDVersionIndex indexes (namespace, id, Version) of job versions and
// their submissions.
func nsIDVersionIndex[T any](ns, id func(*T) string) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:   "id",
		Unique: true,
		Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
			field("id.namespace", ns), field("id.id", id), &memdb.UintFieldIndex{Field: "Version"},
		}},
	}
}

func idIndex[T any](id func(*T) string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: field("id", id)}
}

// The string fields the tables are indexed by.
var (
	allocID       = func(a *structs.Allocation) string { return a.ID }
	allocNode     = func(a *structs.Allocation) string { return a.NodeID }
	allocNS       = func(a *structs.Allocation) string { return a.Namespace }
	allocJob      = func(a *structs.Allocation) string { return a.JobID }
	evalID        = func(e *structs.Evaluation) string { return e.ID }
	evalNS        = func(e *structs.Evaluation) string { return e.Namespace }
	evalJob       = func(e *structs.Evaluation) string { return e.JobID }
	jobNS         = func(j *structs.Job) string { return j.Namespace }
	jobID         = func(j *structs.Job) string { return j.ID }
	nodeID        = func(n *structs.Node) string { return n.ID }
	nodeSecret    = func(n *structs.Node) string { return n.SecretID }
	deploymentID  = func(d *structs.Deployment) string { return d.ID }
	deploymentNS  = func(d *structs.Deployment) string { return d.Namespace }
	deploymentJob = func(d *structs.Deployment) string { return d.JobID }
	summaryNS     = func(s *structs.JobSummary) string { return s.Namespace }
	summaryJob    = func(s *structs.JobSummary) string { return s.JobID }
	submissionNS  = func(s *structs.JobSubmission) string { return s.Namespace }
	submissionJob = func(s *structs.JobSubmission) string { return s.JobID }
	scalingNS     = func(e *structs.JobScalingEvents) string { return e.Namespace }
	scalingJob    = func(e *structs.JobScalingEvents) string { return e.JobID }
	policyID      = func(p *structs.ScalingPolicy) string { return p.ID }
	policyNS      = func(p *structs.ScalingPolicy) string { return p.Namespace }
	policyJob     = func(p *structs.ScalingPolicy) string { return p.Target[structs.ScalingTargetJob] }
	launchNS      = func(l *structs.PeriodicLaunch) string { return l.Namespace }
	launchID      = func(l *structs.PeriodicLaunch) string { return l.ID }
	namespaceName = func(n *structs.Namespace) string { return n.Name }
	rootKeyID     = func(k *structs.RootKey) string { return k.KeyID }
	nodePoolName  = func(p *structs.NodePool) string { return p.Name }
	indexEntryKey = func(e *IndexEntry) string { return e.Key }
)

// allocTerminal is the conditional half of the allocs "node_terminal" index.
func allocTerminal(a *structs.Allocation) bool { return a.TerminalStatus() }

func schema() *memdb.DBSchema {
	db := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		tableIndex: {
			Name:    tableIndex,
			Indexes: map[string]*memdb.IndexSchema{"id": idIndex(indexEntryKey)},
		},
		tableJobs: {
			Name: tableJobs,
			Indexes: map[string]*memdb.IndexSchema{
				"id":        nsIDIndex("id", nil, jobNS, jobID),
				"namespace": {Name: "namespace", AllowMissing: true, Indexer: field("namespace", jobNS)},
			},
		},
		tableJobVersion: {
			Name: tableJobVersion,
			Indexes: map[string]*memdb.IndexSchema{
				"id": nsIDVersionIndex(jobNS, jobID),
			},
		},
		tableJobSubmission: {
			Name: tableJobSubmission,
			Indexes: map[string]*memdb.IndexSchema{
				"id": nsIDVersionIndex(submissionNS, submissionJob),
			},
		},
		tableScalingEvent: {
			Name:    tableScalingEvent,
			Indexes: map[string]*memdb.IndexSchema{"id": nsIDIndex("id", nil, scalingNS, scalingJob)},
		},
		tableScalingPolicy: {
			Name: tableScalingPolicy,
			Indexes: map[string]*memdb.IndexSchema{
				"id":  idIndex(policyID),
				"job": nsIDIndex("job", policyID, policyNS, policyJob),
			},
		},
		tablePeriodicLaunch: {
			Name:    tablePeriodicLaunch,
			Indexes: map[string]*memdb.IndexSchema{"id": nsIDIndex("id", nil, launchNS, launchID)},
		},
		tableJobSummary: {
			Name:    tableJobSummary,
			Indexes: map[string]*memdb.IndexSchema{"id": nsIDIndex("id", nil, summaryNS, summaryJob)},
		},
		tableEvals: {
			Name: tableEvals,
			Indexes: map[string]*memdb.IndexSchema{
				"id":  idIndex(evalID),
				"job": nsIDIndex("job", evalID, evalNS, evalJob),
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
				"id": idIndex(allocID),
				"node_terminal": {
					Name:         "node_terminal",
					AllowMissing: true,
					Indexer: newCompoundKey("node_terminal", allocID, allocTerminal,
						field("node_terminal.node", allocNode)),
				},
				"job": nsIDIndex("job", allocID, allocNS, allocJob),
			},
		},
		tableNodes: {
			Name: tableNodes,
			Indexes: map[string]*memdb.IndexSchema{
				"id": idIndex(nodeID),
				"secret_id": {
					Name:         "secret_id",
					Unique:       true,
					AllowMissing: true,
					Indexer:      field("secret_id", nodeSecret),
				},
				// draining holds only nodes with a drain strategy, so the
				// drainer watches them and not every node change.
				"draining": {
					Name:         "draining",
					AllowMissing: true,
					Indexer: &memdb.ConditionalIndex{Conditional: func(obj any) (bool, error) {
						return obj.(*structs.Node).DrainStrategy != nil, nil
					}},
				},
			},
		},
		tableDeployment: {
			Name: tableDeployment,
			Indexes: map[string]*memdb.IndexSchema{
				"id":  idIndex(deploymentID),
				"job": nsIDIndex("job", deploymentID, deploymentNS, deploymentJob),
			},
		},
		tableNamespaces: {
			Name:    tableNamespaces,
			Indexes: map[string]*memdb.IndexSchema{"id": idIndex(namespaceName)},
		},
		tableNodePools: {
			Name:    tableNodePools,
			Indexes: map[string]*memdb.IndexSchema{"id": idIndex(nodePoolName)},
		},
		tableRootKeys: {
			Name:    tableRootKeys,
			Indexes: map[string]*memdb.IndexSchema{"id": idIndex(rootKeyID)},
		},
		tableAllocSeq: allocSeqTable(),
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
		tableSchedulerConfig:      schedulerConfigTable(),
		tableAutopilotConfig:      autopilotConfigTable(),
		tableJobRestart:           jobRestartTable(),
		tableVariables:            variablesTable(),
		tableServiceRegistrations: serviceRegistrationsTable(),
	}}
	aclSchema(db.Tables)
	return db
}
