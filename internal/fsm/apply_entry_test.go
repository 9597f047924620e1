package fsm

import (
	"context"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// workerSink plays the leader's broker and worker: on the first eval it
// hears of, it takes the snapshot a worker would schedule from
// (SnapshotMinIndex at the eval's index) in another goroutine, and returns
// once that goroutine either has its snapshot or waits for the entry.
type workerSink struct {
	recordingSink
	t     *testing.T
	f     *FSM
	snaps chan *state.StateSnapshot
	fired bool
}

func (w *workerSink) EvalsUpserted(evals []*structs.Evaluation) {
	w.recordingSink.EvalsUpserted(evals)
	if w.fired {
		return
	}
	w.fired = true
	st := w.f.State()
	index := evals[0].ModifyIndex
	go func() {
		snap, err := st.SnapshotMinIndex(context.Background(), index)
		if err != nil {
			w.t.Error(err)
		}
		w.snaps <- snap
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(w.snaps) == 0 && st.EntryWaiters() == 0 {
		if time.Now().After(deadline) {
			w.t.Error("the worker neither got a snapshot nor waited for the entry")
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Two registrations of one job in one Raft entry share a JobModifyIndex.
// The first one's evaluation reaches the broker while the entry is being
// applied; the snapshot its worker schedules from must hold the second
// version, or the worker places allocations of v1 under the index v2
// carries, and they keep running as if they were v2.
func TestJobRegisterBatch_WorkerSeesWholeEntry(t *testing.T) {
	sink := &workerSink{t: t, snaps: make(chan *state.StateSnapshot, 1)}
	f := newFSM(t, sink)
	sink.f = f
	v1, v2 := testJob("web"), testJob("web")
	v2.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "sleep", "args": []any{"20"}}
	resp := f.Apply(entry(t, 7, structs.JobRegisterBatchRequestType, &structs.JobRegisterBatchRequest{Jobs: []*structs.JobRegisterRequest{
		{Job: v1, Eval: testEval("e1", "web", structs.EvalStatusPending)},
		{Job: v2, Eval: testEval("e2", "web", structs.EvalStatusPending)},
	}}))
	if res, ok := resp.(*JobRegisterBatchResult); !ok || res.Errors[0] != nil || res.Errors[1] != nil {
		t.Fatalf("apply: %#v", resp)
	}
	var snap *state.StateSnapshot
	select {
	case snap = <-sink.snaps:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker never got a snapshot")
	}
	job, err := snap.JobByID(nil, "default", "web")
	if err != nil || job == nil {
		t.Fatalf("job: %v %v", job, err)
	}
	stored, _ := f.State().JobByID(nil, "default", "web")
	if job.Version != stored.Version || job.JobModifyIndex != 7 {
		t.Fatalf("the first eval's worker schedules version %d (JobModifyIndex %d); the entry stored version %d: "+
			"its allocations would pass for the newer version", job.Version, job.JobModifyIndex, stored.Version)
	}
	if e, _ := snap.EvalByID(nil, "e2"); e == nil {
		t.Fatal("the worker's snapshot holds half the entry (no second eval)")
	}
}
