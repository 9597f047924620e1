package coregc_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/fsm"
	"github.com/drover-project/drover/internal/server/coregc"
	"github.com/drover-project/drover/internal/structs"
)

// harness applies entries to a real FSM (and state store) at chosen append
// times, as Raft would.
type harness struct {
	t     testing.TB
	f     *fsm.FSM
	index uint64
	now   time.Time
}

func newHarness(t testing.TB) *harness {
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, f: f, now: time.Unix(1_700_000_000, 0)}
}

// apply appends one entry a millisecond after the previous one.
func (h *harness) apply(mt structs.MessageType, msg any) {
	h.t.Helper()
	buf, err := structs.Encode(mt, msg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.index++
	h.now = h.now.Add(time.Millisecond)
	if resp := h.f.Apply(&raft.Log{Index: h.index, Type: raft.LogCommand, Data: buf, AppendedAt: h.now}); resp != nil {
		if err, ok := resp.(error); ok {
			h.t.Fatalf("apply %d (type %d): %v", h.index, mt, err)
		}
	}
}

// idle lets d pass with one no-op entry at its end (Raft's heartbeats and
// other writes keep the table moving in a real cluster).
func (h *harness) idle(d time.Duration) {
	h.now = h.now.Add(d)
	h.index++
	h.f.Apply(&raft.Log{Index: h.index, Type: raft.LogNoop, AppendedAt: h.now})
}

// collect runs a collection at the harness's time and applies its entries.
func (h *harness) collect(th coregc.Thresholds, force bool) *coregc.Result {
	h.t.Helper()
	cut := coregc.CutoffsAt(h.f.TimeTable(), th, h.now)
	if force {
		cut = coregc.Force(h.now)
	}
	snap, err := h.f.State().Snapshot()
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := coregc.Collect(snap, cut)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range coregc.Entries(res, 0) {
		h.apply(e.Type, e.Req)
	}
	return res
}

var nomadDefaults = coregc.Thresholds{Eval: time.Hour, BatchEval: 24 * time.Hour, Job: 4 * time.Hour,
	Deployment: time.Hour, Node: 24 * time.Hour}

func job(id, typ string, count int) *structs.Job {
	return &structs.Job{Namespace: "default", ID: id, Name: id, Type: typ, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: count, Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec"}}}}}
}

func eval(id, jobID, typ, status string) *structs.Evaluation {
	return &structs.Evaluation{ID: id, Namespace: "default", JobID: jobID, Type: typ, Status: status, Priority: 50,
		TriggeredBy: structs.EvalTriggerJobRegister}
}

// runJob registers j with an eval, places count allocations on node and
// reports them at clientStatus; it returns the alloc IDs.
func (h *harness) runJob(j *structs.Job, node string, count int, clientStatus string) []string {
	h.t.Helper()
	ev := eval("e-"+j.ID, j.ID, j.Type, structs.EvalStatusPending)
	h.apply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j, Eval: ev})
	stored, _ := h.f.State().JobByID(nil, "default", j.ID)
	var allocs []*structs.Allocation
	var ids []string
	for i := 0; i < count; i++ {
		id := fmt.Sprintf("%s-a%05d", j.ID, i)
		ids = append(ids, id)
		allocs = append(allocs, &structs.Allocation{ID: id, Namespace: "default", EvalID: ev.ID, NodeID: node, JobID: j.ID,
			TaskGroup: "g", Name: fmt.Sprintf("%s.g[%d]", j.ID, i), DesiredStatus: structs.AllocDesiredStatusRun,
			ClientStatus: structs.AllocClientStatusPending, Job: stored,
			// What the scheduler writes with every placement.
			AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
				"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}}}},
			Metrics: &structs.AllocMetric{NodesEvaluated: 5, NodesInPool: 5, NodePool: "default",
				NodesAvailable: map[string]int{"dc1": 5}, AllocationTime: time.Millisecond,
				ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: node, Scores: map[string]float64{"binpack": 0.2 + float64(i%7)/10,
					"job-anti-affinity": 0}, NormScore: 0.3}}},
		})
	}
	for start := 0; start < len(allocs); start += 1000 {
		h.apply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: stored,
			Alloc: allocs[start:min(start+1000, len(allocs))], EvalID: ev.ID})
	}
	done := *ev
	done.Status = structs.EvalStatusComplete
	h.apply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{&done}})
	h.report(node, ids, clientStatus)
	return ids
}

func (h *harness) report(node string, ids []string, clientStatus string) {
	for start := 0; start < len(ids); start += 1000 {
		var upd []*structs.Allocation
		for _, id := range ids[start:min(start+1000, len(ids))] {
			// What a client reports: the task's state with its events.
			at := time.Unix(1_700_000_000, 0).UTC()
			upd = append(upd, &structs.Allocation{ID: id, NodeID: node, ClientStatus: clientStatus,
				TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, StartedAt: at, FinishedAt: at.Add(time.Second),
					Events: []*structs.TaskEvent{
						{Type: structs.TaskReceived, Time: at.UnixNano(), DisplayMessage: "Task received by client"},
						{Type: structs.TaskStarted, Time: at.UnixNano() + 1, DisplayMessage: "Task started by client"},
						{Type: structs.TaskTerminated, Time: at.UnixNano() + 2, DisplayMessage: "Exit Code: 0", Details: map[string]string{"exit_code": "0"}},
					}}}})
		}
		h.apply(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: upd})
	}
}

func (h *harness) count() (jobs, evals, allocs int) {
	st := h.f.State()
	for it, _ := st.Jobs(nil); it.Next() != nil; {
		jobs++
	}
	for it, _ := st.Evals(nil); it.Next() != nil; {
		evals++
	}
	for it, _ := st.Allocs(nil); it.Next() != nil; {
		allocs++
	}
	return
}

func heapMB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// 10,000 finished batch allocations (1,000 batch jobs of 10) and their
// evaluations stay while younger than the thresholds and are gone after
// them, the state's memory returns, and the running service job and the
// stopped job whose allocation still runs keep everything.
func TestCollect_TenThousandFinishedBatchAllocs(t *testing.T) {
	h := newHarness(t)
	h.apply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: &structs.Node{ID: "n1", SecretID: "s1",
		Name: "n1", Datacenter: "dc1", Status: structs.NodeStatusReady}})
	liveIDs := h.runJob(job("live", structs.JobTypeService, 3), "n1", 3, structs.AllocClientStatusRunning)
	stopIDs := h.runJob(job("stopping", structs.JobTypeService, 1), "n1", 1, structs.AllocClientStatusRunning)
	h.apply(structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "stopping",
		WriteRequest: structs.WriteRequest{Namespace: "default"}})
	stopJob, _ := h.f.State().JobByID(nil, "default", "stopping")
	stopAlloc, _ := h.f.State().AllocByID(nil, stopIDs[0])
	// The plan applier stops it; its client has not stopped it yet.
	stopped := stopAlloc.CopySkipJob()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	h.apply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: stopJob,
		AllocsStopped: []*structs.Allocation{stopped}, EvalID: "e-stop"})

	before := heapMB()
	const jobs, per = 1000, 10
	for i := 0; i < jobs; i++ {
		h.runJob(job(fmt.Sprintf("batch-%04d", i), structs.JobTypeBatch, per), "n1", per, structs.AllocClientStatusComplete)
	}
	_, evals, allocs := h.count()
	if allocs != jobs*per+4 || evals != jobs+2 {
		t.Fatalf("filled %d allocs, %d evals", allocs, evals)
	}
	filled := heapMB()

	// Younger than the job threshold (4h): nothing of theirs goes. (Batch
	// evaluations of a registered job never go alone: the scheduler would
	// run the finished work again.)
	h.idle(3 * time.Hour)
	if res := h.collect(nomadDefaults, false); len(res.Jobs)+len(res.Allocs) != 0 {
		t.Fatalf("collected at 3h: %d jobs, %d allocs", len(res.Jobs), len(res.Allocs))
	}
	h.idle(2 * time.Hour)
	start := time.Now()
	res := h.collect(nomadDefaults, false)
	took := time.Since(start)
	if len(res.Jobs) != jobs || len(res.Allocs) != jobs*per {
		t.Fatalf("collected at 5h: %d jobs, %d allocs, %d evals", len(res.Jobs), len(res.Allocs), len(res.Evals))
	}
	nJobs, nEvals, nAllocs := h.count()
	if nJobs != 2 || nEvals != 2 || nAllocs != 4 {
		t.Fatalf("left %d jobs, %d evals, %d allocs; want the 2 live jobs with their 2 evals and 4 allocs", nJobs, nEvals, nAllocs)
	}
	for _, id := range append(liveIDs, stopIDs...) {
		if a, _ := h.f.State().AllocByID(nil, id); a == nil || a.Job == nil {
			t.Fatalf("live allocation %s collected", id)
		}
	}
	if v, _ := h.f.State().JobVersionsByID(nil, "default", "stopping"); len(v) == 0 {
		t.Fatal("the stopped job's versions were collected while its allocation runs")
	}
	after := heapMB()
	t.Logf("state heap: %.1f MB empty, %.1f MB with %d finished allocs, %d evals and %d batch jobs, %.1f MB after GC (collection and its %d entries: %s)",
		before, filled, jobs*per, jobs, jobs, after, len(coregc.Entries(res, 0)), took)
	if grown := filled - before; after-before > grown/5 {
		t.Fatalf("heap after GC %.1f MB kept more than a fifth of the %.1f MB the fill added", after, grown)
	}
}

// Evaluations of service jobs go after eval_gc_threshold with their
// terminal allocations; a failed allocation a live job may still
// reschedule from stays, and so does its evaluation.
func TestCollect_ServiceEvalsAndRescheduleTrackers(t *testing.T) {
	h := newHarness(t)
	h.apply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: &structs.Node{ID: "n1", SecretID: "s1", Name: "n1", Datacenter: "dc1", Status: structs.NodeStatusReady}})
	svc := job("svc", structs.JobTypeService, 3)
	svc.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Unlimited: true, Delay: time.Second}
	ids := h.runJob(svc, "n1", 3, structs.AllocClientStatusRunning)
	h.report("n1", ids[:1], structs.AllocClientStatusComplete)
	h.report("n1", ids[1:2], structs.AllocClientStatusFailed)
	h.idle(2 * time.Hour)
	res := h.collect(nomadDefaults, false)
	if len(res.Allocs) != 1 || res.Allocs[0] != ids[0] || len(res.Evals) != 0 || len(res.Jobs) != 0 {
		t.Fatalf("collected %+v; want only the complete allocation", res)
	}
	if a, _ := h.f.State().AllocByID(nil, ids[1]); a == nil {
		t.Fatal("the failed allocation to reschedule from was collected")
	}
}

// Deployments: a terminal one goes after deployment_gc_threshold unless it
// is its job's newest; an active one never.
func TestCollect_Deployments(t *testing.T) {
	h := newHarness(t)
	h.apply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: &structs.Node{ID: "n1", SecretID: "s1", Name: "n1", Datacenter: "dc1", Status: structs.NodeStatusReady}})
	h.runJob(job("web", structs.JobTypeService, 1), "n1", 1, structs.AllocClientStatusRunning)
	stored, _ := h.f.State().JobByID(nil, "default", "web")
	for i, status := range []string{structs.DeploymentStatusSuccessful, structs.DeploymentStatusFailed, structs.DeploymentStatusRunning, structs.DeploymentStatusSuccessful} {
		h.apply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: stored, EvalID: "e-web",
			Deployment: &structs.Deployment{ID: fmt.Sprintf("d%d", i), Namespace: "default", JobID: "web",
				JobCreateIndex: stored.CreateIndex, Status: status}})
	}
	h.idle(2 * time.Hour)
	res := h.collect(nomadDefaults, false)
	if fmt.Sprint(res.Deployments) != "[d0 d1]" {
		t.Fatalf("collected deployments %v, want [d0 d1] (d2 is running, d3 the newest)", res.Deployments)
	}
	for _, id := range []string{"d2", "d3"} {
		if d, _ := h.f.State().DeploymentByID(nil, id); d == nil {
			t.Fatalf("deployment %s collected", id)
		}
	}
}

// Down nodes go after node_gc_threshold when they hold nothing live; the
// state write keeps a node that came back meanwhile.
func TestCollect_DownNodes(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"ready", "down-empty", "down-busy", "back"} {
		h.apply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: &structs.Node{ID: id, SecretID: "s-" + id, Name: id, Datacenter: "dc1", Status: structs.NodeStatusReady}})
	}
	h.runJob(job("web", structs.JobTypeService, 1), "down-busy", 1, structs.AllocClientStatusRunning)
	for _, id := range []string{"down-empty", "down-busy", "back"} {
		h.apply(structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: id, Status: structs.NodeStatusDown})
	}
	h.idle(23 * time.Hour)
	if res := h.collect(nomadDefaults, false); len(res.Nodes) != 0 {
		t.Fatalf("collected nodes %v before node_gc_threshold", res.Nodes)
	}
	h.idle(2 * time.Hour)
	cut := coregc.CutoffsAt(h.f.TimeTable(), nomadDefaults, h.now)
	snap, _ := h.f.State().Snapshot()
	res, err := coregc.Collect(snap, cut)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Nodes) != "[back down-empty]" {
		t.Fatalf("nodes to collect %v, want [back down-empty]", res.Nodes)
	}
	// "back" heartbeats again before the collection commits.
	h.apply(structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "back", Status: structs.NodeStatusReady})
	for _, e := range coregc.Entries(res, 0) {
		h.apply(e.Type, e.Req)
	}
	for id, want := range map[string]bool{"ready": true, "down-empty": false, "down-busy": true, "back": true} {
		if n, _ := h.f.State().NodeByID(nil, id); (n != nil) != want {
			t.Errorf("node %s present=%v, want %v", id, n != nil, want)
		}
	}
}

// A dead job re-registered between the collector's read and the commit is
// not purged.
func TestCollect_ReregisteredJobKept(t *testing.T) {
	h := newHarness(t)
	h.apply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: &structs.Node{ID: "n1", SecretID: "s1", Name: "n1", Datacenter: "dc1", Status: structs.NodeStatusReady}})
	h.runJob(job("b", structs.JobTypeBatch, 1), "n1", 1, structs.AllocClientStatusComplete)
	snap, _ := h.f.State().Snapshot()
	res, err := coregc.Collect(snap, coregc.Force(h.now))
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	again := job("b", structs.JobTypeBatch, 2)
	h.apply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: again})
	for _, e := range coregc.Entries(res, 0) {
		h.apply(e.Type, e.Req)
	}
	if j, _ := h.f.State().JobByID(nil, "default", "b"); j == nil || j.TaskGroups[0].Count != 2 {
		t.Fatalf("re-registered job purged: %+v", j)
	}
}

// Entries are bounded and ordered: allocations, then evaluations, jobs,
// deployments, nodes.
func TestEntries_BoundedAndOrdered(t *testing.T) {
	r := &coregc.Result{Evals: []string{"e1", "e2", "e3"}, Allocs: []string{"a1", "a2", "a3", "a4"},
		Jobs: []*structs.JobBatchDeregisterJob{{ID: "j"}}, Deployments: []string{"d"}, Nodes: []string{"n"}}
	got := ""
	for _, e := range coregc.Entries(r, 3) {
		switch req := e.Req.(type) {
		case *structs.EvalDeleteRequest:
			got += fmt.Sprintf("del%v%v ", req.Allocs, req.Evals)
		case *structs.JobBatchDeregisterRequest:
			got += fmt.Sprintf("jobs%d ", len(req.Jobs))
		case *structs.DeploymentDeleteRequest:
			got += fmt.Sprintf("deps%v ", req.Deployments)
		case *structs.NodeBatchDeregisterRequest:
			got += fmt.Sprintf("nodes%v ", req.NodeIDs)
		}
	}
	if want := "del[a1 a2 a3][] del[a4][e1 e2] del[][e3] jobs1 deps[d] nodes[n] "; got != want {
		t.Fatalf("entries %q, want %q", got, want)
	}
}

// Allocations whose evaluation an operator deleted (DELETE
// /v1/evaluations) are still collected once old enough; running ones stay.
func TestCollect_OrphanedAllocs(t *testing.T) {
	h := newHarness(t)
	h.apply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: &structs.Node{ID: "n1", SecretID: "s1", Name: "n1", Datacenter: "dc1", Status: structs.NodeStatusReady}})
	ids := h.runJob(job("svc", structs.JobTypeService, 2), "n1", 2, structs.AllocClientStatusRunning)
	h.report("n1", ids[:1], structs.AllocClientStatusComplete)
	h.apply(structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{Evals: []string{"e-svc"}})
	h.idle(30 * time.Minute)
	if res := h.collect(nomadDefaults, false); len(res.Allocs) != 0 {
		t.Fatalf("collected %v before eval_gc_threshold", res.Allocs)
	}
	h.idle(time.Hour)
	res := h.collect(nomadDefaults, false)
	if fmt.Sprint(res.Allocs) != fmt.Sprint(ids[:1]) {
		t.Fatalf("collected %v, want the finished orphan %v only", res.Allocs, ids[:1])
	}
	if a, _ := h.f.State().AllocByID(nil, ids[1]); a == nil {
		t.Fatal("the running orphan was collected")
	}
}
