package fsm

import (
	"context"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// recordingPlanner keeps the scheduler's plans; the test commits them.
type recordingPlanner struct{ plans []*structs.Plan }

func (p *recordingPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	p.plans = append(p.plans, plan)
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation,
		NodePreemptions: plan.NodePreemptions, Deployment: plan.Deployment, DeploymentUpdates: plan.DeploymentUpdates}, nil, nil
}
func (p *recordingPlanner) UpdateEval(*structs.Evaluation) error  { return nil }
func (p *recordingPlanner) CreateEval(*structs.Evaluation) error  { return nil }
func (p *recordingPlanner) ReblockEval(*structs.Evaluation) error { return nil }

// schedule runs the service scheduler for eval on snap and returns the
// Raft entries of its plans, at index on.
func schedule(t *testing.T, snap *state.StateSnapshot, eval *structs.Evaluation, index uint64) []*structs.ApplyPlanResultsRequest {
	t.Helper()
	p := &recordingPlanner{}
	sched, err := scheduler.NewScheduler(eval.Type, scheduler.Config{}, snap, p)
	must(t, err)
	must(t, sched.Process(eval))
	var out []*structs.ApplyPlanResultsRequest
	for _, plan := range p.plans {
		req := &structs.ApplyPlanResultsRequest{Job: plan.Job, EvalID: plan.EvalID, Deployment: plan.Deployment,
			DeploymentUpdates: plan.DeploymentUpdates, UpdatedAt: int64(index)}
		for _, allocs := range plan.NodeAllocation {
			req.Alloc = append(req.Alloc, allocs...)
		}
		for _, allocs := range plan.NodeUpdate {
			req.AllocsStopped = append(req.AllocsStopped, allocs...)
		}
		out = append(out, req)
	}
	return out
}

// schedSink is the broker and a worker: on the entry's first eval it
// starts scheduling it from the snapshot a worker takes
// (SnapshotMinIndex at the eval's index), in another goroutine, and
// returns once that worker has its snapshot or waits for the entry.
type schedSink struct {
	recordingSink
	t     *testing.T
	f     *FSM
	first chan *state.StateSnapshot
	fired bool
}

func (k *schedSink) EvalsUpserted(evals []*structs.Evaluation) {
	k.recordingSink.EvalsUpserted(evals)
	if k.fired {
		return
	}
	k.fired = true
	st := k.f.State()
	got := make(chan struct{})
	go func() {
		snap, err := st.SnapshotMinIndex(context.Background(), evals[0].ModifyIndex)
		if err != nil {
			k.t.Error(err)
		}
		close(got)
		k.first <- snap
	}()
	deadline := time.Now().Add(5 * time.Second)
	for st.EntryWaiters() == 0 {
		select {
		case <-got:
			return
		default:
		}
		if time.Now().After(deadline) {
			k.t.Error("the worker neither got a snapshot nor waited for the entry")
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Two registrations of one job committed in one entry (v1 then v2) share
// a JobModifyIndex. Whatever order the evaluations are scheduled in, no
// allocation of v1 may end up running once v2 is the job: the user sees
// the old version's tasks running after their update.
func TestJobRegisterBatch_NoOldVersionAllocsSurvive(t *testing.T) {
	sink := &schedSink{t: t, first: make(chan *state.StateSnapshot, 1)}
	f := newFSM(t, sink)
	sink.f = f
	node := testNode("n1")
	node.Status = structs.NodeStatusReady
	node.Attributes["driver.raw_exec"] = "1"
	node.Drivers = map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}
	node.NodeResources = &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000},
		Memory: structs.NodeMemoryResources{MemoryMB: 4096}, Disk: structs.NodeDiskResources{DiskMB: 10000}}
	apply(t, f, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}))

	job := func(arg string) *structs.Job {
		j := testJob("web")
		j.Datacenters = []string{"dc1"}
		j.TaskGroups[0].Count = 2
		j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "sleep", "args": []any{arg}}
		j.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
		return j
	}
	e1, e2 := testEval("e1", "web", structs.EvalStatusPending), testEval("e2", "web", structs.EvalStatusPending)
	resp := f.Apply(entry(t, 7, structs.JobRegisterBatchRequestType, &structs.JobRegisterBatchRequest{Jobs: []*structs.JobRegisterRequest{
		{Job: job("10"), Eval: e1},
		{Job: job("20"), Eval: e2},
	}}))
	if res, ok := resp.(*JobRegisterBatchResult); !ok || res.Errors[0] != nil || res.Errors[1] != nil {
		t.Fatalf("apply: %#v", resp)
	}
	var snap *state.StateSnapshot
	select {
	case snap = <-sink.first:
	case <-time.After(5 * time.Second):
		t.Fatal("the first eval's worker never got a snapshot")
	}
	// The first eval's worker schedules from its snapshot; its plan commits.
	stored1, _ := snap.EvalByID(nil, "e1")
	if stored1 == nil {
		t.Fatal("the worker's snapshot lacks its own eval")
	}
	index := uint64(8)
	for _, req := range schedule(t, snap, stored1, index) {
		apply(t, f, entry(t, index, structs.ApplyPlanResultsRequestType, req))
		index++
	}
	// Then the second eval, from a fresh snapshot.
	snap2, err := f.State().Snapshot()
	must(t, err)
	stored2, _ := snap2.EvalByID(nil, "e2")
	for _, req := range schedule(t, snap2, stored2, index) {
		apply(t, f, entry(t, index, structs.ApplyPlanResultsRequestType, req))
		index++
	}

	st := f.State()
	current, _ := st.JobByID(nil, "default", "web")
	allocs, err := st.AllocsByJob(nil, "default", "web", true)
	must(t, err)
	running := 0
	for _, a := range allocs {
		if a.ServerTerminalStatus() {
			continue
		}
		running++
		if a.Job == nil || a.Job.Version != current.Version {
			var v any = "no job"
			if a.Job != nil {
				v = a.Job.Version
			}
			t.Errorf("allocation %s runs job version %v; the job is at version %d (args %v)", a.Name, v, current.Version,
				a.Job.TaskGroups[0].Tasks[0].Config["args"])
		}
	}
	if running != 2 {
		t.Fatalf("%d allocations running, want 2", running)
	}
}
