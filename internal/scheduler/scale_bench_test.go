package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// acceptPlanner takes every plan whole and writes nothing, so a benchmark
// times the scheduling pass alone (reconcile, feasibility, ranking with
// port indexes, plan building) and not the plan applier or Raft.
type acceptPlanner struct {
	placed int
	last   *structs.Evaluation
}

func (p *acceptPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, State, error) {
	for _, as := range plan.NodeAllocation {
		p.placed += len(as)
	}
	return &structs.PlanResult{NodeAllocation: plan.NodeAllocation, NodeUpdate: plan.NodeUpdate,
		NodePreemptions: plan.NodePreemptions, AllocIndex: plan.SnapshotIndex + 1}, nil, nil
}
func (p *acceptPlanner) UpdateEval(e *structs.Evaluation) error  { p.last = e; return nil }
func (p *acceptPlanner) CreateEval(*structs.Evaluation) error    { return nil }
func (p *acceptPlanner) ReblockEval(*structs.Evaluation) error   { return nil }
func (p *acceptPlanner) reset()                                  { p.placed, p.last = 0, nil }
func (p *acceptPlanner) queued(group string) int                 { return p.last.QueuedAllocations[group] }
func (p *acceptPlanner) failed() map[string]*structs.AllocMetric { return p.last.FailedTGAllocs }

// benchCluster returns a snapshot of the server's go-memdb state store
// holding the given number of empty mockNode-shaped nodes and one service
// job of count allocations.
func benchCluster(b *testing.B, nodes, count int, portless bool) (*state.StateSnapshot, *structs.Job) {
	b.Helper()
	st, err := state.NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	idx := uint64(1)
	for n := 0; n < nodes; n++ {
		idx++
		if err := st.UpsertNode(idx, mockNode(fmt.Sprintf("node-%05d", n))); err != nil {
			b.Fatal(err)
		}
	}
	job := mockJob("bench", count)
	if portless {
		job.TaskGroups[0].Networks = nil
	}
	return storeBenchJob(b, st, idx+1, job)
}

// benchPass runs one scheduling pass per iteration over the same snapshot
// (the planner writes nothing, so every pass sees the empty cluster) and
// reports ns per placement.
func benchPass(b *testing.B, nodes, count int) { benchPassJob(b, nodes, count, false) }

// benchPassJob is benchPass; portless drops the group's dynamic port (the
// shape of the bench/schedbench jobs).
func benchPassJob(b *testing.B, nodes, count int, portless bool) {
	snap, job := benchCluster(b, nodes, count, portless)
	p := &acceptPlanner{}
	clock := func() time.Time { return testNow }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.reset()
		s, err := NewScheduler(structs.JobTypeService, Config{Clock: clock}, snap, p)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Process(mockEval(job)); err != nil {
			b.Fatal(err)
		}
		if p.placed != count || p.queued("web") != 0 || len(p.failed()) != 0 {
			b.Fatalf("placed %d of %d, queued %d, failed %v", p.placed, count, p.queued("web"), p.failed())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*count), "ns/placement")
}

// BenchmarkSchedulingPass places a service job of count 100 into an empty
// cluster of 1,000, 5,000 and 10,000 nodes: one Process per iteration.
func BenchmarkSchedulingPass(b *testing.B) {
	for _, nodes := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d/count=100", nodes), func(b *testing.B) { benchPass(b, nodes, 100) })
	}
}

// BenchmarkLargeJob places one service job of count 10,000 over 5,000
// nodes in one pass, with and without a dynamic port per allocation.
func BenchmarkLargeJob(b *testing.B) {
	b.Run("nodes=5000/count=10000", func(b *testing.B) { benchPass(b, 5000, 10000) })
	b.Run("noports/nodes=5000/count=10000", func(b *testing.B) { benchPassJob(b, 5000, 10000, true) })
}

// BenchmarkTinyJob places a service job of count 1 into an empty cluster
// of 5,000 and 10,000 nodes: the per-evaluation overhead (job lookup,
// ready nodes, stack setup, reconcile, one selection, plan and eval
// bookkeeping) that dominates a stream of small jobs. Every iteration reads
// the same snapshot, as consecutive evaluations do between node writes.
func BenchmarkTinyJob(b *testing.B) {
	for _, nodes := range []int{5000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { benchPass(b, nodes, 1) })
		b.Run(fmt.Sprintf("noports/nodes=%d", nodes), func(b *testing.B) { benchPassJob(b, nodes, 1, true) })
	}
}

// BenchmarkFilledCluster places a port-less service job of count 1,000 into
// 5,000 nodes that already run 40,000 allocations of 40 other jobs (eight
// per node, none with ports): the steady fill of bench/schedbench, where
// every candidate node has allocations to account for.
func BenchmarkFilledCluster(b *testing.B) {
	b.Run("noports/nodes=5000/allocs=40000/count=1000", func(b *testing.B) {
		snap, job := filledCluster(b, 5000, 40, 1000, 1000)
		p := &acceptPlanner{}
		clock := func() time.Time { return testNow }
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p.reset()
			s, err := NewScheduler(structs.JobTypeService, Config{Clock: clock}, snap, p)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Process(mockEval(job)); err != nil {
				b.Fatal(err)
			}
			if p.placed != 1000 || len(p.failed()) != 0 {
				b.Fatalf("placed %d of 1000, failed %v", p.placed, p.failed())
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/placement")
	})
}

// filledCluster is benchCluster with jobs other port-less jobs of perJob
// small allocations spread round-robin over the nodes, and a port-less
// job of count to place.
func filledCluster(b *testing.B, nodes, jobs, perJob, count int) (*state.StateSnapshot, *structs.Job) {
	b.Helper()
	st, err := state.NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	idx := uint64(1)
	var nodeIDs []string
	for n := 0; n < nodes; n++ {
		idx++
		node := mockNode(fmt.Sprintf("node-%05d", n))
		nodeIDs = append(nodeIDs, node.ID)
		if err := st.UpsertNode(idx, node); err != nil {
			b.Fatal(err)
		}
	}
	k := 0
	for j := 0; j < jobs; j++ {
		other := mockJob(fmt.Sprintf("other-%02d", j), perJob)
		other.TaskGroups[0].Networks = nil
		idx++
		if err := st.UpsertJob(idx, nil, other); err != nil {
			b.Fatal(err)
		}
		allocs := make([]*structs.Allocation, 0, perJob)
		for i := 0; i < perJob; i++ {
			allocs = append(allocs, &structs.Allocation{
				ID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", k), Namespace: "default",
				EvalID: "e", Name: fmt.Sprintf("%s.web[%d]", other.ID, i), NodeID: nodeIDs[k%nodes],
				JobID: other.ID, Job: other, TaskGroup: "web",
				DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
				AllocatedResources: &structs.AllocatedResources{
					Tasks: map[string]*structs.AllocatedTaskResources{"server": {
						Cpu:    structs.AllocatedCpuResources{CpuShares: 100},
						Memory: structs.AllocatedMemoryResources{MemoryMB: 64}}},
					Shared: structs.AllocatedSharedResources{DiskMB: 150}},
			})
			k++
		}
		idx++
		if err := st.UpsertAllocs(idx, allocs); err != nil {
			b.Fatal(err)
		}
	}
	job := mockJob("bench", count)
	job.TaskGroups[0].Networks = nil
	return storeBenchJob(b, st, idx+1, job)
}

// TestBenchPassSmall runs the benchmark body at a tiny scale so that
// `go test` proves it still works (it fails when a pass stops placing
// everything).
func TestBenchPassSmall(t *testing.T) {
	r := testing.Benchmark(func(b *testing.B) { benchPass(b, 50, 20) })
	if r.N == 0 {
		t.Fatal("benchPass failed at 50 nodes / count 20")
	}
	if r.Extra["ns/placement"] <= 0 {
		t.Fatalf("no ns/placement reported: %v", r.Extra)
	}
}

// storeBenchJob stores job at index and returns a snapshot with the job as
// stored in it.
func storeBenchJob(b *testing.B, st *state.StateStore, index uint64, job *structs.Job) (*state.StateSnapshot, *structs.Job) {
	if err := st.UpsertJob(index, nil, job); err != nil {
		b.Fatal(err)
	}
	snap, err := st.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	if job, err = snap.JobByID(nil, "default", job.ID); err != nil || job == nil {
		b.Fatalf("job not stored: %v", err)
	}
	return snap, job
}
