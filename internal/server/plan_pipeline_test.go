package server

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/server/planqueue"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// pipelineHarness runs a planApplier against a real state store. Submitted
// entries are held "in Raft" until the test releases them; a released entry
// is applied to the store (as the FSM would) or fails.
type pipelineHarness struct {
	t         *testing.T
	st        *state.StateStore
	queue     *planqueue.PlanQueue
	committed atomic.Uint64
	submitted chan *heldEntry
	node      *structs.Node
	job       *structs.Job
	index     uint64
	stop      chan struct{}
	stopped   chan struct{}
	takeEvals func() *evalBatch // optional: eval updates riding with plans
}

type heldEntry struct {
	reqs    []*structs.ApplyPlanResultsRequest
	evals   []*structs.Evaluation
	release chan error // nil: apply it; an error: fail it
	h       *pipelineHarness
}

func (e *heldEntry) Wait() (uint64, error) {
	if err := <-e.release; err != nil {
		return 0, err
	}
	e.h.index++
	idx := e.h.index
	if len(e.evals) > 0 {
		if err := e.h.st.UpsertEvals(idx, e.evals); err != nil {
			return 0, err
		}
	}
	if err := e.h.st.UpsertPlanResultsBatch(idx, e.reqs); err != nil {
		return 0, err
	}
	return idx, nil
}

func newPipelineHarness(t *testing.T) *pipelineHarness {
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	h := &pipelineHarness{t: t, st: st, queue: planqueue.New(), submitted: make(chan *heldEntry, 16),
		index: 100, stop: make(chan struct{}), stopped: make(chan struct{})}
	h.node = &structs.Node{ID: "node-1", Name: "n1", Datacenter: "dc1", Status: structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000},
			Memory: structs.NodeMemoryResources{MemoryMB: 1000}, Disk: structs.NodeDiskResources{DiskMB: 10000}}}
	if err := st.UpsertNode(10, h.node); err != nil {
		t.Fatal(err)
	}
	h.job = testJob("web", 1)
	h.job.Namespace = structs.DefaultNamespace
	if err := st.UpsertJob(11, nil, h.job); err != nil {
		t.Fatal(err)
	}
	h.queue.SetEnabled(true)
	return h
}

func (h *pipelineHarness) start() {
	a := &planApplier{queue: h.queue, store: func() *state.StateStore { return h.st }, committed: &h.committed,
		takeEvals: h.takeEvals,
		logger:    hclog.NewNullLogger(), submit: func(reqs []*structs.ApplyPlanResultsRequest, evals []*structs.Evaluation) planCommit {
			e := &heldEntry{reqs: reqs, evals: evals, release: make(chan error, 1), h: h}
			h.submitted <- e
			return e
		}}
	go func() {
		defer close(h.stopped)
		a.run(h.stop)
	}()
	h.t.Cleanup(func() {
		close(h.stop)
		h.queue.SetEnabled(false)
		for {
			select {
			case <-h.stopped:
				return
			case e := <-h.submitted: // a failing test left it held
				e.release <- errors.New("test over")
			}
		}
	})
}

// alloc is an allocation of cpu MHz on the harness node.
func (h *pipelineHarness) alloc(id string, cpu int64) *structs.Allocation {
	return &structs.Allocation{ID: id, Namespace: structs.DefaultNamespace, NodeID: h.node.ID, JobID: h.job.ID,
		Job: h.job, TaskGroup: "web", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: 10}}}}}
}

func (h *pipelineHarness) placePlan(a *structs.Allocation) *structs.Plan {
	return &structs.Plan{EvalID: "eval-" + a.ID, Job: h.job, Priority: 50,
		NodeAllocation: map[string][]*structs.Allocation{h.node.ID: {a}}}
}

func (h *pipelineHarness) enqueue(p *structs.Plan) planqueue.PendingPlan {
	pending, err := h.queue.Enqueue(p)
	if err != nil {
		h.t.Fatal(err)
	}
	return pending
}

func (h *pipelineHarness) nextEntry() *heldEntry {
	select {
	case e := <-h.submitted:
		return e
	case <-time.After(10 * time.Second):
		h.t.Fatal("no plan entry was submitted")
		return nil
	}
}

// noEntry asserts nothing more was submitted once every plan is answered.
func (h *pipelineHarness) noEntry() {
	select {
	case e := <-h.submitted:
		h.t.Fatalf("unexpected entry with %d plans submitted", len(e.reqs))
	default:
	}
}

func (h *pipelineHarness) liveCPU() int64 {
	allocs, err := h.st.AllocsByNodeTerminal(nil, h.node.ID, false)
	if err != nil {
		h.t.Fatal(err)
	}
	var cpu int64
	for _, a := range allocs {
		cpu += a.AllocatedResources.Comparable().CPU
	}
	return cpu
}

func waitResult(t *testing.T, p planqueue.PendingPlan) (*structs.PlanResult, error) {
	t.Helper()
	type out struct {
		r   *structs.PlanResult
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := p.Wait()
		ch <- out{r, err}
	}()
	select {
	case o := <-ch:
		return o.r, o.err
	case <-time.After(10 * time.Second):
		t.Fatal("plan was never answered")
		return nil, nil
	}
}

// Plan B is verified while plan A (each fits the node alone, not both) is
// still in Raft's queue: B must be rejected, and told to refresh to an index
// that includes A.
func TestPlanPipeline_InFlightPlansThatOnlyFitAloneNeverBothCommit(t *testing.T) {
	h := newPipelineHarness(t)
	h.start()
	pa := h.enqueue(h.placePlan(h.alloc("a", 600)))
	entryA := h.nextEntry() // A is in flight, not applied
	pb := h.enqueue(h.placePlan(h.alloc("b", 600)))

	// The applier verifies B at once, against a state without A (A is
	// still held), and answers it only once A is through.
	entryA.release <- nil
	ra, err := waitResult(t, pa)
	if err != nil {
		t.Fatal(err)
	}
	rb, errB := waitResult(t, pb)
	if errB != nil {
		t.Fatal(errB)
	}
	if len(ra.NodeAllocation[h.node.ID]) != 1 {
		t.Fatalf("plan A should commit whole: %+v", ra)
	}
	if len(rb.NodeAllocation) != 0 || len(rb.RejectedNodes) != 1 {
		t.Fatalf("plan B must be rejected on the node plan A fills: %+v", rb)
	}
	if rb.RefreshIndex < ra.AllocIndex {
		t.Fatalf("B's refresh index %d does not include A's commit %d", rb.RefreshIndex, ra.AllocIndex)
	}
	h.noEntry()
	if cpu := h.liveCPU(); cpu != 600 {
		t.Fatalf("node holds %d MHz of allocations, want 600 (overcommitted?)", cpu)
	}
}

// Plan A stops an allocation; plan B, verified while A is in flight, uses the
// room A frees. A fails: B must not commit on that assumption.
func TestPlanPipeline_FailedPlanAheadVoidsPlansVerifiedOnIt(t *testing.T) {
	h := newPipelineHarness(t)
	x := h.alloc("x", 600)
	if err := h.st.UpsertAllocs(12, []*structs.Allocation{x}); err != nil {
		t.Fatal(err)
	}
	h.start()
	stop := &structs.Plan{EvalID: "eval-stop", Job: h.job, Priority: 50,
		NodeUpdate: map[string][]*structs.Allocation{h.node.ID: {{ID: "x", NodeID: h.node.ID,
			DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: "stopped"}}}}
	pa := h.enqueue(stop)
	entryA := h.nextEntry()
	pb := h.enqueue(h.placePlan(h.alloc("b", 600)))
	// A stays the batch in flight until B is dequeued, so B is verified on
	// top of A's stop whether A fails before or after that.
	entryA.release <- errors.New("raft: leadership lost")
	if _, err := waitResult(t, pa); err == nil {
		t.Fatal("plan A must report its failure")
	}
	rb, errB := waitResult(t, pb)
	if errB != nil {
		t.Fatal(errB)
	}
	if len(rb.NodeAllocation) != 0 || len(rb.RejectedNodes) != 1 {
		t.Fatalf("plan B fits only if A's stop commits; A failed, so B must be rejected: %+v", rb)
	}
	h.noEntry()
	if cpu := h.liveCPU(); cpu != 600 {
		t.Fatalf("node holds %d MHz, want 600 (x only)", cpu)
	}
}

// Plans queued together go in one entry, each verified on top of the ones
// before it: the second of two that do not fit together is rejected, the
// third (small) is accepted beside the first.
func TestPlanPipeline_BatchVerifiesPlansOnTopOfEachOther(t *testing.T) {
	h := newPipelineHarness(t)
	pa := h.enqueue(h.placePlan(h.alloc("a", 600)))
	pb := h.enqueue(h.placePlan(h.alloc("b", 600)))
	pc := h.enqueue(h.placePlan(h.alloc("c", 300)))
	h.start()
	e := h.nextEntry()
	if len(e.reqs) != 2 {
		t.Fatalf("entry carries %d plans, want 2 (a and c)", len(e.reqs))
	}
	e.release <- nil
	ra, err := waitResult(t, pa)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := waitResult(t, pb)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := waitResult(t, pc)
	if err != nil {
		t.Fatal(err)
	}
	if len(ra.NodeAllocation) != 1 || len(rc.NodeAllocation) != 1 || len(rb.NodeAllocation) != 0 {
		t.Fatalf("want a and c placed, b rejected: a=%+v b=%+v c=%+v", ra, rb, rc)
	}
	if ra.AllocIndex != rc.AllocIndex || ra.AllocIndex == 0 || rb.RefreshIndex < ra.AllocIndex {
		t.Fatalf("indexes: a=%d c=%d b.refresh=%d", ra.AllocIndex, rc.AllocIndex, rb.RefreshIndex)
	}
	if got := h.committed.Load(); got != ra.AllocIndex {
		t.Fatalf("last committed plan index %d, want %d", got, ra.AllocIndex)
	}
	if cpu := h.liveCPU(); cpu != 900 {
		t.Fatalf("node holds %d MHz, want 900", cpu)
	}
}

// Evaluation completions waiting in the eval batcher ride in the next plan
// entry: their callers return with that entry's index once it is applied,
// and with its error if it fails.
func TestPlanPipeline_EvalCompletionsRideWithPlans(t *testing.T) {
	h := newPipelineHarness(t)
	shutdown := make(chan struct{})
	defer close(shutdown)
	own := make(chan []*structs.Evaluation, 4)
	b := &evalUpdateBatcher{shutdown: shutdown, kick: make(chan struct{}, 1), linger: time.Hour,
		write: func(evals []*structs.Evaluation) (uint64, error) { own <- evals; return 0, errors.New("not expected") }}
	go b.run()
	h.takeEvals = b.take
	h.start()

	ev := &structs.Evaluation{ID: "done-1", Namespace: structs.DefaultNamespace, JobID: h.job.ID, Type: structs.JobTypeService,
		Status: structs.EvalStatusComplete}
	type res struct {
		idx uint64
		err error
	}
	got := make(chan res, 1)
	go func() {
		idx, err := b.Apply([]*structs.Evaluation{ev})
		got <- res{idx, err}
	}()
	waitFor(t, 5*time.Second, "completion queued", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.pending != nil
	})

	pa := h.enqueue(h.placePlan(h.alloc("a", 100)))
	e := h.nextEntry()
	if len(e.evals) != 1 || e.evals[0].ID != "done-1" || len(e.reqs) != 1 {
		t.Fatalf("entry: %d plans, evals %v; want the plan and the completion", len(e.reqs), e.evals)
	}
	select {
	case r := <-got:
		t.Fatalf("completion returned before its entry was applied: %+v", r)
	default:
	}
	e.release <- nil
	ra, err := waitResult(t, pa)
	if err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.idx != ra.AllocIndex {
		t.Fatalf("completion: index %d err %v, want the plan entry's index %d", r.idx, r.err, ra.AllocIndex)
	}
	if stored, _ := h.st.EvalByID(nil, "done-1"); stored == nil || stored.Status != structs.EvalStatusComplete || stored.ModifyIndex != r.idx {
		t.Fatalf("stored eval: %+v", stored)
	}

	// A failed entry fails the completions riding in it.
	go func() {
		idx, err := b.Apply([]*structs.Evaluation{{ID: "done-2", Namespace: structs.DefaultNamespace, JobID: h.job.ID,
			Type: structs.JobTypeService, Status: structs.EvalStatusComplete}})
		got <- res{idx, err}
	}()
	waitFor(t, 5*time.Second, "second completion queued", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.pending != nil
	})
	pb := h.enqueue(h.placePlan(h.alloc("b", 100)))
	e = h.nextEntry()
	if len(e.evals) != 1 {
		t.Fatalf("second entry carries %d evals", len(e.evals))
	}
	e.release <- errors.New("raft: leadership lost")
	if _, err := waitResult(t, pb); err == nil {
		t.Fatal("plan b must fail")
	}
	if r := <-got; r.err == nil {
		t.Fatal("the completion riding in a failed entry must fail")
	}
	select {
	case evals := <-own:
		t.Fatalf("the batcher wrote %d evals itself", len(evals))
	default:
	}
}
