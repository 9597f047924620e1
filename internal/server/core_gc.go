package server

import (
	"errors"
	"time"

	"github.com/drover-project/drover/internal/server/coregc"
	"github.com/drover-project/drover/internal/structs"
)

// GCConfig is the core garbage collection's schedule and thresholds, with
// Nomad's keys and defaults (server.job_gc_interval, ...). A threshold is
// the age an object must reach after its last change: ages come from the
// FSM's index->time table (fsm/timetable.go), never from the objects' own
// timestamps, which different clocks wrote.
type GCConfig struct {
	// Interval is how often the leader collects (job_gc_interval, 5m).
	// Nomad runs its four collections on their own 5 m tickers; Drover
	// runs them together, in one pass, on this one.
	Interval time.Duration
	// JobThreshold: dead jobs (job_gc_threshold, 4h).
	JobThreshold time.Duration
	// EvalThreshold: evaluations of service and system jobs, and their
	// allocations (eval_gc_threshold, 1h).
	EvalThreshold time.Duration
	// BatchEvalThreshold: evaluations of batch and sysbatch jobs
	// (batch_eval_gc_threshold, 24h).
	BatchEvalThreshold time.Duration
	// DeploymentThreshold: terminal deployments (deployment_gc_threshold, 1h).
	DeploymentThreshold time.Duration
	// NodeThreshold: down nodes (node_gc_threshold, 24h).
	NodeThreshold time.Duration
	// TimeGranularity spaces the index->time pairs (tests shorten it;
	// 0 is one second).
	TimeGranularity time.Duration
}

// Nomad's defaults.
const (
	DefaultJobGCInterval         = 5 * time.Minute
	DefaultJobGCThreshold        = 4 * time.Hour
	DefaultEvalGCThreshold       = time.Hour
	DefaultBatchEvalGCThreshold  = 24 * time.Hour
	DefaultDeploymentGCThreshold = time.Hour
	DefaultNodeGCThreshold       = 24 * time.Hour
)

func (c *GCConfig) fill() {
	for _, f := range []struct {
		v *time.Duration
		d time.Duration
	}{
		{&c.Interval, DefaultJobGCInterval},
		{&c.JobThreshold, DefaultJobGCThreshold},
		{&c.EvalThreshold, DefaultEvalGCThreshold},
		{&c.BatchEvalThreshold, DefaultBatchEvalGCThreshold},
		{&c.DeploymentThreshold, DefaultDeploymentGCThreshold},
		{&c.NodeThreshold, DefaultNodeGCThreshold},
	} {
		if *f.v <= 0 {
			*f.v = f.d
		}
	}
}

// errGCLeadershipLost ends a collection whose leader stepped down.
var errGCLeadershipLost = errors.New("garbage collection stopped: leadership lost")

// runCoreGC collects on every interval while this server leads. Nothing of
// it outlives the leadership: the next leader starts its own ticker and
// finds in state whatever this one did not remove.
func (s *Server) runCoreGC(stopCh chan struct{}) {
	t := time.NewTicker(s.config.GC.Interval)
	defer t.Stop()
	for {
		select {
		case <-stopCh:
			return
		case <-s.shutdownCh:
			return
		case <-t.C:
			if _, err := s.coreGC(stopCh, false); err != nil && !errors.Is(err, errGCLeadershipLost) {
				s.logger.Warn("garbage collection failed", "error", err)
			}
			if err := s.gcExpiredACL(time.Now()); err != nil {
				s.logger.Warn("expired ACL token collection failed", "error", err)
			}
		}
	}
}

// gcCutoffs turns the thresholds into Raft indexes through the time table.
func (s *Server) gcCutoffs(now time.Time) coregc.Cutoffs {
	g := s.config.GC
	return coregc.CutoffsAt(s.fsm.TimeTable(), coregc.Thresholds{Eval: g.EvalThreshold, BatchEval: g.BatchEvalThreshold,
		Job: g.JobThreshold, Deployment: g.DeploymentThreshold, Node: g.NodeThreshold}, now)
}

// coreGC runs one collection (force: every threshold ignored) and commits
// it in bounded entries, stopping if this server stops leading (stopCh
// closed, or nil for a forced run: then the leadership generation it
// started in must stay current).
func (s *Server) coreGC(stopCh chan struct{}, force bool) (*structs.SystemGCResponse, error) {
	s.coreGCMu.Lock()
	defer s.coreGCMu.Unlock()
	gen := s.leaderGen.Load()
	stillLeading := func() bool {
		if stopCh != nil {
			select {
			case <-stopCh:
				return false
			default:
			}
		}
		return s.IsLeader() && s.leaderGen.Load() == gen
	}
	if !stillLeading() {
		return nil, errGCLeadershipLost
	}
	now := time.Now()
	cut := s.gcCutoffs(now)
	if force {
		cut = coregc.Force(now)
	}
	snap, err := s.State().Snapshot()
	if err != nil {
		return nil, err
	}
	res, err := coregc.Collect(snap, cut)
	if err != nil {
		return nil, err
	}
	out := &structs.SystemGCResponse{Evals: len(res.Evals), Allocs: len(res.Allocs), Jobs: len(res.Jobs),
		Deployments: len(res.Deployments), Nodes: len(res.Nodes)}
	if res.Empty() {
		return out, nil
	}
	start := time.Now()
	for _, e := range coregc.Entries(res, 0) {
		if !stillLeading() {
			return nil, errGCLeadershipLost
		}
		_, index, err := s.raftApply(e.Type, e.Req)
		if err != nil {
			return nil, err
		}
		out.Index = index
	}
	s.logger.Info("garbage collected", "force", force, "evals", out.Evals, "allocs", out.Allocs,
		"jobs", out.Jobs, "deployments", out.Deployments, "nodes", out.Nodes, "took", time.Since(start))
	return out, nil
}
