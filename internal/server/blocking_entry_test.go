package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// entrySink queries a job while the FSM applies the first registration of
// an entry, as a client's blocking query may, and hands the answer back.
type entrySink struct {
	leaderSink
	t       *testing.T
	query   func() *structs.SingleJobResponse
	answers chan *structs.SingleJobResponse
	fired   bool
}

func (k *entrySink) EvalsUpserted(evals []*structs.Evaluation) {
	k.leaderSink.EvalsUpserted(evals)
	if k.fired {
		return
	}
	k.fired = true
	go func() { k.answers <- k.query() }()
	st := k.s.State()
	deadline := time.Now().Add(5 * time.Second)
	for len(k.answers) == 0 && st.EntryWaiters() == 0 {
		if time.Now().After(deadline) {
			k.t.Error("the query neither answered nor waited for the entry")
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// A blocking query woken by the first of two writes one Raft entry makes
// at one index answers only once the whole entry is applied. Answering
// the first write under the entry's index would leave the client's next
// query (?index=N) asleep through the second one.
func TestBlockingQueryAnswersWholeEntry(t *testing.T) {
	s := testServer(t, nil)
	before := s.State()
	start, _ := before.LatestIndex()
	sink := &entrySink{leaderSink: leaderSink{s: s}, t: t, answers: make(chan *structs.SingleJobResponse, 1)}
	sink.query = func() *structs.SingleJobResponse {
		var r structs.SingleJobResponse
		req := &structs.JobSpecificRequest{JobID: "web",
			QueryOptions: structs.QueryOptions{MinQueryIndex: start, MaxQueryTime: 10 * time.Second}}
		if err := s.RPC("Job.GetJob", req, &r); err != nil {
			t.Error(err)
		}
		return &r
	}
	s.fsm.SetSink(sink)
	defer s.fsm.SetSink(&leaderSink{s: s})

	v1, v2 := testJob("web", 1), testJob("web", 1)
	v2.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"700"}}
	for _, j := range []*structs.Job{v1, v2} {
		j.Namespace, j.Priority = structs.DefaultNamespace, 50
	}
	eval := func(id string) *structs.Evaluation {
		return &structs.Evaluation{ID: id, Namespace: structs.DefaultNamespace, JobID: "web", Type: structs.JobTypeService,
			Priority: 50, TriggeredBy: structs.EvalTriggerJobRegister, Status: structs.EvalStatusPending}
	}
	_, index, err := s.raftApply(structs.JobRegisterBatchRequestType, &structs.JobRegisterBatchRequest{Jobs: []*structs.JobRegisterRequest{
		{Job: v1, Eval: eval("00000000-0000-0000-0000-000000000001")},
		{Job: v2, Eval: eval("00000000-0000-0000-0000-000000000002")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var r *structs.SingleJobResponse
	select {
	case r = <-sink.answers:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking query never answered")
	}
	if r.Job == nil || r.Job.Version != 1 || r.Index != index {
		var v any = "no job"
		if r.Job != nil {
			v = r.Job.Version
		}
		t.Fatalf("woken by the entry at %d, the query answered version %v at index %d; want version 1 at %d", index, v, r.Index, index)
	}
}
