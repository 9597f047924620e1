package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func mockSystemJob(id, typ string) *structs.Job {
	job := mockJob(id, 1)
	job.Type = typ
	return job
}

// systemCluster is a harness with nodes n1..nN and a system job "sys"
// already scheduled on all of them.
func systemCluster(t *testing.T, nodes int) (*Harness, *structs.Job) {
	t.Helper()
	h := NewHarness()
	for i := 1; i <= nodes; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("n%d", i)))
	}
	job := mockSystemJob("sys", structs.JobTypeSystem)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	if got := len(liveAllocs(h, "sys")); got != nodes {
		t.Fatalf("setup: %d live allocs, want %d", got, nodes)
	}
	return h, job
}

func nodeEval(job *structs.Job, nodeID string) *structs.Evaluation {
	e := mockEval(job)
	e.TriggeredBy = structs.EvalTriggerNodeUpdate
	e.NodeID = nodeID
	return e
}

// liveByNode maps node ID to the job's live allocs there.
func liveByNode(h *Harness, jobID string) map[string][]*structs.Allocation {
	out := make(map[string][]*structs.Allocation)
	for _, a := range liveAllocs(h, jobID) {
		out[a.NodeID] = append(out[a.NodeID], a)
	}
	return out
}

func TestSystemPlacesOnePerNode(t *testing.T) {
	h, _ := systemCluster(t, 3)
	byNode := liveByNode(h, "sys")
	for _, id := range []string{"n1", "n2", "n3"} {
		as := byNode[id]
		if len(as) != 1 {
			t.Fatalf("node %s has %d allocs, want 1", id, len(as))
		}
		a := as[0]
		if a.Name != "sys.web[0]" || a.DesiredStatus != "run" || a.ClientStatus != "pending" {
			t.Fatalf("alloc = %s %s/%s", a.Name, a.DesiredStatus, a.ClientStatus)
		}
		if len(a.AllocatedResources.Shared.Ports) != 1 || a.AllocatedResources.Shared.Ports[0].Value == 0 {
			t.Fatalf("dynamic port not assigned: %+v", a.AllocatedResources.Shared.Ports)
		}
	}
	e := lastEval(t, h)
	if e.Status != "complete" || e.QueuedAllocations["web"] != 0 || len(e.FailedTGAllocs) != 0 {
		t.Fatalf("eval = %s queued=%v failed=%v", e.Status, e.QueuedAllocations, e.FailedTGAllocs)
	}
	if err := h.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestSystemNodeChanges(t *testing.T) {
	cases := []struct {
		name string
		// change mutates the cluster after the job runs on n1..n3; it
		// returns the node the follow-up eval is about ("" = job eval).
		change func(h *Harness, job *structs.Job) string
		// live is the expected number of live allocs per node afterwards.
		live map[string]int
		// lost lists nodes whose alloc must be stopped as lost.
		lost []string
		// placed is the number of placements in the follow-up plan.
		placed int
	}{
		{
			name: "new node gets exactly one",
			change: func(h *Harness, _ *structs.Job) string {
				h.State.UpsertNode(mockNode("n4"))
				return "n4"
			},
			live: map[string]int{"n1": 1, "n2": 1, "n3": 1, "n4": 1}, placed: 1,
		},
		{
			name: "ineligible node keeps its alloc, new ineligible node gets none",
			change: func(h *Harness, _ *structs.Job) string {
				n := mockNode("n1")
				n.SchedulingEligibility = structs.NodeSchedulingIneligible
				h.State.UpsertNode(n)
				n4 := mockNode("n4")
				n4.SchedulingEligibility = structs.NodeSchedulingIneligible
				h.State.UpsertNode(n4)
				return "n1"
			},
			live: map[string]int{"n1": 1, "n2": 1, "n3": 1},
		},
		{
			name: "down node: lost, not replaced elsewhere",
			change: func(h *Harness, _ *structs.Job) string {
				n := mockNode("n2")
				n.Status = structs.NodeStatusDown
				h.State.UpsertNode(n)
				return "n2"
			},
			live: map[string]int{"n1": 1, "n3": 1}, lost: []string{"n2"},
		},
		{
			name: "draining node: alloc kept until the drainer marks it",
			change: func(h *Harness, _ *structs.Job) string {
				n := mockNode("n3")
				n.DrainStrategy = &structs.DrainStrategy{}
				h.State.UpsertNode(n)
				return "n3"
			},
			live: map[string]int{"n1": 1, "n2": 1, "n3": 1},
		},
		{
			name: "job stopped: all stopped",
			change: func(h *Harness, job *structs.Job) string {
				stopped := *job
				stopped.Stop = true
				h.State.UpsertJob(&stopped)
				return ""
			},
			live: map[string]int{},
		},
		{
			name: "job updated: replaced in place on every node",
			change: func(h *Harness, job *structs.Job) string {
				updated := *job
				updated.JobModifyIndex = 0 // new version
				updated.Meta = map[string]string{"v": "2"}
				h.State.UpsertJob(&updated)
				return ""
			},
			live: map[string]int{"n1": 1, "n2": 1, "n3": 1}, placed: 3,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, job := systemCluster(t, 3)
			before := liveByNode(h, "sys")
			plans := len(h.Plans)
			nodeID := tc.change(h, job)
			cur, _ := h.State.JobByID(nil, "default", "sys")
			e := nodeEval(cur, nodeID)
			process(t, h, e)

			after := liveByNode(h, "sys")
			if len(after) != len(tc.live) {
				t.Fatalf("live allocs on %d nodes, want %v", len(after), tc.live)
			}
			for id, n := range tc.live {
				if len(after[id]) != n {
					t.Fatalf("node %s: %d live allocs, want %d", id, len(after[id]), n)
				}
				if tc.placed == 0 && before[id] != nil && after[id][0].ID != before[id][0].ID {
					t.Fatalf("node %s: alloc replaced although nothing changed for it", id)
				}
			}
			for _, id := range tc.lost {
				a := h.State.Alloc(before[id][0].ID)
				if a.ClientStatus != structs.AllocClientStatusLost || a.DesiredStatus != structs.AllocDesiredStatusStop {
					t.Fatalf("alloc on %s: %s/%s, want stop/lost", id, a.DesiredStatus, a.ClientStatus)
				}
			}
			placed := 0
			for _, p := range h.Plans[plans:] {
				as, _ := planned(p)
				placed += len(as)
			}
			if placed != tc.placed {
				t.Fatalf("placed %d, want %d", placed, tc.placed)
			}
			if got := lastEval(t, h); got.Status != "complete" || len(got.FailedTGAllocs) != 0 {
				t.Fatalf("eval = %s failed=%v", got.Status, got.FailedTGAllocs)
			}
			if err := h.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSystemConstraintFilteredIsNotFailure(t *testing.T) {
	h := NewHarness()
	for i := 1; i <= 3; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("n%d", i)))
	}
	win := mockNode("n3")
	win.Attributes["kernel.name"] = "windows"
	win.ComputeClass()
	h.State.UpsertNode(win)
	job := mockSystemJob("sys", structs.JobTypeSystem)
	job.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))

	byNode := liveByNode(h, "sys")
	if len(byNode) != 2 || byNode["n3"] != nil {
		t.Fatalf("allocs on nodes %v, want n1 and n2", byNode)
	}
	e := lastEval(t, h)
	if e.Status != "complete" || len(e.FailedTGAllocs) != 0 || e.QueuedAllocations["web"] != 0 || len(h.CreateEvals) != 0 {
		t.Fatalf("eval = %s failed=%v queued=%v blocked=%d", e.Status, e.FailedTGAllocs, e.QueuedAllocations, len(h.CreateEvals))
	}
}

func TestSystemExhaustedNodeBlocks(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertNode(mockNode("n2"))
	small := mockNode("n3")
	small.NodeResources.Cpu.CpuShares = 300
	h.State.UpsertNode(small)
	job := mockSystemJob("sys", structs.JobTypeSystem)
	h.State.UpsertJob(job)
	eval := mockEval(job)
	process(t, h, eval)

	byNode := liveByNode(h, "sys")
	if len(byNode) != 2 || byNode["n3"] != nil {
		t.Fatalf("allocs on nodes %v, want n1 and n2", byNode)
	}
	e := lastEval(t, h)
	m := e.FailedTGAllocs["web"]
	if m == nil || m.NodesExhausted != 1 || m.DimensionExhausted["cpu"] != 1 || m.NodesFiltered != 0 {
		t.Fatalf("FailedTGAllocs = %+v", e.FailedTGAllocs)
	}
	if e.Status != "complete" || e.QueuedAllocations["web"] != 1 {
		t.Fatalf("eval = %s queued=%v", e.Status, e.QueuedAllocations)
	}
	if len(h.CreateEvals) != 1 {
		t.Fatalf("blocked evals = %d, want 1", len(h.CreateEvals))
	}
	b := h.CreateEvals[0]
	if b.Status != "blocked" || b.NodeID != "n3" || b.Type != "system" || b.PreviousEval != eval.ID || e.BlockedEval != b.ID {
		t.Fatalf("blocked eval = %+v", b)
	}
	// Like the generic scheduler's, it says why it is blocked.
	if len(b.FailedTGAllocs) == 0 {
		t.Fatalf("blocked eval carries no placement failures")
	}

	// Still no room: processing the blocked eval re-blocks it, with the
	// reasons of this pass.
	process(t, h, b)
	if len(h.ReblockEvals) != 1 || len(h.CreateEvals) != 1 {
		t.Fatalf("reblock=%d create=%d", len(h.ReblockEvals), len(h.CreateEvals))
	}
	if len(h.ReblockEvals[0].FailedTGAllocs) == 0 {
		t.Fatalf("re-blocked eval carries no placement failures")
	}
	if err := h.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestSysbatchCompleteNotRerun(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertNode(mockNode("n2"))
	job := mockSystemJob("sb", structs.JobTypeSysBatch)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	live := liveAllocs(h, "sb")
	if len(live) != 2 {
		t.Fatalf("placed %d, want 2", len(live))
	}
	for _, a := range live {
		c := *a
		c.ClientStatus = structs.AllocClientStatusComplete
		if a.NodeID == "n2" {
			c.ClientStatus = structs.AllocClientStatusFailed
		}
		h.State.UpsertAllocs(&c)
	}
	h.State.UpsertNode(mockNode("n3"))
	plans := len(h.Plans)
	process(t, h, nodeEval(job, "n3"))
	if len(h.Plans) != plans+1 {
		t.Fatalf("plans = %d, want one more", len(h.Plans)-plans)
	}
	placed, stopped := planned(h.Plans[len(h.Plans)-1])
	if len(placed) != 1 || placed[0].NodeID != "n3" || len(stopped) != 0 {
		t.Fatalf("placed %d (on %v), stopped %d: finished allocs must not re-run", len(placed), placed, len(stopped))
	}
}

func TestSystemPartialCommitRetries(t *testing.T) {
	h := NewHarness()
	for i := 1; i <= 3; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("n%d", i)))
	}
	job := mockSystemJob("sys", structs.JobTypeSystem)
	h.State.UpsertJob(job)
	first := true
	h.RejectNodes = func(*structs.Plan) []string {
		if first {
			first = false
			return []string{"n2"}
		}
		return nil
	}
	process(t, h, mockEval(job))
	if got := len(liveByNode(h, "sys")); got != 3 {
		t.Fatalf("allocs on %d nodes after retry, want 3", got)
	}
	if e := lastEval(t, h); e.Status != "complete" || e.QueuedAllocations["web"] != 0 {
		t.Fatalf("eval = %s queued=%v", e.Status, e.QueuedAllocations)
	}
}

// System preemption follows the scheduler configuration (on by default,
// as in Nomad): a high-priority system job evicts a low-priority service
// allocation from a full node when it is enabled, and is left unplaced
// when it is not.
func TestSystemPreemptionFollowsConfig(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprint("enabled=", enabled), func(t *testing.T) {
			h := NewHarness()
			h.State.UpsertNode(mockNode("n1")) // 3900 MHz usable
			low := mockJob("low", 1)
			low.Priority = 20
			low.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 3500, MemoryMB: 256}
			h.State.UpsertJob(low)
			process(t, h, mockEval(low))
			if len(liveAllocs(h, "low")) != 1 {
				t.Fatal("setup: low job not placed")
			}

			sys := mockSystemJob("sys", structs.JobTypeSystem)
			sys.Priority = 90
			sys.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 1000, MemoryMB: 256}
			h.State.UpsertJob(sys)
			preempt := DefaultPreemptionEnabled()
			preempt[structs.JobTypeSystem] = enabled
			s, err := NewScheduler(structs.JobTypeSystem, Config{Clock: func() time.Time { return testNow }, PreemptionEnabled: preempt}, h.State, h)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Process(mockEval(sys)); err != nil {
				t.Fatal(err)
			}
			placed := liveAllocs(h, "sys")
			if !enabled {
				if len(placed) != 0 || len(liveAllocs(h, "low")) != 1 {
					t.Fatalf("preemption off: sys placed %d, low live %d", len(placed), len(liveAllocs(h, "low")))
				}
				return
			}
			if len(placed) != 1 || len(placed[0].PreemptedAllocations) != 1 {
				t.Fatalf("sys placed %d (preempted %v), want 1 evicting the low alloc", len(placed), placed)
			}
			if len(liveAllocs(h, "low")) != 0 {
				t.Fatal("low alloc still live after preemption")
			}
		})
	}
}

// A system job with update { max_parallel = 2, stagger = 10s } replaces at
// most 2 nodes' allocations per evaluation and leaves a rolling-update
// evaluation for the rest, stagger later; without max_parallel every node
// is replaced at once (the case above).
func TestSystemRollingUpdate(t *testing.T) {
	h, job := systemCluster(t, 5)
	updated := *job
	updated.JobModifyIndex = 0 // new version
	updated.Meta = map[string]string{"v": "2"}
	two, stagger := 2, 10*time.Second
	updated.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: &two, Stagger: &stagger}
	h.State.UpsertJob(&updated)
	cur, _ := h.State.JobByID(nil, "default", "sys")

	newVersion := func() int {
		n := 0
		for _, a := range liveAllocs(h, "sys") {
			if a.Job.Meta["v"] == "2" {
				n++
			}
		}
		return n
	}
	for pass, want := range []int{2, 4, 5} {
		evals := len(h.CreateEvals)
		e := mockEval(cur)
		if pass > 0 {
			e = h.CreateEvals[len(h.CreateEvals)-1]
		}
		process(t, h, e)
		if got := newVersion(); got != want {
			t.Fatalf("pass %d: %d allocations on the new version, want %d", pass, got, want)
		}
		if len(liveAllocs(h, "sys")) != 5 {
			t.Fatalf("pass %d: %d live allocations, want 5", pass, len(liveAllocs(h, "sys")))
		}
		if want == 5 {
			if len(h.CreateEvals) != evals {
				t.Fatalf("a follow-up after the last batch: %+v", h.CreateEvals[evals:])
			}
			break
		}
		if len(h.CreateEvals) != evals+1 {
			t.Fatalf("pass %d: %d follow-up evals, want 1", pass, len(h.CreateEvals)-evals)
		}
		f := h.CreateEvals[len(h.CreateEvals)-1]
		if f.TriggeredBy != structs.EvalTriggerRollingUpdate || !f.WaitUntil.Equal(testNow.Add(stagger)) || f.Status != structs.EvalStatusPending {
			t.Fatalf("follow-up %s wait %v status %s", f.TriggeredBy, f.WaitUntil, f.Status)
		}
		if q := lastEval(t, h).QueuedAllocations["web"]; q != 0 {
			t.Fatalf("pass %d: %d queued (held allocations are not queued)", pass, q)
		}
		// The evaluation names the one that goes on (Nomad's NextEval):
		// `job run` and `eval status` follow the rollout through it.
		if got := lastEval(t, h).NextEval; got != f.ID {
			t.Fatalf("pass %d: NextEval %q, want the follow-up %q", pass, got, f.ID)
		}
	}
}
