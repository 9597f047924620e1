package sim

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/structs"
)

// The simulator's lean view of an Alloc.GetAllocs answer must decode what
// the server sends: a renamed field would silently read as empty.
func TestAllocsAnswerDecodesServerAnswer(t *testing.T) {
	job := &structs.Job{ID: "j", Namespace: "default", Type: structs.JobTypeBatch, JobModifyIndex: 7,
		TaskGroups: []*structs.TaskGroup{
			{Name: "other", Tasks: []*structs.Task{{Name: "x"}}},
			{Name: "g", Tasks: []*structs.Task{{Name: "t1", Driver: "raw_exec", Config: map[string]any{"command": "sleep"}}, {Name: "t2"}}},
		}}
	sent := &structs.AllocsGetResponse{Allocs: []*structs.Allocation{{
		ID: "a1", Namespace: "default", JobID: "j", TaskGroup: "g", Job: job, NodeID: "n",
		DesiredStatus: structs.AllocDesiredStatusStop, ClientStatus: structs.AllocClientStatusRunning, AllocModifyIndex: 42,
	}}, QueryMeta: structs.QueryMeta{Index: 43}}
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(sent); err != nil {
		t.Fatal(err)
	}
	var got allocsAnswer
	if err := codec.NewDecoder(&buf, structs.MsgpackHandle).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Index != 43 || len(got.Allocs) != 1 {
		t.Fatalf("answer = %+v", got)
	}
	a := got.Allocs[0]
	if a.ID != "a1" || a.JobID != "j" || a.TaskGroup != "g" || a.AllocModifyIndex != 42 ||
		a.ClientStatus != structs.AllocClientStatusRunning || !a.serverTerminal() || !a.terminal() {
		t.Fatalf("alloc = %+v", a)
	}
	if a.Job == nil || a.Job.Type != structs.JobTypeBatch {
		t.Fatalf("job = %+v", a.Job)
	}
	s := &Sim{}
	if names := s.taskNames(a); len(names) != 2 || names[0] != "t1" || names[1] != "t2" {
		t.Fatalf("task names = %v", names)
	}
}

// The lean view of a pull's answer must decode the server's map and its
// changed allocations.
func TestPullAnswerDecodesServerAnswer(t *testing.T) {
	job := &structs.Job{ID: "j", Namespace: "default", Type: structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Tasks: []*structs.Task{{Name: "t1"}}}}}
	sent := &structs.NodeClientAllocsResponse{Allocs: map[string]uint64{"a1": 42, "a0": 3},
		Changed: []*structs.Allocation{{ID: "a1", JobID: "j", TaskGroup: "g", Job: job, AllocModifyIndex: 42,
			DesiredStatus: structs.AllocDesiredStatusRun, Metrics: &structs.AllocMetric{NodesEvaluated: 9}}},
		QueryMeta: structs.QueryMeta{Index: 42}}
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(sent); err != nil {
		t.Fatal(err)
	}
	var got pullAnswer
	if err := codec.NewDecoder(&buf, structs.MsgpackHandle).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Index != 42 || len(got.Allocs) != 2 || got.Allocs["a1"] != 42 || len(got.Changed) != 1 {
		t.Fatalf("answer = %+v", got)
	}
	if a := got.Changed[0]; a.ID != "a1" || a.AllocModifyIndex != 42 || a.terminal() || a.Job == nil || a.Job.TaskGroups[0].Tasks[0].Name != "t1" {
		t.Fatalf("changed = %+v", a)
	}
}
