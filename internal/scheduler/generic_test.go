package scheduler

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
	"github.com/google/uuid"
)

var testNow = time.Unix(1_700_000_000, 0)

func mockNode(id string) *structs.Node {
	n := &structs.Node{
		ID: id, Name: "name-" + id, Datacenter: "dc1", NodePool: "default",
		Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible,
		Attributes: map[string]string{"kernel.name": "linux", "unique.network.ip-address": "10.0.0.1"},
		Drivers:    map[string]*structs.DriverInfo{"exec": {Detected: true, Healthy: true}},
		NodeResources: &structs.NodeResources{
			Cpu:      structs.NodeCpuResources{CpuShares: 4000},
			Memory:   structs.NodeMemoryResources{MemoryMB: 8192},
			Disk:     structs.NodeDiskResources{DiskMB: 100 * 1024},
			Networks: []*structs.NetworkResource{{Device: "eth0", IP: "10.0.0.1"}},
		},
		ReservedResources: &structs.NodeReservedResources{
			Cpu:    structs.NodeReservedCpuResources{CpuShares: 100},
			Memory: structs.NodeReservedMemoryResources{MemoryMB: 256},
		},
	}
	n.ComputeClass()
	return n
}

func mockJob(id string, count int) *structs.Job {
	return &structs.Job{
		ID: id, Name: id, Namespace: "default", Type: structs.JobTypeService, Priority: 50,
		Datacenters: []string{"dc*"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: count,
			EphemeralDisk: &structs.EphemeralDisk{SizeMB: 150},
			Networks:      []*structs.NetworkResource{{Mode: "host", DynamicPorts: []structs.Port{{Label: "http", To: -1}}}},
			Tasks: []*structs.Task{{
				Name: "server", Driver: "exec",
				Resources: &structs.Resources{CPU: 500, MemoryMB: 256},
			}},
		}},
	}
}

func mockEval(job *structs.Job) *structs.Evaluation {
	return &structs.Evaluation{
		ID: uuid.NewString(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
		TriggeredBy: structs.EvalTriggerJobRegister, JobID: job.ID, Status: structs.EvalStatusPending,
	}
}

func process(t testing.TB, h *Harness, eval *structs.Evaluation) {
	t.Helper()
	s, err := NewScheduler(eval.Type, Config{Clock: func() time.Time { return testNow }}, h.State, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Process(eval); err != nil {
		t.Fatalf("Process: %v", err)
	}
}

func liveAllocs(h *Harness, jobID string) []*structs.Allocation {
	all, _ := h.State.AllocsByJob(nil, "default", jobID, true)
	var out []*structs.Allocation
	for _, a := range all {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func planned(p *structs.Plan) (placed, stopped []*structs.Allocation) {
	for _, as := range p.NodeAllocation {
		placed = append(placed, as...)
	}
	for _, as := range p.NodeUpdate {
		stopped = append(stopped, as...)
	}
	return
}

func lastEval(t *testing.T, h *Harness) *structs.Evaluation {
	t.Helper()
	if len(h.Evals) == 0 {
		t.Fatal("eval status never updated")
	}
	return h.Evals[len(h.Evals)-1]
}

func TestNewScheduler(t *testing.T) {
	h := NewHarness()
	for _, name := range []string{"service", "batch", "system", "sysbatch"} {
		if _, err := NewScheduler(name, Config{}, h.State, h); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewScheduler("nope", Config{}, h.State, h); err == nil {
		t.Error("unknown scheduler accepted")
	}
	if _, err := NewScheduler("service", Config{Algorithm: "worst"}, h.State, h); err == nil {
		t.Error("unknown algorithm accepted")
	}
}

func TestServicePlacesCountWithDistinctNames(t *testing.T) {
	h := NewHarness()
	for i := 0; i < 3; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("node-%d", i)))
	}
	job := mockJob("web", 3)
	h.State.UpsertJob(job)
	eval := mockEval(job)
	process(t, h, eval)

	if len(h.Plans) != 1 {
		t.Fatalf("plans = %d, want 1", len(h.Plans))
	}
	allocs := liveAllocs(h, "web")
	if len(allocs) != 3 {
		t.Fatalf("placed %d allocs, want 3", len(allocs))
	}
	for i, a := range allocs {
		if want := fmt.Sprintf("web.web[%d]", i); a.Name != want {
			t.Errorf("alloc %d name %q, want %q", i, a.Name, want)
		}
		if a.EvalID != eval.ID || a.DesiredStatus != "run" || a.ClientStatus != "pending" || a.NodeName == "" ||
			a.CreateTime != testNow.UnixNano() || a.Metrics == nil || a.Job != job {
			t.Errorf("alloc fields wrong: %+v", a)
		}
		tr := a.AllocatedResources.Tasks["server"]
		if tr == nil || tr.Cpu.CpuShares != 500 || tr.Memory.MemoryMB != 256 || a.AllocatedResources.Shared.DiskMB != 150 {
			t.Errorf("resources wrong: %+v", a.AllocatedResources)
		}
		if p, ok := a.AllocatedResources.Shared.Ports.Get("http"); !ok || p.Value < 20000 || p.Value > 32000 || p.To != p.Value || p.HostIP != "10.0.0.1" {
			t.Errorf("port wrong: %+v", a.AllocatedResources.Shared.Ports)
		}
	}
	e := lastEval(t, h)
	if e.Status != structs.EvalStatusComplete || e.QueuedAllocations["web"] != 0 || len(e.FailedTGAllocs) != 0 || e.BlockedEval != "" {
		t.Fatalf("eval = %+v", e)
	}
	if len(h.CreateEvals) != 0 {
		t.Fatal("no blocked eval expected")
	}
	if err := h.CheckInvariants(); err != nil {
		t.Fatal(err)
	}

	// A second eval for the unchanged job is a no-op.
	process(t, h, mockEval(job))
	if len(h.Plans) != 1 {
		t.Fatalf("unchanged job submitted another plan")
	}
}

func TestServiceStopAndCountZero(t *testing.T) {
	for _, mode := range []string{"stop", "count0", "purge"} {
		t.Run(mode, func(t *testing.T) {
			h := NewHarness()
			h.State.UpsertNode(mockNode("n1"))
			job := mockJob("web", 2)
			h.State.UpsertJob(job)
			process(t, h, mockEval(job))
			if len(liveAllocs(h, "web")) != 2 {
				t.Fatal("setup: want 2 allocs")
			}
			upd := mockJob("web", 2)
			switch mode {
			case "stop":
				upd.Stop = true
				h.State.UpsertJob(upd)
			case "count0":
				upd.TaskGroups[0].Count = 0
				h.State.UpsertJob(upd)
			case "purge":
				h.State.DeleteJob("default", "web")
			}
			process(t, h, mockEval(job))
			_, stopped := planned(h.Plans[len(h.Plans)-1])
			if len(stopped) != 2 {
				t.Fatalf("stopped %d, want 2", len(stopped))
			}
			if n := len(liveAllocs(h, "web")); n != 0 {
				t.Fatalf("%d allocs still live", n)
			}
			if lastEval(t, h).Status != "complete" {
				t.Fatal("eval not complete")
			}
		})
	}
}

// Without an update strategy (max_parallel 0, or a job built without the
// API's defaults) a destructive change replaces every allocation at once,
// keeping names; with one it rolls (generic_update_test.go).
func TestServiceJobUpdateWithoutStrategyReplacesAll(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertNode(mockNode("n2"))
	job := mockJob("web", 3)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	before := liveAllocs(h, "web")

	upd := mockJob("web", 3)
	upd.TaskGroups[0].Tasks[0].Resources.CPU = 600
	upd.JobModifyIndex = job.JobModifyIndex + 100
	h.State.UpsertJob(upd)
	process(t, h, mockEval(upd))

	placed, stopped := planned(h.Plans[len(h.Plans)-1])
	if len(placed) != 3 || len(stopped) != 3 {
		t.Fatalf("placed %d stopped %d, want 3/3", len(placed), len(stopped))
	}
	after := liveAllocs(h, "web")
	if len(after) != 3 {
		t.Fatalf("live = %d", len(after))
	}
	for i := range after {
		if after[i].Name != before[i].Name || after[i].ID == before[i].ID || after[i].Job.JobModifyIndex != upd.JobModifyIndex {
			t.Errorf("replacement %d: %s/%s", i, after[i].Name, after[i].ID)
		}
		if after[i].AllocatedResources.Tasks["server"].Cpu.CpuShares != 600 {
			t.Error("replacement does not carry the new resources")
		}
	}
}

func TestServiceNodeDownLostAndReplaced(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertNode(mockNode("n2"))
	job := mockJob("web", 4)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))

	// Take down a node that holds at least one alloc.
	down := liveAllocs(h, "web")[0].NodeID
	n := *h.State.nodes[down]
	n.Status = structs.NodeStatusDown
	h.State.UpsertNode(&n)
	var onDown int
	for _, a := range liveAllocs(h, "web") {
		if a.NodeID == down {
			onDown++
		}
	}
	process(t, h, mockEval(job))

	placed, stopped := planned(h.Plans[len(h.Plans)-1])
	if len(stopped) != onDown || len(placed) != onDown {
		t.Fatalf("stopped %d placed %d, want %d each", len(stopped), len(placed), onDown)
	}
	for _, s := range stopped {
		if s.ClientStatus != structs.AllocClientStatusLost || s.DesiredStatus != "stop" {
			t.Errorf("lost alloc stop = %s/%s", s.DesiredStatus, s.ClientStatus)
		}
	}
	for _, p := range placed {
		if p.NodeID == down || p.PreviousAllocation == "" {
			t.Errorf("replacement on %s prev %q", p.NodeID, p.PreviousAllocation)
		}
	}
	if len(liveAllocs(h, "web")) != 4 {
		t.Fatal("count not restored")
	}
}

func TestServiceNotEnoughCapacityBlocks(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1")) // 3900 MHz usable: 7 allocs of 500
	job := mockJob("web", 10)
	h.State.UpsertJob(job)
	eval := mockEval(job)
	process(t, h, eval)

	if got := len(liveAllocs(h, "web")); got != 7 {
		t.Fatalf("placed %d, want 7", got)
	}
	e := lastEval(t, h)
	m := e.FailedTGAllocs["web"]
	if m == nil {
		t.Fatalf("no FailedTGAllocs: %+v", e)
	}
	if m.DimensionExhausted["cpu"] == 0 || m.NodesExhausted == 0 || m.CoalescedFailures != 2 || m.NodesEvaluated == 0 {
		t.Fatalf("metrics = %+v", m)
	}
	if e.QueuedAllocations["web"] != 3 {
		t.Fatalf("queued = %v", e.QueuedAllocations)
	}
	if len(h.CreateEvals) != 1 {
		t.Fatalf("blocked evals = %d", len(h.CreateEvals))
	}
	b := h.CreateEvals[0]
	if b.Status != "blocked" || b.TriggeredBy != "queued-allocs" || b.PreviousEval != eval.ID || b.JobID != "web" ||
		b.Priority != eval.Priority || b.Type != "service" || b.ID == "" || e.BlockedEval != b.ID {
		t.Fatalf("blocked eval = %+v", b)
	}
	if len(b.ClassEligibility) == 0 || !b.ClassEligibility[h.State.nodes["n1"].ComputedClass] {
		t.Fatalf("class eligibility = %v", b.ClassEligibility)
	}

	// Processing the blocked eval itself while still short re-blocks it.
	process(t, h, b)
	if len(h.ReblockEvals) != 1 || len(h.CreateEvals) != 1 {
		t.Fatalf("reblock=%d create=%d", len(h.ReblockEvals), len(h.CreateEvals))
	}
}

func TestImpossibleConstraintIsNamed(t *testing.T) {
	h := NewHarness()
	for i := 0; i < 3; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("n%d", i)))
	}
	job := mockJob("web", 2)
	job.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "windows", Operand: "="}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))

	m := lastEval(t, h).FailedTGAllocs["web"]
	if m == nil {
		t.Fatal("no failure recorded")
	}
	if m.ConstraintFiltered["${attr.kernel.name} = windows"] != 3 || m.NodesFiltered != 3 || m.NodesExhausted != 0 {
		t.Fatalf("metrics = %+v", m)
	}
	if len(h.CreateEvals) != 1 || h.CreateEvals[0].ClassEligibility[h.State.nodes["n0"].ComputedClass] {
		t.Fatalf("blocked eval must mark the class ineligible: %+v", h.CreateEvals)
	}
	if len(h.Plans) != 0 {
		t.Fatal("nothing placeable, no plan expected")
	}
}

func TestBatchCompleteNotRerun(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	job := mockJob("batch", 2)
	job.Type = structs.JobTypeBatch
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	allocs := liveAllocs(h, "batch")
	if len(allocs) != 2 {
		t.Fatal("setup")
	}
	for _, a := range allocs {
		c := *a
		c.ClientStatus = structs.AllocClientStatusComplete
		h.State.UpsertAllocs(&c)
	}
	plans := len(h.Plans)
	process(t, h, mockEval(job))
	if len(h.Plans) != plans {
		t.Fatalf("completed batch allocs were re-run: %+v", h.Plans[len(h.Plans)-1].NodeAllocation)
	}
	if lastEval(t, h).Status != "complete" {
		t.Fatal("eval not complete")
	}
}

func TestFailedAllocRescheduledWithTracker(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertNode(mockNode("n2"))
	job := mockJob("web", 1)
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour,
		Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	a := liveAllocs(h, "web")[0]
	failed := *a
	failed.ClientStatus = structs.AllocClientStatusFailed
	failed.ModifyTime = testNow.Add(-time.Minute).UnixNano() // failed a minute ago: its 5s delay passed
	h.State.UpsertAllocs(&failed)

	process(t, h, mockEval(job))
	live := liveAllocs(h, "web")
	if len(live) != 1 || live[0].PreviousAllocation != a.ID || live[0].Name != a.Name {
		t.Fatalf("replacement = %+v", live)
	}
	rt := live[0].RescheduleTracker
	if rt == nil || len(rt.Events) != 1 || rt.Events[0].PrevAllocID != a.ID || rt.Events[0].PrevNodeID != a.NodeID ||
		rt.Events[0].Delay != 5*time.Second {
		t.Fatalf("tracker = %+v", rt)
	}
	if h.State.Alloc(a.ID).DesiredStatus != "stop" {
		t.Fatal("failed alloc not stopped")
	}

	// The replacement fails too: the policy (1 attempt per hour) is spent.
	second := *live[0]
	second.ClientStatus = structs.AllocClientStatusFailed
	h.State.UpsertAllocs(&second)
	plans := len(h.Plans)
	process(t, h, mockEval(job))
	if len(h.Plans) != plans {
		t.Fatal("rescheduled beyond the policy")
	}
}

// Two groups of one eval on one node with a tight dynamic range must get
// distinct ports (seed 000 case 3), and the applier must accept the plan.
func TestPortsDistinctAcrossGroupsOnOneNode(t *testing.T) {
	for i := 0; i < 20; i++ {
		h := NewHarness()
		n := mockNode("n1")
		n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 20000, 20005
		h.State.UpsertNode(n)
		job := mockJob(fmt.Sprintf("ports%d", i), 1)
		g := job.TaskGroups[0]
		g.Networks[0].DynamicPorts = []structs.Port{{Label: "a"}, {Label: "b"}}
		g2 := *g
		g2.Name = "other"
		g2.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "c"}, {Label: "d"}, {Label: "e"}}}}
		job.TaskGroups = append(job.TaskGroups, &g2)
		h.State.UpsertJob(job)
		process(t, h, mockEval(job))

		allocs := liveAllocs(h, job.ID)
		if len(allocs) != 2 {
			t.Fatalf("iter %d: placed %d, want 2 (failed: %+v)", i, len(allocs), lastEval(t, h).FailedTGAllocs)
		}
		seen := map[int]bool{}
		for _, a := range allocs {
			for _, p := range a.AllocatedResources.Shared.Ports {
				if seen[p.Value] {
					t.Fatalf("iter %d: port %d used twice", i, p.Value)
				}
				seen[p.Value] = true
			}
		}
		if len(seen) != 5 || len(h.Plans) != 1 || len(h.Results[0].RejectedNodes) != 0 {
			t.Fatalf("iter %d: ports %v plans %d", i, seen, len(h.Plans))
		}
	}
}

func TestPartialCommitRetriesWithRefreshedState(t *testing.T) {
	h := NewHarness()
	for i := 0; i < 4; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("n%d", i)))
	}
	job := mockJob("web", 4)
	h.State.UpsertJob(job)
	// The first plan loses one of its nodes to a "concurrent" plan.
	h.RejectNodes = func(p *structs.Plan) []string {
		if len(h.Plans) > 1 {
			return nil
		}
		for id := range p.NodeAllocation {
			return []string{id}
		}
		return nil
	}
	process(t, h, mockEval(job))
	if len(h.Plans) != 2 {
		t.Fatalf("plans = %d, want 2 (retry after partial commit)", len(h.Plans))
	}
	if got := len(liveAllocs(h, "web")); got != 4 {
		t.Fatalf("live = %d, want 4", got)
	}
	placed, _ := planned(h.Plans[1])
	if len(placed) == 0 || len(placed) >= 4 {
		t.Fatalf("retry placed %d, want only the rejected ones", len(placed))
	}
	e := lastEval(t, h)
	if e.Status != "complete" || e.QueuedAllocations["web"] != 0 {
		t.Fatalf("eval = %+v", e)
	}
}

func TestMaxAttemptsFailsEval(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	job := mockJob("web", 1)
	h.State.UpsertJob(job)
	h.RejectNodes = func(p *structs.Plan) []string { return []string{"n1"} }
	process(t, h, mockEval(job))
	if len(h.Plans) != maxServiceAttempts {
		t.Fatalf("plans = %d, want %d", len(h.Plans), maxServiceAttempts)
	}
	e := lastEval(t, h)
	if e.Status != structs.EvalStatusFailed || len(h.CreateEvals) != 1 || h.CreateEvals[0].TriggeredBy != structs.EvalTriggerMaxPlans {
		t.Fatalf("eval = %+v, created = %+v", e, h.CreateEvals)
	}
}

func TestDatacenterAndPoolFiltering(t *testing.T) {
	h := NewHarness()
	a := mockNode("a")
	b := mockNode("b")
	b.Datacenter = "other"
	c := mockNode("c")
	c.NodePool = "gpu"
	d := mockNode("d")
	d.SchedulingEligibility = structs.NodeSchedulingIneligible
	for _, n := range []*structs.Node{a, b, c, d} {
		h.State.UpsertNode(n)
	}
	job := mockJob("web", 3)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	for _, al := range liveAllocs(h, "web") {
		if al.NodeID != "a" {
			t.Fatalf("placed on %s; only node a is in dc*/default and eligible", al.NodeID)
		}
	}
	job2 := mockJob("gpu", 1)
	job2.NodePool = "gpu"
	h.State.UpsertJob(job2)
	process(t, h, mockEval(job2))
	if l := liveAllocs(h, "gpu"); len(l) != 1 || l[0].NodeID != "c" {
		t.Fatalf("pool placement = %+v", l)
	}
}

func TestDistinctHostsAndSpreadAlgorithm(t *testing.T) {
	h := NewHarness()
	for i := 0; i < 2; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("n%d", i)))
	}
	job := mockJob("web", 3)
	job.TaskGroups[0].Constraints = []*structs.Constraint{{Operand: "distinct_hosts", RTarget: "true"}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	live := liveAllocs(h, "web")
	if len(live) != 2 || live[0].NodeID == live[1].NodeID {
		t.Fatalf("distinct_hosts placed %d allocs: %+v", len(live), live)
	}
	if m := lastEval(t, h).FailedTGAllocs["web"]; m == nil || m.ConstraintFiltered["distinct_hosts"] != 2 {
		t.Fatalf("metrics = %+v", m)
	}

	// The spread algorithm prefers empty nodes: 3 allocs land on 3 nodes.
	h = NewHarness()
	for i := 0; i < 3; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("n%d", i)))
	}
	job = mockJob("spread", 3)
	h.State.UpsertJob(job)
	s, err := NewScheduler("service", Config{Algorithm: "spread", Clock: func() time.Time { return testNow }}, h.State, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Process(mockEval(job)); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, a := range liveAllocs(h, "spread") {
		nodes[a.NodeID] = true
	}
	if len(nodes) != 3 {
		t.Fatalf("spread used %d nodes, want 3", len(nodes))
	}
}
