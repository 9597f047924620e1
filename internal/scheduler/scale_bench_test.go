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
	idx++
	if err := st.UpsertJob(idx, nil, job); err != nil {
		b.Fatal(err)
	}
	snap, err := st.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	if job, err = snap.JobByID(nil, "default", "bench"); err != nil || job == nil {
		b.Fatalf("job not stored: %v", err)
	}
	return snap, job
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
