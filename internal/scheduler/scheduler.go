package scheduler

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// State is the read-only view of cluster state a scheduler works from.
// *state.StateSnapshot satisfies it.
type State interface {
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string, anyCreateIndex bool) ([]*structs.Allocation, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	AllocsByNodeTerminal(ws memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error)
	NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
	Nodes(ws memdb.WatchSet) (memdb.ResultIterator, error) // yields *structs.Node
	LatestDeploymentByJobID(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error)
	Index(table string) (uint64, error)
	LatestIndex() (uint64, error)
}

// Planner is how a scheduler acts on the cluster; the server's worker
// implements it.
type Planner interface {
	// SubmitPlan submits a plan for application. A non-nil State is a
	// refreshed snapshot to retry against (the plan was partially committed).
	SubmitPlan(*structs.Plan) (*structs.PlanResult, State, error)
	UpdateEval(*structs.Evaluation) error
	CreateEval(*structs.Evaluation) error
	ReblockEval(*structs.Evaluation) error
}

// Scheduler processes one evaluation.
type Scheduler interface {
	Process(*structs.Evaluation) error
}

// Config configures a scheduler.
type Config struct {
	Logger hclog.Logger
	// Clock returns "now"; defaults to time.Now.
	Clock func() time.Time
	// Algorithm is "binpack" (default) or "spread".
	Algorithm string
	// PreemptionEnabled says, per job type, whether placements may evict
	// allocations of lower-priority jobs. Nil means
	// DefaultPreemptionEnabled(); a non-nil map is taken as is (absent
	// types are off).
	PreemptionEnabled map[string]bool
	// MemoryOversubscription grants tasks their memory_max; when off they
	// get their memory only (the scheduler configuration's
	// MemoryOversubscriptionEnabled).
	MemoryOversubscription bool
	// Explain, when set, collects why nodes were filtered and how they
	// ranked (dry-run plans only; nil costs nothing).
	Explain *feasible.Explain
	// Superseded, when set, reports whether job (as the scheduler's
	// snapshot has it) is no longer the job's current version in the live
	// state: purged, stopped or registered anew. A pass checks it as it
	// starts and every few dozen placements, and a superseded evaluation
	// is cancelled (the change's own evaluation takes over), so a long pass
	// for a job that is gone stops early. Nil never supersedes (dry runs).
	Superseded func(job *structs.Job) bool
}

// DefaultPreemptionEnabled is Nomad's default: preemption for system jobs
// only.
func DefaultPreemptionEnabled() map[string]bool {
	return map[string]bool{
		structs.JobTypeSystem:   true,
		structs.JobTypeSysBatch: false,
		structs.JobTypeService:  false,
		structs.JobTypeBatch:    false,
	}
}

// NewScheduler returns the scheduler for an eval type: "service", "batch",
// "system" or "sysbatch".
func NewScheduler(name string, cfg Config, state State, planner Planner) (Scheduler, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.PreemptionEnabled == nil {
		cfg.PreemptionEnabled = DefaultPreemptionEnabled()
	}
	switch cfg.Algorithm {
	case "":
		cfg.Algorithm = "binpack"
	case "binpack", "spread":
	default:
		return nil, fmt.Errorf("unknown scheduler algorithm %q (want binpack or spread)", cfg.Algorithm)
	}
	if state == nil || planner == nil {
		return nil, fmt.Errorf("scheduler %q needs a state and a planner", name)
	}
	switch name {
	case structs.JobTypeService:
		return newGenericScheduler(cfg, state, planner, false), nil
	case structs.JobTypeBatch:
		return newGenericScheduler(cfg, state, planner, true), nil
	case structs.JobTypeSystem:
		return newSystemScheduler(cfg, state, planner, false), nil
	case structs.JobTypeSysBatch:
		return newSystemScheduler(cfg, state, planner, true), nil
	}
	return nil, fmt.Errorf("unknown scheduler %q", name)
}

// SetStatusError carries the status an eval must be left in when
// processing stops early.
type SetStatusError struct {
	Err        error
	EvalStatus string
}

func (e *SetStatusError) Error() string { return e.Err.Error() }
func (e *SetStatusError) Unwrap() error { return e.Err }

// retryMax runs cb until it reports done, at most max times in a row
// without progress; progress (reset returning true) restarts the count.
func retryMax(max int, cb func() (bool, error), reset func() bool) error {
	attempts := 0
	for attempts < max {
		done, err := cb()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if reset != nil && reset() {
			attempts = 0
		} else {
			attempts++
		}
	}
	return &SetStatusError{
		Err:        fmt.Errorf("maximum attempts reached (%d)", max),
		EvalStatus: structs.EvalStatusFailed,
	}
}
